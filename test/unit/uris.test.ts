import { hideCredentials } from "../../lib/uris";

describe("hideCredentials", () => {
	test("replaces the password of a URI, keeping the user, host and path", () => {
		expect(hideCredentials("mongodb://catalogue:s3cret@mongo:27017/catalogue")).toBe("mongodb://catalogue:***@mongo:27017/catalogue");
		expect(hideCredentials("nats://user:pw@127.0.0.1:4222")).toBe("nats://user:***@127.0.0.1:4222");
	});

	test("a URI without a password is unchanged", () => {
		expect(hideCredentials("nats://127.0.0.1:4222")).toBe("nats://127.0.0.1:4222");
	});

	test("text that is not a URI is kept as it is", () => {
		expect(hideCredentials("not a uri")).toBe("not a uri");
	});
});
