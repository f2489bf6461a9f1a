import { createHash } from "node:crypto";
import type * as ZlibModule from "node:zlib";
import { gunzipSync } from "node:zlib";
import { Cachers, Errors, ServiceBroker, type ActionSchema, type Context } from "moleculer";
import { AnswerJson, HttpAnswer, answersAsJson, fieldsRead, storedBytes, type HttpWish } from "../../lib/cache/answers";
import { cacherOptions, MEMORY_CACHE_ENTRY_SHARE } from "../../lib/cache/cache";
import { answerName, answerTag, etagOf, generationStamp, heldTags, KEY_JSON_LENGTH } from "../../lib/cache/keys";
import { MemoryAnswers } from "../../lib/cache/memory-cacher";
import { RedisAnswers } from "../../lib/cache/redis-cacher";
import { cachedFrom } from "../../mixins/cache.mixin";
import { safeToRetry } from "../../mixins/db.mixin";

const MB = 1024 * 1024;

describe("cacherOptions", () => {
	/** The cacher a broker makes of the options. */
	const made = (options: Parameters<typeof cacherOptions>[0]) =>
		new ServiceBroker({ logger: false, cacher: cacherOptions(options) }).cacher;

	test("one process without REDIS_URL: memory bounded in bytes (CACHE_MAX_MB), a share of it at most per answer", () => {
		const cacher = made({ mongoUri: null, redisUrl: null, transporter: null, cacheMaxBytes: 64 * MB }) as MemoryAnswers;
		expect(cacher).toBeInstanceOf(MemoryAnswers);
		expect(cacher.cache.maxSize).toBe(64 * MB);
		expect(cacher.cache.maxEntrySize).toBe(64 * MB * MEMORY_CACHE_ENTRY_SHARE);
	});

	test("options as plain data, so every broker makes a cacher of its own and `$node.options` shows no client", () => {
		const options = { mongoUri: null, redisUrl: null, transporter: null, cacheMaxBytes: MB };
		expect(JSON.parse(JSON.stringify(cacherOptions(options)))).toEqual(cacherOptions(options));
		expect(made(options)).not.toBe(made(options));
	});

	test("CACHE_MAX_MB=0: no cache at all", () => {
		expect(cacherOptions({ mongoUri: null, redisUrl: null, transporter: null, cacheMaxBytes: 0 })).toBeUndefined();
	});

	test("REDIS_URL: Redis, in one process or a cluster, with answers that expire", () => {
		for (const transporter of [null, "nats://nats:4222"]) {
			const options = { mongoUri: null, redisUrl: "redis://127.0.0.1:1", transporter, cacheMaxBytes: 64 * MB };
			expect(cacherOptions(options)).toEqual({
				type: "AnswersInRedis",
				// Each node keeps as many bytes of answers beside Redis as one process keeps without it.
				options: {
					redis: "redis://127.0.0.1:1",
					ttl: expect.any(Number),
					nearBytes: 64 * MB,
					nearEntryBytes: 64 * MB * MEMORY_CACHE_ENTRY_SHARE,
				},
			});
			expect(Cachers.resolve(cacherOptions(options)!)).toBeInstanceOf(RedisAnswers);
		}
	});

	test("MONGO_URI without REDIS_URL caches nothing: another process on that MongoDB (a replica, an import) would write unseen", () => {
		expect(
			cacherOptions({ mongoUri: "mongodb://db/catalogue", redisUrl: null, transporter: null, cacheMaxBytes: 64 * MB }),
		).toBeUndefined();
		const withRedis = { mongoUri: "mongodb://db/catalogue", redisUrl: "redis://127.0.0.1:1", transporter: null, cacheMaxBytes: MB };
		expect(cacherOptions(withRedis)).toMatchObject({ type: "AnswersInRedis" });
	});

	test("a cluster without REDIS_URL caches nothing: nodes would each keep answers of their own", () => {
		expect(cacherOptions({ mongoUri: null, redisUrl: null, transporter: "nats://nats:4222", cacheMaxBytes: 64 * MB })).toBeUndefined();
	});
});

describe("answerName", () => {
	test("params in any field order make one name", () => {
		expect(answerName("games.list", { title: "zelda", idCategory: "C" })).toBe(
			answerName("games.list", { idCategory: "C", title: "zelda" }),
		);
	});

	test("a value holding moleculer's separators is not another set of params", () => {
		// moleculer's own key for both was `games.list:idCategory|"C"|title|"zelda"`-like text.
		const crafted = answerName("games.list", { idCategory: 'C"|title|"zelda' });
		expect(crafted).not.toBe(answerName("games.list", { idCategory: "C", title: "zelda" }));
		expect(answerName("games.list", { title: "a", idCategory: "b" })).not.toBe(
			answerName("games.list", { title: "b", idCategory: "a" }),
		);
	});

	test("params longer than KEY_JSON_LENGTH as JSON are named by their digest, distinct from any JSON", () => {
		const name = answerName("games.list", { title: "x".repeat(KEY_JSON_LENGTH) });
		expect(name).toMatch(/^games\.list:#[A-Za-z0-9_-]{43}$/);
		expect(answerName("games.list", { title: `${"x".repeat(KEY_JSON_LENGTH)}y` })).not.toBe(name);
		expect(answerName("games.list", { title: "x" })).toBe('games.list:{"title":"x"}');
	});

	test("the action and the types of the values are part of it", () => {
		const name = answerName("authors.page", { pageable: { pageNumber: 1 } });
		expect(answerName("authors.list", { pageable: { pageNumber: 1 } })).not.toBe(name);
		expect(answerName("authors.page", { pageable: { pageNumber: "1" } })).not.toBe(name);
	});
});

describe("generationStamp and answerTag", () => {
	test("the epoch, then the generations of the services an answer is made of, in their order", () => {
		expect(generationStamp("boot-1", [7, 3, 0])).toBe("boot-1:7.3.0");
	});

	test("a tag is the key's SHA-1 in hex, as Redis's redis.sha1hex makes it, and the ETag its weak form", () => {
		const key = "MOL-games.list:{}@boot-1:1.0.0";
		expect(answerTag(key)).toBe(createHash("sha1").update(key).digest("hex"));
		expect(answerTag(key)).not.toBe(answerTag("MOL-games.list:{}@boot-1:2.0.0"));
		expect(answerTag(key)).not.toBe(answerTag("MOL-games.list:{}@boot-2:1.0.0"));
		expect(etagOf("abc")).toBe('W/"abc"');
	});
});

describe("heldTags", () => {
	test("the opaque tags of If-None-Match, weak or strong; not *, which the gateway answers once there is an answer", () => {
		expect(heldTags('W/"a1", "b2" ,W/"c3"', undefined)).toEqual(["a1", "b2", "c3"]);
		expect(heldTags("*", undefined)).toEqual([]);
		expect(heldTags('*, W/"a1"', undefined)).toEqual(["a1"]);
		expect(heldTags(undefined, undefined)).toEqual([]);
	});

	test("none under Cache-Control: no-cache, which asks for the whole answer; other directives do not count", () => {
		expect(heldTags('W/"a1"', "no-cache")).toEqual([]);
		expect(heldTags('W/"a1"', "max-age=0, no-cache")).toEqual([]);
		expect(heldTags('W/"a1"', "no-cache-please")).toEqual(["a1"]);
	});
});

describe("fieldsRead", () => {
	const list = (params: Record<string, unknown> | undefined) => ({
		name: "games.list",
		params: params as ActionSchema["params"],
		cache: cachedFrom("games"),
	});

	test("only the fields the action's rules name", () => {
		const action = list({ $$strict: "remove", title: "string", idCategory: "string" });
		expect(fieldsRead(action, { query: "segment", title: "a", idCategory: "b", junk: 1 })).toEqual({ idCategory: "b", title: "a" });
	});

	test("inside a field, only what its own rule keeps: an object that removes other keys, each item of a list", () => {
		const order = { type: "object", strict: "remove", props: { property: "string" } };
		const pageable = { type: "object", strict: "remove", props: { pageNumber: "number", sort: { type: "array", items: order } } };
		const loose = { type: "object", props: { a: "number" } };
		const action = list({ $$strict: "remove", pageable, loose });
		const sent = { pageable: { pageNumber: 0, junk: 1, sort: [{ property: "title", junk: 2 }] }, loose: { a: 1, b: 2 } };
		// A rule that keeps other keys passes them to the action, so they stay in the key.
		expect(fieldsRead(action, sent)).toEqual({ pageable: { pageNumber: 0, sort: [{ property: "title" }] }, loose: { a: 1, b: 2 } });
	});

	test("one item where the rule takes a list and converts: read as the list of one it becomes", () => {
		const order = { type: "object", strict: "remove", props: { property: "string" } };
		const action = list({ $$strict: "remove", sort: { type: "array", convert: true, items: order } });
		const one = fieldsRead(action, { sort: { property: "title", junk: 1 } });
		expect(one).toEqual({ sort: [{ property: "title" }] });
		expect(fieldsRead(action, { sort: { property: "title", junk: 2 } })).toEqual(one);
		expect(fieldsRead(action, { sort: [{ property: "title" }] })).toEqual(one);
	});

	test("a cached action whose rules keep unknown fields is refused: they would reach it but not its key", () => {
		expect(() => fieldsRead(list({ title: "string" }), {})).toThrow(
			/games.list is cached, so its params must be declared with \$\$strict: "remove"/,
		);
		expect(() => fieldsRead(list(undefined), {})).toThrow(/\$\$strict/);
	});
});

describe("MemoryAnswers", () => {
	const broker = new ServiceBroker({ logger: false });
	const cacherOf = (maxBytes: number, maxEntryBytes: number) => {
		const cacher = new MemoryAnswers({ maxBytes, maxEntryBytes });
		cacher.init(broker);
		return cacher;
	};
	const answer = (bytes: number) => ({ json: Buffer.alloc(bytes, "x") });

	test("holds answers up to its bytes, least recently used dropped first", async () => {
		const cacher = cacherOf(100_000, 50_000);
		for (let i = 0; i < 50; i++) await cacher.keep(`games.list:{"title":"${i}"}`, `games.list:${i}`, answer(10_000));
		expect(cacher.cache.calculatedSize).toBeLessThanOrEqual(100_000);
		expect(cacher.cache.size).toBeLessThan(50);
		expect(cacher.cache.get("games.list:49")).toEqual(answer(10_000));
		expect(cacher.cache.get("games.list:0")).toBeUndefined();
	});

	test("an answer bigger than its largest entry is not kept, and what it held stays", async () => {
		const cacher = cacherOf(100_000, 20_000);
		await cacher.keep("authors.list:{}", "games.list:small", answer(100));
		await cacher.keep("games.list:{}", "games.list:big", answer(30_000));
		expect(cacher.cache.get("games.list:big")).toBeUndefined();
		expect(cacher.cache.get("games.list:small")).toEqual(answer(100));
	});

	test("keeping an answer drops the one kept before under the same name (an older generation's, which no lookup reaches); what it drops leaves no name behind", async () => {
		const cacher = cacherOf(100_000, 50_000);
		await cacher.keep("authors.list:{}", "authors.list:{}@e:1", answer(100));
		await cacher.keep("games.list:{}", "games.list:{}@e:1.1.1", answer(20_000));
		await cacher.keep("games.list:{}", "games.list:{}@e:1.2.1", answer(20_000));
		expect([...cacher.cache.keys()].sort()).toEqual(["authors.list:{}@e:1", "games.list:{}@e:1.2.1"]);
		// 200 distinct answers through a cache that holds 4 or 5 of them: the names go with them.
		for (let i = 0; i < 200; i++) await cacher.keep(`games.list:{"title":"${i}"}`, `games.list:${i}@e:1`, answer(20_000));
		const names = cacher as unknown as { nameOf: Map<string, string>; lastKey: Map<string, string> };
		expect(names.nameOf.size).toBe(cacher.cache.size);
		expect(names.lastKey.size).toBe(cacher.cache.size);
	});

	test("an answer counts as the bytes of its forms and its key; a form that would take it past its share is not kept", async () => {
		expect(storedBytes({ json: Buffer.from("é"), gzip: Buffer.alloc(5) }, "key")).toBe(2 + 5 + 3);
		const cacher = cacherOf(100_000, 20_000);
		await cacher.keep("games.list:{}", "k", answer(15_000));
		await cacher.addEncoding("games.list:{}", "k", "gzip", Buffer.alloc(1000));
		expect(cacher.cache.get("k")?.gzip?.length).toBe(1000);
		await cacher.addEncoding("games.list:{}", "k", "br", Buffer.alloc(10_000));
		expect(cacher.cache.get("k")).toEqual({ json: answer(15_000).json, gzip: Buffer.alloc(1000) });
	});

	test("a write moves its service's generation: answers made of it get a new key and tag, the others keep theirs", async () => {
		const cacher = cacherOf(100_000, 20_000);
		const before = await cacher.lookup("games.list:{}", ["games", "authors"], null);
		const authors = await cacher.lookup("authors.list:{}", ["authors"], null);
		await cacher.nextGeneration("games");
		const after = await cacher.lookup("games.list:{}", ["games", "authors"], null);
		expect(after.key).not.toBe(before.key);
		expect(after.tag).not.toBe(before.tag);
		expect((await cacher.lookup("authors.list:{}", ["authors"], null)).key).toBe(authors.key);
		expect(after.key).toContain(broker.instanceID);
	});

	test("a client holding the current tag is told so; an old tag is not", async () => {
		const cacher = cacherOf(100_000, 20_000);
		const { tag } = await cacher.lookup("authors.list:{}", ["authors"], null);
		const wish = (held: string[]): HttpWish => ({ encoding: null, held });
		expect((await cacher.lookup("authors.list:{}", ["authors"], wish(["other", tag]))).notModified).toBe(true);
		await cacher.nextGeneration("authors");
		expect((await cacher.lookup("authors.list:{}", ["authors"], wish([tag]))).notModified).toBeUndefined();
	});
});

/** `length` games as a list answers them. */
const gameList = (length: number) => Array.from({ length }, (_, i) => ({ id: String(i), title: `Game number ${i}` }));

/** A broker caching answers in memory, whose cached `games.list` runs `handler`. */
function withCachedList(handler: (ctx: Context) => unknown): ServiceBroker {
	const broker = new ServiceBroker({ logger: false, cacher: new MemoryAnswers({ maxBytes: 10 * MB, maxEntryBytes: MB }) });
	broker.createService({ name: "games", actions: { list: { cache: cachedFrom("games"), params: { $$strict: "remove" }, handler } } });
	return broker;
}

test("$cache: false on a call to another node reads that node's store, and the caller's later calls use the cache again", async () => {
	const namespace = `uncached-${process.pid}`;
	const node = (nodeID: string) =>
		new ServiceBroker({
			nodeID,
			namespace,
			logger: false,
			transporter: "Fake",
			cacher: new MemoryAnswers({ maxBytes: 10 * MB, maxEntryBytes: MB }),
		});
	const [games, follower] = [node("games-node"), node("follower-node")];
	let runs = 0;
	games.createService({
		name: "games",
		actions: { list: { cache: cachedFrom("games"), params: { $$strict: "remove" }, handler: () => [++runs] } },
	});
	follower.createService({
		name: "follower",
		actions: {
			async read(ctx) {
				const fromStore = await ctx.call("games.list", {}, { meta: { $cache: false } });
				return [fromStore, await ctx.call("games.list"), await ctx.call("games.list"), ctx.meta];
			},
		},
	});
	await Promise.all([games.start(), follower.start()]);
	try {
		await follower.waitForServices("games");
		// Kept by a first read; the $cache: false call runs the action again, the later calls are hits of the kept answer.
		expect(await follower.call("games.list")).toEqual([1]);
		expect(await follower.call("follower.read")).toEqual([[2], [1], [1], {}]);
	} finally {
		await Promise.all([games.stop(), follower.stop()]);
	}
});

describe("the cacher's middleware", () => {
	const list = gameList(100);
	let runs = 0;
	const broker = withCachedList(() => {
		runs++;
		return list;
	});
	/** An action whose answer is made of another cached action's, each saying whether it saw the gateway's wish. */
	const sawWish = (ctx: Context<unknown, { $http?: unknown }>) => ctx.meta.$http !== undefined;
	broker.createService({
		name: "shelf",
		actions: {
			inner: { cache: cachedFrom("authors"), params: { $$strict: "remove" }, handler: ctx => ({ wishSeen: sawWish(ctx) }) },
			outer: {
				cache: cachedFrom("games", "authors"),
				params: { $$strict: "remove" },
				handler: async ctx => ({ wishSeen: sawWish(ctx), inner: await ctx.call("shelf.inner") }),
			},
		},
	});
	beforeAll(() => broker.start());
	afterAll(() => broker.stop());
	const asGateway = (wish: HttpWish) => broker.call<HttpAnswer, object>("games.list", {}, { meta: { $http: wish } });

	test("a hit is the kept bytes for the gateway, not parsed nor serialized again; records for any other caller", async () => {
		const first = await asGateway({ encoding: null, held: [] });
		expect(JSON.parse(first.body!.toString())).toEqual(list);
		const parse = jest.spyOn(JSON, "parse");
		const serialize = jest.spyOn(JSON, "stringify");
		try {
			const again = await asGateway({ encoding: null, held: [] });
			expect(again).toBeInstanceOf(HttpAnswer);
			expect(again.body).toBe(first.body);
			expect(again.tag).toBe(first.tag);
			expect(parse).not.toHaveBeenCalled();
			expect(serialize).not.toHaveBeenCalled();
		} finally {
			parse.mockRestore();
			serialize.mockRestore();
		}
		expect(await broker.call("games.list")).toEqual(list);
		expect(runs).toBe(1);
	});

	test("each compressed form is made once per answer and kept beside it", async () => {
		const zlib = jest.requireActual<typeof ZlibModule>("node:zlib");
		const gzip = jest.spyOn(zlib, "gzip");
		try {
			await broker.cacher!.clean();
			// Kept as JSON alone, then asked for gzip by several clients at once, then once more.
			await asGateway({ encoding: null, held: [] });
			const answers = await Promise.all([1, 2, 3].map(() => asGateway({ encoding: "gzip", held: [] })));
			answers.push(await asGateway({ encoding: "gzip", held: [] }));
			expect(gzip).toHaveBeenCalledTimes(1);
			for (const answer of answers) expect(JSON.parse(gunzipSync(answer.body!).toString())).toEqual(list);
			expect(answers.every(answer => answer.encoding === "gzip")).toBe(true);
		} finally {
			gzip.mockRestore();
		}
	});

	test("the tag the client holds: no bytes at all", async () => {
		const { tag } = await asGateway({ encoding: null, held: [] });
		expect(await asGateway({ encoding: "gzip", held: [tag] })).toEqual(new HttpAnswer(tag, null, null));
	});

	test("the gateway's wish reaches neither the action nor the cached calls it makes, which get records", async () => {
		const { body } = await broker.call<HttpAnswer, object>("shelf.outer", {}, { meta: { $http: { encoding: null, held: [] } } });
		expect(JSON.parse(body!.toString())).toEqual({ wishSeen: false, inner: { wishSeen: false } });
	});

	test("a read retried after a retryable failure still answers the gateway as it asked: the kept bytes, not records", async () => {
		let calls = 0;
		const node = new ServiceBroker({ logger: false, cacher: new MemoryAnswers({ maxBytes: 10 * MB, maxEntryBytes: MB }) });
		node.createService({
			name: "games",
			actions: {
				list: {
					...safeToRetry,
					cache: cachedFrom("games"),
					params: { $$strict: "remove" },
					handler: () => {
						if (++calls === 1) throw new Errors.MoleculerRetryableError("the node went away", 503, "SERVICE_NOT_AVAILABLE");
						return list;
					},
				},
			},
		});
		await node.start();
		try {
			const answer = await node.call<HttpAnswer, object>("games.list", {}, { meta: { $http: { encoding: null, held: [] } } });
			expect(calls).toBe(2);
			expect(answer).toBeInstanceOf(HttpAnswer);
			expect(JSON.parse(answer.body!.toString())).toEqual(list);
		} finally {
			await node.stop();
		}
	});

	test("a cache that fails its lookups leaves the reads to their services, and says so once while it keeps failing", async () => {
		const failing = new (class extends MemoryAnswers {
			override lookup(): Promise<never> {
				return Promise.reject(new Error("no answer within 1000 ms"));
			}
		})({ maxBytes: MB, maxEntryBytes: MB });
		const node = new ServiceBroker({ logger: false, cacher: failing });
		node.createService({
			name: "games",
			actions: { list: { cache: cachedFrom("games"), params: { $$strict: "remove" }, handler: () => list } },
		});
		await node.start();
		try {
			const warn = jest.spyOn(failing.logger, "warn");
			for (let i = 0; i < 3; i++) expect(await node.call("games.list")).toEqual(list);
			expect(warn).toHaveBeenCalledTimes(1);
			expect(warn.mock.calls[0][0]).toMatch(/did not answer a lookup of games.list \(no answer within 1000 ms\)/);
		} finally {
			await node.stop();
		}
	});
});

describe("an action that answers its JSON (AnswerJson)", () => {
	const list = gameList(10);
	/** For each run: whether the answer cache let the action answer its JSON, and the bytes it answered then. */
	const runs: { asJson: boolean; json?: Buffer }[] = [];
	const broker = withCachedList(ctx => {
		if (!answersAsJson(ctx)) {
			runs.push({ asJson: false });
			return list;
		}
		const json = Buffer.from(JSON.stringify(list));
		runs.push({ asJson: true, json });
		return new AnswerJson(json);
	});
	beforeAll(() => broker.start());
	afterAll(() => broker.stop());
	beforeEach(async () => {
		runs.length = 0;
		await broker.cacher!.clean();
		// The answer made last is forgotten by its makers a turn after it is kept.
		await new Promise(resolve => setImmediate(resolve));
	});
	const asGateway = () => broker.call<HttpAnswer, object>("games.list", {}, { meta: { $http: { encoding: null, held: [] } } });

	test("the gateway gets the very bytes the action made, and they are kept as they are", async () => {
		const answer = await asGateway();
		expect(runs).toEqual([{ asJson: true, json: answer.body }]);
		expect(answer.body).toBe(runs[0].json);
		expect((await asGateway()).body).toBe(runs[0].json);
		expect(runs).toHaveLength(1);
	});

	test("the caller that made it without the gateway gets records, parsed from the JSON", async () => {
		expect(await broker.call("games.list")).toEqual(list);
		expect(runs.map(run => run.asJson)).toEqual([true]);
	});

	test("a call sent again by moleculer's Retry, whose lookup the cache does not answer then, gets records, not the JSON", async () => {
		let lookups = 0;
		const late = new (class extends MemoryAnswers {
			override lookup(...args: Parameters<MemoryAnswers["lookup"]>) {
				// The retry's lookup is not answered in time: the action is run without the cache.
				return ++lookups === 1 ? super.lookup(...args) : Promise.reject(new Error("no answer within 1000 ms"));
			}
		})({ maxBytes: MB, maxEntryBytes: MB });
		const node = new ServiceBroker({ logger: false, cacher: late });
		let attempts = 0;
		node.createService({
			name: "games",
			actions: {
				list: {
					cache: cachedFrom("games"),
					params: { $$strict: "remove" },
					retryPolicy: { enabled: true, retries: 1, delay: 1 },
					handler(ctx: Context) {
						if (++attempts === 1) throw new Errors.MoleculerRetryableError("busy");
						return answersAsJson(ctx) ? new AnswerJson(Buffer.from(JSON.stringify(list))) : list;
					},
				},
			},
		});
		await node.start();
		try {
			expect(await node.call("games.list")).toEqual(list);
			expect({ attempts, lookups }).toEqual({ attempts: 2, lookups: 2 });
		} finally {
			await node.stop();
		}
	});

	test("a call that skips the cache ($cache: false) gets records from the action itself", async () => {
		expect(await broker.call("games.list", {}, { meta: { $cache: false } })).toBe(list);
		expect(runs).toEqual([{ asJson: false }]);
	});
});
