import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Redis from "ioredis";
import { ServiceBroker } from "moleculer";
import { generationsKey } from "../../lib/cache/keys";
import { RedisAnswers } from "../../lib/cache/redis-cacher";
import { generationsMoveOn } from "../../mixins/cache.mixin";
import { waitFor } from "../support/process";
import { startRedis, type RedisServer } from "../support/redis";

// The shared cache's answers and generations in a Redis of the test's own, which it snapshots,
// restarts, flushes and pauses (docs/caching.md): every node reads the generations there at each
// lookup, whatever it has heard, and no key made before a write or before a restore is reached.

const NAMESPACE = "answers";
let redis: RedisServer;
let dir: string;
let admin: Redis;
let brokers: ServiceBroker[] = [];

/**
 * A node with the shared cache: its own broker, no transporter, so it hears nothing from the other. With `writes`, it runs a service
 * of that name whose generation moves as a catalogue service's does (mixins/cache.mixin.ts generationsMoveOn).
 */
async function node(writes?: string): Promise<RedisAnswers> {
	const cacher = new RedisAnswers({ redis: redis.url, ttl: 60, nearBytes: 1024 * 1024, nearEntryBytes: 128 * 1024 });
	const broker = new ServiceBroker({ logger: false, namespace: NAMESPACE, cacher });
	if (writes) broker.createService({ name: writes, mixins: [generationsMoveOn] });
	await broker.start();
	brokers.push(broker);
	await cacher.checkEpoch();
	return cacher;
}

const ready = (cacher: RedisAnswers) =>
	waitFor("the node checks the cache's epoch again", async () => (await games(cacher)) !== null, [], 15_000);
const games = (cacher: RedisAnswers) => cacher.lookup("games.list:{}", ["games", "authors"], null);
const kept = { json: Buffer.from('[{"id":"1","title":"Catan"}]') };

beforeAll(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "catalogue-redis-"));
	redis = await startRedis(10_000, ["--dir", dir]);
	admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
	admin.on("error", () => undefined);
});
afterEach(async () => {
	await Promise.all(brokers.map(broker => broker.stop()));
	brokers = [];
});
afterAll(async () => {
	admin?.disconnect();
	await redis?.stop();
	rmSync(dir, { recursive: true, force: true });
});

test("a write on one node changes the key another node looks up next, with no news between them", async () => {
	const [reader, writer] = [await node(), await node()];
	const before = (await games(reader))!;
	await reader.keep("games.list:{}", before.key, kept);
	expect((await games(reader))!.answer).toEqual(kept);
	expect(await writer.nextGeneration("authors")).toBe(true);
	const after = (await games(reader))!;
	expect(after.key).not.toBe(before.key);
	expect(after.answer).toBeUndefined();
	expect(await admin.hget(generationsKey(NAMESPACE), "authors")).toBe("1");
});

test("a node holding the current answer gets no bytes of it from Redis, and never serves it once a write moved its key on", async () => {
	const [writer, reader] = [await node(), await node()];
	const { key } = (await games(writer))!;
	await writer.keep("games.list:{}", key, kept);
	expect((await games(reader))!.answer).toEqual(kept);
	// Redis's copy changed behind the reader's back: it answers with its own, so Redis sent none.
	await admin.hset(key, "json", "[]");
	expect((await games(reader))!.answer).toEqual(kept);
	expect(await writer.nextGeneration("authors")).toBe(true);
	const after = (await games(reader))!;
	expect(after.key).not.toBe(key);
	expect(after.answer).toBeUndefined();
});

test("a hit, a miss and a 304 are each one command to Redis, and a 304 sends no bytes of the answer", async () => {
	const cacher = await node();
	const { key, tag } = (await games(cacher))!;
	await cacher.keep("games.list:{}", key, kept);
	// Every command Redis receives from a client, as MONITOR reports it (a script's own calls come from "lua").
	const monitor = await admin.monitor();
	const commands: string[] = [];
	monitor.on("monitor", (_time: string, args: string[], source: string) => {
		if (source !== "lua") commands.push(args[0].toLowerCase());
	});
	try {
		expect((await games(cacher))!.answer).toEqual(kept);
		expect(await cacher.lookup("games.list:{}", ["games", "authors"], { encoding: null, held: [tag] })).toEqual({
			key,
			tag,
			notModified: true,
		});
		expect((await cacher.lookup("authors.list:{}", ["authors"], null))!.answer).toBeUndefined();
		await waitFor("MONITOR reports the three lookups", () => Promise.resolve(commands.length >= 3), [], 5000);
	} finally {
		monitor.disconnect();
	}
	expect(commands).toEqual(["evalsha", "evalsha", "evalsha"]);
});

test("the same lookup asked several times in one turn of the event loop is one command to Redis; another lookup is its own", async () => {
	const cacher = await node();
	const { key } = (await games(cacher))!;
	await cacher.keep("games.list:{}", key, kept);
	const lookups = jest.spyOn(cacher.client, "catalogueLookupBuffer");
	const found = await Promise.all([
		games(cacher),
		games(cacher),
		games(cacher),
		cacher.lookup("authors.list:{}", ["authors"], null),
		games(cacher),
	]);
	expect(lookups).toHaveBeenCalledTimes(2);
	for (const index of [0, 1, 2, 4]) expect(found[index]!.answer).toEqual(kept);
	expect(found[3]!.answer).toBeUndefined();
	// A client holding a tag asks another question: its lookup is its own.
	await Promise.all([games(cacher), cacher.lookup("games.list:{}", ["games", "authors"], { encoding: null, held: ['"x"'] })]);
	expect(lookups).toHaveBeenCalledTimes(4);
});

test("a lookup asked after the same lookup was sent does not join it, so a write answered between them is seen", async () => {
	const [reader, writer] = [await node(), await node()];
	const lookup = reader.client.catalogueLookupBuffer.bind(reader.client);
	let sent: Promise<unknown> | undefined;
	let release!: () => void;
	const released = new Promise<void>(resolve => (release = resolve));
	// The first lookup reaches Redis at once, but its answer is held back until the second is answered.
	jest.spyOn(reader.client, "catalogueLookupBuffer")
		.mockImplementationOnce((...args) => {
			const answer = lookup(...args);
			sent = answer;
			return released.then(() => answer);
		})
		.mockImplementation(lookup);
	const first = games(reader);
	await waitFor("the first lookup is sent", () => Promise.resolve(sent !== undefined), [], 5000);
	await sent;
	expect(await writer.nextGeneration("games")).toBe(true);
	const second = await games(reader);
	release();
	expect(second!.key).not.toBe((await first)!.key);
});

test("a writer killed between a write's commit and its move: the next start of the service makes the answers from before it unreachable", async () => {
	const reader = await node();
	await node("games");
	const { key } = (await games(reader))!;
	await reader.keep("games.list:{}", key, kept);
	// A write commits, and its node dies before its HINCRBY: nothing moved, the answer from before it is current.
	expect((await games(reader))!.answer).toEqual(kept);
	await node("games");
	const found = (await games(reader))!;
	expect(found.key).not.toBe(key);
	expect(found.answer).toBeUndefined();
});

test("Redis restored from a snapshot older than a write: a new epoch, so the answer kept before the write is not reached", async () => {
	const cacher = await node();
	const { key } = (await games(cacher))!;
	await cacher.keep("games.list:{}", key, kept);
	await admin.save();
	expect(await cacher.nextGeneration("games")).toBe(true);
	// Killed and started again on its snapshot: the answer and the generations as they were before the write.
	await redis.stop();
	await redis.start();
	expect(await admin.exists(key)).toBe(1);
	await ready(cacher);
	const found = (await games(cacher))!;
	expect(found.key).not.toBe(key);
	expect(found.answer).toBeUndefined();
	rmSync(path.join(dir, "dump.rdb"), { force: true });
});

test("the generations lost alone (an eviction policy that takes any key): lookups keep off until a new epoch is made", async () => {
	const cacher = await node();
	const { key } = (await games(cacher))!;
	await cacher.keep("games.list:{}", key, kept);
	await admin.del(generationsKey(NAMESPACE));
	expect(await games(cacher)).toBeNull();
	await ready(cacher);
	expect((await games(cacher))!.key).not.toBe(key);
});

test("Redis holding its writes: a lookup still answers, a write answers within a second and its service is kept off until Redis takes the move", async () => {
	const [reader, writer] = [await node(), await node()];
	const { key } = (await games(reader))!;
	await admin.call("CLIENT", "PAUSE", "2500", "WRITE");
	expect((await games(reader))!.key).toBe(key);
	const started = Date.now();
	expect(await writer.nextGeneration("games")).toBe(false);
	expect(Date.now() - started).toBeLessThan(1500);
	expect(await games(writer)).toBeNull();
	// What the writer's broadcast tells the reader (mixins/cache.mixin.ts generationNews).
	reader.owe("games");
	expect(await games(reader)).toBeNull();
	await waitFor("Redis takes the owed moves", async () => (await games(reader)) !== null && (await games(writer)) !== null, [], 10_000);
	expect((await games(reader))!.key).not.toBe(key);
}, 20_000);

test("Redis holding its writes: keeping an answer, or its compressed form, fails within a second instead of waiting for Redis", async () => {
	const cacher = await node();
	const { key } = (await games(cacher))!;
	await admin.call("CLIENT", "PAUSE", "3000", "WRITE");
	const started = Date.now();
	// The answer cache holds a kept answer for the reads that join it until its keep settles (lib/cache/answers.ts).
	await expect(cacher.keep("games.list:{}", key, kept)).rejects.toThrow(/no answer within/);
	await expect(cacher.addEncoding("games.list:{}", key, "gzip", Buffer.from("zipped"))).rejects.toThrow(/no answer within/);
	expect(Date.now() - started).toBeLessThan(2500);
	await admin.call("CLIENT", "UNPAUSE");
}, 20_000);
