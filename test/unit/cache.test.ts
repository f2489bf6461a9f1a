import { ServiceBroker, type ActionSchema } from "moleculer";
import { answerKey, answerTag, cacherOptions, generationStamp, KEY_JSON_LENGTH, MEMORY_CACHE_ENTRY_SHARE } from "../../lib/cache/cache";
import { answerBytes, MemoryBytesCacher } from "../../lib/cache/memory-cacher";
import { cachedFrom, cacheKey } from "../../mixins/cache.mixin";

const MB = 1024 * 1024;

describe("cacherOptions", () => {
	test("one process without REDIS_URL: memory bounded in bytes (CACHE_MAX_MB), a share of it at most per answer", () => {
		const cacher = cacherOptions({ redisUrl: null, transporter: null, cacheMaxBytes: 64 * MB }) as MemoryBytesCacher;
		expect(cacher).toBeInstanceOf(MemoryBytesCacher);
		expect(cacher.cache.maxSize).toBe(64 * MB);
		expect(cacher.cache.maxEntrySize).toBe(64 * MB * MEMORY_CACHE_ENTRY_SHARE);
	});

	test("each call makes a cacher of its own: a broker's cacher is not shared", () => {
		const options = { redisUrl: null, transporter: null, cacheMaxBytes: MB };
		expect(cacherOptions(options)).not.toBe(cacherOptions(options));
	});

	test("CACHE_MAX_MB=0: no cache at all", () => {
		expect(cacherOptions({ redisUrl: null, transporter: null, cacheMaxBytes: 0 })).toBeUndefined();
	});

	test("REDIS_URL: Redis, in one process or a cluster, with answers that expire", () => {
		for (const transporter of [null, "nats://nats:4222"])
			expect(cacherOptions({ redisUrl: "redis://cache:6379", transporter, cacheMaxBytes: 64 * MB })).toEqual({
				type: "Redis",
				options: { redis: "redis://cache:6379", ttl: expect.any(Number) },
			});
	});

	test("a cluster without REDIS_URL caches nothing: nodes would each keep answers of their own", () => {
		expect(cacherOptions({ redisUrl: null, transporter: "nats://nats:4222", cacheMaxBytes: 64 * MB })).toBeUndefined();
	});
});

describe("MemoryBytesCacher", () => {
	const broker = new ServiceBroker({ logger: false });
	const cacherOf = (maxBytes: number, maxEntryBytes: number) => {
		const cacher = new MemoryBytesCacher({ maxBytes, maxEntryBytes });
		cacher.init(broker);
		return cacher;
	};
	const list = (count: number, size: number) => Array.from({ length: count }, (_, i) => ({ id: String(i), title: "x".repeat(size) }));

	test("holds answers up to its bytes, least recently used dropped first", async () => {
		const cacher = cacherOf(100_000, 50_000);
		for (let i = 0; i < 50; i++) await cacher.set(`games.list:${i}`, list(10, 1000));
		expect(cacher.cache.calculatedSize).toBeLessThanOrEqual(100_000);
		expect(cacher.cache.size).toBeLessThan(50);
		expect(await cacher.get("games.list:49")).toEqual(list(10, 1000));
		expect(await cacher.get("games.list:0")).toBeUndefined();
	});

	test("an answer bigger than its largest entry is not kept, and what it held stays", async () => {
		const cacher = cacherOf(100_000, 20_000);
		await cacher.set("games.list:small", list(2, 10));
		await cacher.set("games.list:big", list(30, 1000));
		expect(await cacher.get("games.list:big")).toBeUndefined();
		expect(await cacher.get("games.list:small")).toEqual(list(2, 10));
	});

	test("an answer counts as its JSON's bytes (not characters) and its key's", () => {
		expect(answerBytes({ title: "é" }, "k")).toBe(Buffer.byteLength('{"title":"é"}') + 1);
		expect(answerBytes(undefined, "key")).toBe(3);
	});
});

describe("answerKey", () => {
	test("params in any field order make one key", () => {
		expect(answerKey("games.list", { title: "zelda", idCategory: "C" }, "1.0.0")).toBe(
			answerKey("games.list", { idCategory: "C", title: "zelda" }, "1.0.0"),
		);
	});

	test("a value holding moleculer's separators is not another set of params", () => {
		// moleculer's own key for both was `games.list:idCategory|"C"|title|"zelda"`-like text.
		const crafted = answerKey("games.list", { idCategory: 'C"|title|"zelda' }, "0.0.0");
		expect(crafted).not.toBe(answerKey("games.list", { idCategory: "C", title: "zelda" }, "0.0.0"));
		expect(answerKey("games.list", { title: "a", idCategory: "b" }, "0")).not.toBe(
			answerKey("games.list", { title: "b", idCategory: "a" }, "0"),
		);
	});

	test("params longer than KEY_JSON_LENGTH as JSON are named by their digest, distinct from any JSON", () => {
		const long = { title: "x".repeat(KEY_JSON_LENGTH) };
		const key = answerKey("games.list", long, "0");
		expect(key).toMatch(/^games\.list:#[A-Za-z0-9_-]{43}@0$/);
		expect(answerKey("games.list", { title: `${"x".repeat(KEY_JSON_LENGTH)}y` }, "0")).not.toBe(key);
		expect(answerKey("games.list", { title: "x" }, "0")).toBe('games.list:{"title":"x"}@0');
	});

	test("the action, the types of the values and the generations are part of it", () => {
		const key = answerKey("authors.page", { pageable: { pageNumber: 1 } }, "3");
		expect(answerKey("authors.list", { pageable: { pageNumber: 1 } }, "3")).not.toBe(key);
		expect(answerKey("authors.page", { pageable: { pageNumber: "1" } }, "3")).not.toBe(key);
		expect(answerKey("authors.page", { pageable: { pageNumber: 1 } }, "4")).not.toBe(key);
		expect(key.startsWith("authors.page:")).toBe(true);
	});
});

describe("answerTag", () => {
	test("a weak ETag that changes with the key and with the process's start", () => {
		const tag = answerTag("games.list:abc@1.0.0", "boot-1");
		expect(tag).toMatch(/^W\/"[A-Za-z0-9_-]{27}"$/);
		expect(answerTag("games.list:abc@1.0.0", "boot-1")).toBe(tag);
		expect(answerTag("games.list:abc@2.0.0", "boot-1")).not.toBe(tag);
		expect(answerTag("games.list:abc@1.0.0", "boot-2")).not.toBe(tag);
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

describe("cacheKey", () => {
	const broker = new ServiceBroker({ logger: false });
	const list = (params: Record<string, unknown> | undefined) => ({
		name: "games.list",
		params: params as ActionSchema["params"],
		cache: cachedFrom("games"),
	});

	test("only the fields the action's rules name, in any order", () => {
		const action = list({ $$strict: "remove", title: "string", idCategory: "string" });
		expect(cacheKey(broker, action, { query: "segment", title: "a", idCategory: "b", junk: 1 })).toBe(
			cacheKey(broker, action, { idCategory: "b", title: "a" }),
		);
		expect(cacheKey(broker, action, { title: "a" })).not.toBe(cacheKey(broker, action, { title: "a", idCategory: "b" }));
	});

	test("a cached action whose rules keep unknown fields is refused: they would reach it but not its key", () => {
		expect(() => cacheKey(broker, list({ title: "string" }), {})).toThrow(
			/games.list is cached, so its params must be declared with \$\$strict: "remove"/,
		);
		expect(() => cacheKey(broker, list(undefined), {})).toThrow(/\$\$strict/);
	});

	test("an action that is not cached has no key", () => {
		expect(cacheKey(broker, { name: "games.create", params: { $$strict: "remove" } }, {})).toBeNull();
	});
});
