import Redis from "ioredis";
import { startCatalogue, type Catalogue } from "../support/catalogue";
import { startNode } from "../support/process";
import { startRedis, type RedisServer } from "../support/redis";

// A Redis that asks for a password (`requirepass`, as compose runs it): REDIS_URL with the
// password caches, a wrong one stops the node with a clear message and no password shown
// (README, Security).

const PASSWORD = "Redis-pa55/word";
let redis: RedisServer;
let withPassword: string;
let catalogue: Catalogue | undefined;

beforeAll(async () => {
	redis = await startRedis(10_000, ["--requirepass", PASSWORD]);
	withPassword = redis.url.replace("redis://", `redis://:${encodeURIComponent(PASSWORD)}@`);
});
afterAll(async () => {
	await catalogue?.stop();
	await redis?.stop();
});

test("with the password in REDIS_URL the cluster caches its reads in that Redis", async () => {
	process.env.CATALOGUE_TEST_REDIS = withPassword;
	catalogue = await startCatalogue({ topology: "nats" });
	await catalogue.api.author("Uwe Rosenberg", "German");
	expect((await catalogue.api.get("/author")).status).toBe(200);
	const client = new Redis(withPassword);
	try {
		expect((await client.keys(`MOL-${catalogue.namespace}-*`)).length).toBeGreaterThan(0);
	} finally {
		client.disconnect();
	}
	const stranger = new Redis(redis.url, { maxRetriesPerRequest: 0 });
	stranger.on("error", () => undefined);
	try {
		await expect(stranger.keys("*")).rejects.toThrow(/NOAUTH/);
	} finally {
		stranger.disconnect();
	}
}, 30_000);

test("a wrong password: the node exits with 1, saying it cannot read the cache generations, the password nowhere", async () => {
	const wrong = redis.url.replace("redis://", "redis://:not-the-Pa55@");
	const node = startNode({ SERVICES: "games", STORAGE: "memory", REDIS_URL: wrong, LOGLEVEL: "debug" });
	const code = await node.exited;
	expect(code).toBe(1);
	expect(node.output()).toContain("games cannot start without the cache generations in the Redis of REDIS_URL");
	expect(node.output()).toMatch(/WRONGPASS|NOAUTH|invalid (username-)?password/i);
	expect(node.output()).not.toContain("not-the-Pa55");
}, 40_000);
