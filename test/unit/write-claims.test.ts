import { Errors, ServiceBroker, type Context } from "moleculer";
import { claim, givenUpAt, release, unclaimed, type Claim, type ClaimOptions, type ClaimStore } from "../../lib/integrity/write-claims";
import { SqliteAdapter } from "../../lib/storage/sqlite-adapter";
import { stillPending } from "../support/catalogue";

// Claims against the store the services use: SQLite, in memory here.

const deleting: ClaimOptions = { field: "deleting", leaseMs: 60_000 };
let adapter: SqliteAdapter;
let store: ClaimStore;

/** The record as stored, claim fields included. */
const stored = (id: string) => adapter.findById(id) as Promise<{ deleting?: Claim & { author?: string } } | undefined>;

beforeEach(async () => {
	adapter = new SqliteAdapter({
		dataDir: null,
		holding: "alone",
		collection: "authors",
		indexes: [],
		sparseIndexes: ["deleting.token"],
		orders: [],
	});
	adapter.init(new ServiceBroker({ logger: false }), {} as never);
	await adapter.connect();
	store = {
		findById: stored,
		updateMany: (query, update) => adapter.updateMany(query, update),
		updateOne: (query, update) => adapter.updateOne(query, update),
	};
	await adapter.insert({ _id: "a1", name: "Knizia" });
});

describe("claim", () => {
	test("takes a free record and answers it as it was", async () => {
		expect(await claim(store, "a1", "t1", deleting)).toEqual({ _id: "a1", name: "Knizia" });
		expect(await adapter.findById("a1")).toEqual({ _id: "a1", name: "Knizia", deleting: { token: "t1", at: expect.any(Number) } });
	});

	test("claims a free record in one write, without reading it first", async () => {
		const reads = jest.spyOn(store, "findById");
		expect(await claim(store, "a1", "t1", deleting)).toEqual({ _id: "a1", name: "Knizia" });
		expect(reads).not.toHaveBeenCalled();
		// A record claimed already is read: to wait for its claim, or to find it gone.
		const second = claim(store, "a1", "t2", deleting);
		expect(await stillPending(second)).toBe(true);
		expect(reads).toHaveBeenCalledWith("a1");
		await release(store, "a1", "t1", deleting);
		await second;
	});

	test("stores the details given beside the token", async () => {
		await claim(store, "a1", "t1", deleting, { author: "a2" });
		expect((await stored("a1"))?.deleting).toEqual({ author: "a2", token: "t1", at: expect.any(Number) });
	});

	test("answers nothing for a record that does not exist", async () => {
		expect(await claim(store, "nope", "t1", deleting)).toBeUndefined();
	});

	test("a second claim waits for the first to be released, then takes the record", async () => {
		await claim(store, "a1", "t1", deleting);
		const second = claim(store, "a1", "t2", deleting);
		expect(await stillPending(second)).toBe(true);
		await release(store, "a1", "t1", deleting);
		expect(await second).toMatchObject({ _id: "a1" });
		expect((await stored("a1"))?.deleting?.token).toBe("t2");
	});

	test("a claim waiting on a record that is then removed answers nothing", async () => {
		await claim(store, "a1", "t1", deleting);
		const second = claim(store, "a1", "t2", deleting);
		await adapter.removeById("a1");
		expect(await second).toBeUndefined();
	});
});

describe("unclaimed", () => {
	test("answers a record nobody claims at once", async () => {
		expect(await unclaimed(store, "a1", deleting)).toEqual({ _id: "a1", name: "Knizia" });
	});

	test("waits while a live claim is held and answers the record once it is released", async () => {
		await claim(store, "a1", "t1", deleting);
		const waiting = unclaimed(store, "a1", deleting);
		expect(await stillPending(waiting)).toBe(true);
		await release(store, "a1", "t1", deleting);
		expect(await waiting).toEqual({ _id: "a1", name: "Knizia" });
	});

	test("answers nothing once a claimed record is removed by its holder", async () => {
		await claim(store, "a1", "t1", deleting);
		const waiting = unclaimed(store, "a1", deleting);
		await adapter.removeMany({ _id: "a1", "deleting.token": "t1" });
		expect(await waiting).toBeUndefined();
	});

	test("breaks an abandoned claim (older than the lease), so its holder can no longer complete", async () => {
		await adapter.updateMany({ _id: "a1" }, { $set: { deleting: { token: "dead", at: Date.now() - deleting.leaseMs - 1 } } });
		expect(await unclaimed(store, "a1", deleting)).toEqual({ _id: "a1", name: "Knizia" });
		expect(await adapter.removeMany({ _id: "a1", "deleting.token": "dead" })).toBe(0);
	});
});

describe("a wait whose request was given up", () => {
	test("ends at the caller's deadline with a timeout, and looks at the record no more, though the claim is live", async () => {
		await claim(store, "a1", "holder", deleting);
		let looks = 0;
		const counting: ClaimStore = { ...store, findById: id => (looks++, store.findById(id)) };
		const broker = new ServiceBroker({ logger: false });
		broker.createService({
			name: "authors",
			actions: { referable: ctx => unclaimed(counting, "a1", { ...deleting, until: givenUpAt(ctx) }) },
		});
		await broker.start();
		try {
			const started = Date.now();
			await expect(broker.call("authors.referable", {}, { timeout: 300 })).rejects.toBeInstanceOf(Errors.RequestTimeoutError);
			await new Promise(resolve => setTimeout(resolve, 150));
			const after = looks;
			await new Promise(resolve => setTimeout(resolve, 300));
			expect(looks).toBe(after);
			expect(Date.now() - started).toBeLessThan(deleting.leaseMs);
		} finally {
			await broker.stop();
		}
	});

	test("a call without a timeout waits for the claim as before", () => {
		expect(givenUpAt({ options: {}, startHrTime: null } as unknown as Context)).toBeUndefined();
	});
});

describe("release", () => {
	test("leaves a claim that another token holds", async () => {
		await claim(store, "a1", "t1", deleting);
		await release(store, "a1", "other", deleting);
		expect((await stored("a1"))?.deleting?.token).toBe("t1");
	});
});
