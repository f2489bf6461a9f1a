import { HIDDEN, hideCredentials } from "../../lib/uris";

describe("hideCredentials", () => {
	test.each([
		["MongoDB, user and password", "mongodb://catalogue:s3cret@mongo:27017/catalogue", "mongodb://catalogue:***@mongo:27017/catalogue"],
		["MongoDB, a replica set of three hosts", "mongodb://app:pw@m1:27017,m2:27017,m3:27017/catalogue?replicaSet=rs0&w=majority", "mongodb://app:***@m1:27017,m2:27017,m3:27017/catalogue?replicaSet=rs0&w=majority"],
		["MongoDB+SRV", "mongodb+srv://app:pw@cluster0.example.net/catalogue?retryWrites=true", "mongodb+srv://app:***@cluster0.example.net/catalogue?retryWrites=true"],
		["MongoDB, an unescaped @ in the password", "mongodb://app:p@ss@mongo:27017/catalogue", "mongodb://app:***@mongo:27017/catalogue"],
		["MongoDB, an unescaped / in the password", "mongodb://app:pa/ss@mongo/catalogue", "mongodb://app:***@mongo/catalogue"],
		["NATS, user and password", "nats://user:pw@127.0.0.1:4222", "nats://user:***@127.0.0.1:4222"],
		["NATS, a token", "nats://s3cr3t-token@nats:4222", "nats://***@nats:4222"],
		["NATS, a list of servers", "nats://a:pw1@n1:4222,nats://b:pw2@n2:4222,tls://n3:4222", "nats://a:***@n1:4222,nats://b:***@n2:4222,tls://n3:4222"],
		["Redis, a password only", "redis://:s3cret@redis:6379/0", "redis://:***@redis:6379/0"],
		["Redis over TLS, user and password", "rediss://default:s3cret@redis.example.net:6380", "rediss://default:***@redis.example.net:6380"],
		["no credentials", "nats://127.0.0.1:4222", "nats://127.0.0.1:4222"],
	])("%s", (_form, uri, shown) => {
		expect(hideCredentials(uri)).toBe(shown);
		expect(hideCredentials(uri)).not.toMatch(/s3cr|pw\d?@|p@ss|pa\/ss/);
	});

	test.each([["not a uri"], ["s3cret"], ["user:pw@host:4222"], [""]])("fails closed: %j, which has no scheme://, is shown as <hidden>", value => {
		expect(hideCredentials(value)).toBe(HIDDEN);
	});
});
