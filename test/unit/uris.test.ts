import { HIDDEN, hideCredentials, secretsIn, withoutSecrets } from "../../lib/config/uris";

describe("hideCredentials", () => {
	test.each([
		["MongoDB, user and password", "mongodb://catalogue:s3cret@mongo:27017/catalogue", "mongodb://catalogue:***@mongo:27017/catalogue"],
		[
			"MongoDB, a replica set of three hosts",
			"mongodb://app:pw@m1:27017,m2:27017,m3:27017/catalogue?replicaSet=rs0&w=majority",
			"mongodb://app:***@m1:27017,m2:27017,m3:27017/catalogue?replicaSet=rs0&w=majority",
		],
		[
			"MongoDB+SRV",
			"mongodb+srv://app:pw@cluster0.example.net/catalogue?retryWrites=true",
			"mongodb+srv://app:***@cluster0.example.net/catalogue?retryWrites=true",
		],
		["MongoDB, an unescaped @ in the password", "mongodb://app:p@ss@mongo:27017/catalogue", "mongodb://app:***@mongo:27017/catalogue"],
		["MongoDB, an unescaped / in the password", "mongodb://app:pa/ss@mongo/catalogue", "mongodb://app:***@mongo/catalogue"],
		["NATS, user and password", "nats://user:pw@127.0.0.1:4222", "nats://user:***@127.0.0.1:4222"],
		["NATS, a token", "nats://s3cr3t-token@nats:4222", "nats://***@nats:4222"],
		[
			"NATS, a list of servers",
			"nats://a:pw1@n1:4222,nats://b:pw2@n2:4222,tls://n3:4222",
			"nats://a:***@n1:4222,nats://b:***@n2:4222,tls://n3:4222",
		],
		["Redis, a password only", "redis://:s3cret@redis:6379/0", "redis://:***@redis:6379/0"],
		[
			"Redis over TLS, user and password",
			"rediss://default:s3cret@redis.example.net:6380",
			"rediss://default:***@redis.example.net:6380",
		],
		["no credentials", "nats://127.0.0.1:4222", "nats://127.0.0.1:4222"],
	])("%s", (_form, uri, shown) => {
		expect(hideCredentials(uri)).toBe(shown);
		expect(hideCredentials(uri)).not.toMatch(/s3cr|pw\d?@|p@ss|pa\/ss/);
	});

	test.each([["not a uri"], ["s3cret"], ["user:pw@host:4222"], [""]])(
		"fails closed: %j, which has no scheme://, is shown as <hidden>",
		value => {
			expect(hideCredentials(value)).toBe(HIDDEN);
		},
	);
});

describe("withoutSecrets", () => {
	test("hides the credentials of every URI and the value of every option named like a secret, at any depth", () => {
		const options = {
			nodeID: "games-1",
			transporter: {
				type: "NATS",
				options: {
					url: "nats://a:pw@n1:4222,nats://b:pw@n2:4222",
					user: "a",
					pass: "pw",
					token: "t0k",
					tls: { ca: "/ca.pem", key: "-----BEGIN PRIVATE KEY-----" },
				},
			},
			cacher: { type: "Redis", options: { redis: "redis://:pw@redis:6379", ttl: 300 } },
			nested: [{ password: "pw", apiToken: "t0k", nkeySeed: "SUAB", credsFile: "/x.creds" }],
		};
		expect(withoutSecrets(options)).toEqual({
			nodeID: "games-1",
			transporter: {
				type: "NATS",
				options: { url: "nats://a:***@n1:4222,nats://b:***@n2:4222", user: "a", pass: "***", token: "***", tls: "***" },
			},
			cacher: { type: "Redis", options: { redis: "redis://:***@redis:6379", ttl: 300 } },
			nested: [{ password: "***", apiToken: "***", nkeySeed: "***", credsFile: "***" }],
		});
	});
});

test("secretsIn: the passwords and NATS tokens of URIs, as written and decoded; a MongoDB user alone is no secret", () => {
	expect(
		secretsIn(
			"nats://u:p%40ss@n1:4222,nats://t0ken@n2:4222",
			"redis://:r3dis@redis:6379",
			null,
			"mongodb://app@mongo/db?authMechanism=MONGODB-X509",
		),
	).toEqual(["p%40ss", "p@ss", "t0ken", "r3dis"]);
});
