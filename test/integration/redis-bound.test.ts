import { readFileSync } from "node:fs";
import path from "node:path";
import Redis from "ioredis";
import { ServiceBroker } from "moleculer";
import { parse } from "yaml";
import { cacherOptions } from "../../lib/cache/cache";
import { generationsKey } from "../../lib/cache/keys";
import type { RedisAnswers } from "../../lib/cache/redis-cacher";
import { startRedis, type RedisServer } from "../support/redis";

// The Redis of docker-compose.yml, started with the options its command gives: bounded in bytes,
// it evicts cached answers (they expire) and never the generations (docs/caching.md).

const compose = parse(readFileSync(path.resolve(__dirname, "../../docker-compose.yml"), "utf8")) as {
	services: { redis: { command: string[] } };
};
/** REDIS_PASSWORD as an operator's .env gives it; compose puts it where the command says. */
const PASSWORD = "r3dis0123456789abcdef";
const [program, ...options] = compose.services.redis.command.map(part => part.replace(/\$\{REDIS_PASSWORD(:\?[^}]*)?\}/, PASSWORD));

let server: RedisServer;
let url: string;
let redis: Redis;
let broker: ServiceBroker;

beforeAll(async () => {
	server = await startRedis(10_000, options);
	url = server.url.replace("redis://", `redis://:${PASSWORD}@`);
	redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
	await redis.connect();
	broker = new ServiceBroker({
		logger: false,
		namespace: "bound",
		cacher: cacherOptions({ mongoUri: null, redisUrl: url, transporter: null, cacheMaxBytes: 0 }),
	});
	await broker.start();
});
afterAll(async () => {
	await broker?.stop();
	await redis?.quit();
	await server?.stop();
});

test("compose runs redis-server with 256 MB at most, the volatile-lru policy and REDIS_PASSWORD", async () => {
	expect(program).toBe("redis-server");
	expect(await redis.config("GET", "requirepass")).toEqual(["requirepass", PASSWORD]);
	expect(await redis.config("GET", "maxmemory")).toEqual(["maxmemory", String(256 * 1024 * 1024)]);
	expect(await redis.config("GET", "maxmemory-policy")).toEqual(["maxmemory-policy", "volatile-lru"]);
});

test("full, it drops the least recently used answers, keeps the generations and takes new answers", async () => {
	// The same policy with a bound small enough to fill quickly.
	await redis.config("SET", "maxmemory", String(4 * 1024 * 1024));
	const cacher = broker.cacher as RedisAnswers;
	await cacher.checkEpoch();
	expect(await cacher.nextGeneration("games")).toBe(true);
	const answer = {
		json: Buffer.from(JSON.stringify(Array.from({ length: 500 }, (_, i) => ({ id: String(i), title: "x".repeat(180) })))),
	};
	const keys: string[] = [];
	for (let i = 0; i < 100; i++) {
		const { key } = (await cacher.lookup(`games.list:${i}`, ["games"], null))!;
		await cacher.keep(`games.list:${i}`, key, answer);
		keys.push(key);
	}

	expect(await redis.hget(generationsKey("bound"), "games")).toBe("1");
	expect((await cacher.lookup("games.list:99", ["games"], null))!.answer).toEqual(answer);
	// Redis's LRU is approximate (it samples keys): most of the oldest answers are gone, not each one.
	const oldest = await Promise.all(keys.slice(0, 20).map(key => redis.exists(key)));
	expect(oldest.filter(Boolean).length).toBeLessThan(5);
	const memory = await redis.info("memory");
	expect(Number(/used_memory:(\d+)/.exec(memory)![1])).toBeLessThanOrEqual(4 * 1024 * 1024);
	expect(await cacher.nextGeneration("games")).toBe(true);
	expect(await redis.hget(generationsKey("bound"), "games")).toBe("2");
});
