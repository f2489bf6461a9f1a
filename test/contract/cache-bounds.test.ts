import { Cachers } from "moleculer";
import { newId } from "../../lib/catalogue/ids";
import { MEMORY_CACHE_ENTRY_SHARE } from "../../lib/cache/cache";
import { MemoryAnswers } from "../../lib/cache/memory-cacher";
import { localService, startCatalogue, type Catalogue } from "../support/catalogue";

// What a client can make the cache hold (docs/caching.md): one entry per answer the actions
// really give, and in one process no more bytes than CACHE_MAX_MB. Over NATS the answers live in
// Redis, which compose bounds with maxmemory (test/deploy/compose.test.ts).

const CACHE_BYTES = 4 * 1024 * 1024;
/** More than half of CACHE_BYTES as JSON: GET /game is served but not kept in one broker. */
const GAMES = 10_000;

let catalogue: Catalogue;

beforeAll(async () => {
	catalogue = await startCatalogue({ cacheMaxBytes: CACHE_BYTES });
	const category = await catalogue.api.category("Family");
	const author = await catalogue.api.author("Reiner Knizia", "German");
	// Straight into the store: the point is the size of the answers, not how they were written.
	const { adapter } = localService<{ adapter: { insertMany(games: object[]): Promise<unknown> } }>(catalogue, "games");
	const games = Array.from({ length: GAMES }, (_, i) => ({
		_id: newId(),
		title: `Game ${i}`,
		age: i % 18,
		category: category.id,
		author: author.id,
	}));
	await adapter.insertMany(games);
}, 60_000);
afterAll(() => catalogue.stop());

/** The keys of the cached answers of `action`, on the gateway's node (the cache every read goes through). */
async function cachedAnswers(action: string): Promise<string[]> {
	const keys = (await catalogue.broker.cacher!.getCacheKeys()) as { key: string }[];
	return keys.map(({ key }) => key).filter(key => key.includes(`${action}:`));
}

/** Sends `paths` twenty at a time and checks every answer is the whole list matched. */
async function sendAll(paths: string[], games: number): Promise<void> {
	for (let i = 0; i < paths.length; i += 20) {
		const answers = await Promise.all(paths.slice(i, i + 20).map(path => catalogue.api.get(path)));
		for (const [j, { status, body }] of answers.entries())
			expect({ path: paths[i + j], status, games: body.length }).toEqual({ path: paths[i + j], status: 200, games });
	}
}

test("600 requests for GET /game/seg<i> and GET /game?junk<i>=1 with a filter hold one cached answer", async () => {
	// Filtered to the games numbered 1, 10-19, 100-199 and 1000-1999, so that the answer is cached in one broker too.
	const paths = Array.from({ length: 300 }, (_, i) => [`/game/seg${i}?title=%5EGame%201`, `/game?title=%5EGame%201&junk${i}=1`]).flat();
	await sendAll(paths, 1111);
	expect(await cachedAnswers("games.list")).toHaveLength(1);
}, 60_000);

test("a hundred pages asked with junk inside pageable and inside its sort (a list, or one order) hold one cached answer", async () => {
	const bodies = Array.from({ length: 100 }, (_, i) => {
		const order = { property: "title", direction: "ASC", [`more${i}`]: "x" };
		return { title: "^Game 1", pageable: { pageNumber: 0, pageSize: 5, [`junk${i}`]: i, sort: i % 2 === 0 ? [order] : order } };
	});
	for (let i = 0; i < bodies.length; i += 20) {
		const answers = await Promise.all(bodies.slice(i, i + 20).map(body => catalogue.api.post("/game", body)));
		for (const { status, body } of answers) expect({ status, games: body.content?.length }).toEqual({ status: 200, games: 5 });
	}
	expect(await cachedAnswers("games.page")).toHaveLength(1);
}, 60_000);

test("forty distinct large answers keep the node's cache within its bytes; over NATS they live in Redis", async () => {
	// Forty patterns that each match the same 1111 games (about 200 KB of JSON each: 8 MB in all).
	const paths = Array.from({ length: 40 }, (_, k) => `/game?title=${encodeURIComponent(`^Game 1.{0,${k}}`)}`);
	await sendAll(paths, 1111);
	const { cacher } = catalogue.broker;
	if (catalogue.topology === "nats") {
		for (const broker of catalogue.brokers) expect(broker.cacher).toBeInstanceOf(Cachers.Redis);
		return expect((await cachedAnswers("games.list")).length).toBeGreaterThanOrEqual(40);
	}
	const { cache } = cacher as MemoryAnswers;
	expect(cache.calculatedSize).toBeLessThanOrEqual(CACHE_BYTES);
	expect(cache.size).toBeLessThan(40);
	expect(cache.size).toBeGreaterThan(0);
}, 60_000);

test("an answer larger than its share of the memory cache is served whole but not kept", async () => {
	const before = await cachedAnswers("games.list");
	const { status, body } = await catalogue.api.get("/game");
	expect({ status, games: body.length }).toEqual({ status: 200, games: GAMES });
	expect(Buffer.byteLength(JSON.stringify(body))).toBeGreaterThan(CACHE_BYTES * MEMORY_CACHE_ENTRY_SHARE);
	const after = await cachedAnswers("games.list");
	// Redis has no share of ours: there the answer is kept like any other.
	expect(after.length - before.length).toBe(catalogue.topology === "nats" ? 1 : 0);
	if (catalogue.topology === "one-broker") expect(catalogue.broker.cacher).toBeInstanceOf(MemoryAnswers);
}, 60_000);
