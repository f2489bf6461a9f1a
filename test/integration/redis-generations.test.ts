import { randomUUID } from "node:crypto";
import Redis from "ioredis";
import { generationKey, NEXT_GENERATION } from "../../lib/cache/cache";

// The generations of a cluster live in Redis (docs/caching.md): the Redis of REDIS_URL, this
// machine's by default (see support/env.ts).

let redis: Redis;
const key = generationKey(`test-${randomUUID()}`, "authors");
const next = (seen: number) => redis.eval(NEXT_GENERATION, 1, key, seen).then(Number);

beforeAll(() => {
	redis = new Redis(process.env.CATALOGUE_TEST_REDIS!, { lazyConnect: true, maxRetriesPerRequest: 1 });
	return redis.connect();
});
afterAll(async () => {
	await redis.del(key);
	await redis.quit();
});

test("each write gets the next generation, shared by every writer", async () => {
	expect(await next(0)).toBe(1);
	expect(await next(0)).toBe(2);
	expect(await next(2)).toBe(3);
});

test("a counter Redis lost (restarted empty) goes on past the highest generation a writer has seen", async () => {
	await redis.del(key);
	expect(await next(41)).toBe(42);
	expect(await next(42)).toBe(43);
	expect(await redis.get(key)).toBe("43");
});
