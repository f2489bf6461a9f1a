import { cacherOptions, generationStamp, MEMORY_CACHE_ANSWERS } from "../../lib/cache";

describe("cacherOptions", () => {
	test("one process without REDIS_URL: memory, bounded, least recently used answers dropped first", () => {
		expect(cacherOptions({ redisUrl: null, transporter: null })).toEqual({ type: "MemoryLRU", options: { max: MEMORY_CACHE_ANSWERS } });
	});

	test("REDIS_URL: Redis, in one process or a cluster, with answers that expire", () => {
		for (const transporter of [null, "nats://nats:4222"])
			expect(cacherOptions({ redisUrl: "redis://cache:6379", transporter })).toEqual({
				type: "Redis",
				options: { redis: "redis://cache:6379", ttl: expect.any(Number) },
			});
	});

	test("a cluster without REDIS_URL caches nothing: nodes would each keep answers of their own", () => {
		expect(cacherOptions({ redisUrl: null, transporter: "nats://nats:4222" })).toBeUndefined();
	});
});

describe("generationStamp", () => {
	test("the generations of the services an answer is made of, in their order; 0 before any write", () => {
		const generations = new Map([
			["games", 7],
			["authors", 3],
		]);
		expect(generationStamp(generations, ["games", "authors", "categories"])).toBe("7.3.0");
		expect(generationStamp(generations, ["authors"])).toBe("3");
	});
});
