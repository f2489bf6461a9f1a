import { readConfig } from "../../lib/config/config";
import { describeStorage } from "../../lib/storage/location";
import { notRunBanner } from "../support/not-run";
import { testDatabaseName, withDatabase } from "./database";

// The MongoDB project runs the whole HTTP contract against MONGO_URI. Without one it cannot run,
// and a suite that cannot run must not pass unnoticed: it is reported as skipped under a banner,
// and under CI=true it fails unless CATALOGUE_NO_MONGODB gives the reason it may be skipped.
// (The banner shows because this file also has tests that run: Jest prints nothing of a file
// whose every test is skipped.)
const NOT_RUN = "MongoDB contract suite NOT RUN: MONGO_URI is not set";
const excuse = process.env.CATALOGUE_NO_MONGODB;

describe("the MongoDB contract suite", () => {
	if (process.env.MONGO_URI) {
		test("runs against MONGO_URI, in a database of this test file's own", () => {
			expect(process.env.MONGO_URI).toMatch(/\/catalogue_test_[0-9a-f]{12}(\?|$)/);
			expect(describeStorage(readConfig())).toMatch(/^MongoDB at /);
		});
	} else if (process.env.CI === "true" && !excuse) {
		test("runs against MONGO_URI", () => {
			throw new Error(`${NOT_RUN}. Under CI=true give MONGO_URI, or set CATALOGUE_NO_MONGODB to the reason there is none.`);
		});
	} else {
		console.warn(notRunBanner(NOT_RUN, excuse ?? "Set MONGO_URI=mongodb://... to run it (see test/README.md)."));
		test.skip(NOT_RUN, () => undefined);
	}
});

describe("withDatabase: a test file's own database on the MongoDB of MONGO_URI", () => {
	test("replaces the database the URI names, keeping hosts and options", () => {
		expect(withDatabase("mongodb://mongo:27017/catalogue?w=majority", "t1")).toBe("mongodb://mongo:27017/t1?w=majority");
		expect(withDatabase("mongodb://a:1,b:2/catalogue?replicaSet=rs0", "t1")).toBe("mongodb://a:1,b:2/t1?replicaSet=rs0");
	});

	test("adds one when the URI names none", () => {
		expect(withDatabase("mongodb://mongo:27017", "t1")).toBe("mongodb://mongo:27017/t1");
		expect(withDatabase("mongodb://mongo:27017/", "t1")).toBe("mongodb://mongo:27017/t1");
		expect(withDatabase("mongodb+srv://cluster.example.net/?retryWrites=true", "t1")).toBe(
			"mongodb+srv://cluster.example.net/t1?retryWrites=true",
		);
	});

	test("credentials keep authenticating against the database they were created in", () => {
		expect(withDatabase("mongodb://u:p@mongo/catalogue", "t1")).toBe("mongodb://u:p@mongo/t1?authSource=catalogue");
		expect(withDatabase("mongodb://u:p@mongo", "t1")).toBe("mongodb://u:p@mongo/t1?authSource=admin");
		expect(withDatabase("mongodb://u:p@mongo/catalogue?authSource=users", "t1")).toBe("mongodb://u:p@mongo/t1?authSource=users");
	});

	test("a URI that is not MongoDB's is refused", () => {
		expect(() => withDatabase("postgres://db/catalogue", "t1")).toThrow("MONGO_URI must start with mongodb://");
	});

	test("every test file gets a different name MongoDB accepts", () => {
		const names = new Set(Array.from({ length: 100 }, testDatabaseName));
		expect(names.size).toBe(100);
		for (const name of names) expect(name).toMatch(/^catalogue_test_[0-9a-f]{12}$/);
	});
});
