import fs, { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceBroker, type Service } from "moleculer";
import { createAdapter, prepareStore, refusedWrites } from "../../lib/storage/adapter";
import { COMPACTION_FLOOR } from "../../lib/storage/nedb-files";

// A write the disk refuses (ENOSPC here, injected where the adapter appends) leaves no trace: not
// in what reads find, not in the file, not after a restart (docs/storage.md, "A full disk").
// test/process/full-disk.test.ts fills a real tmpfs through HTTP.

// NeDB's storage module, whose compaction (write `<file>~`, then rename it) a test makes fail.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const storage = require("@seald-io/nedb/lib/storage.js") as {
	crashSafeWriteFileLinesAsync(file: string, lines: string[]): Promise<void>;
};

let dataDir: string;
let broker: ServiceBroker;
let logger: Service["logger"];
beforeEach(async () => {
	dataDir = await mkdtemp(path.join(tmpdir(), "catalogue-full-disk-"));
	broker = new ServiceBroker({ logger: false });
	logger = broker.getLogger("games");
});
afterEach(async () => {
	jest.restoreAllMocks();
	await rm(dataDir, { recursive: true, force: true });
});

type Record = { _id: string; title: string; draft?: number };

type Adapter = ReturnType<typeof createAdapter> & {
	insert(doc: object): Promise<Record>;
	updateMany(query: object, update: object): Promise<number>;
	removeMany(query: object): Promise<number>;
	find(params: { query?: object; sort?: string[] }): Promise<Record[]>;
	db: { ensureIndexAsync(options: { fieldName: string }): Promise<void> };
	disconnect(): Promise<void>;
};

/** The games' store in `dataDir`, loaded from its file, as the games service makes it (drafts and changes are claims). */
async function games(): Promise<Adapter> {
	const adapter = createAdapter("games", { storage: "file", dataDir, mongoUri: null }, ["draft", "change"]) as Adapter;
	adapter.init(broker, { broker, logger } as unknown as Service);
	await adapter.connect();
	// NeDB's own promises, as the services reach it.
	await prepareStore(adapter, [], []);
	return adapter;
}

const file = () => path.join(dataDir, "games.db");
const titles = async (store: Adapter, query: object = {}) => (await store.find({ query, sort: ["title"] })).map(game => game.title);

/**
 * From now on every append writes the first `bytes` bytes of its lines (half a line, as a write
 * that runs out of space halfway does) and fails with ENOSPC, until `restore()`.
 */
function fillDisk(bytes = 12) {
	const append = fs.appendFileSync;
	return jest.spyOn(fs, "appendFileSync").mockImplementation((target, data, options) => {
		append(target, String(data).slice(0, bytes), options);
		throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", errno: -28, syscall: "write" });
	});
}

const ENOSPC = { code: "ENOSPC" };

describe("a change the disk refuses is not seen, and the file is as it was", () => {
	let store: Adapter;
	let stored: string;
	beforeEach(async () => {
		store = await games();
		// An index on the title: the refused change must also leave NeDB's indexes as they were.
		await store.db.ensureIndexAsync({ fieldName: "title" });
		await store.insert({ _id: "a", title: "Agricola" });
		await store.insert({ _id: "b", title: "Brass" });
		stored = readFileSync(file(), "utf8");
	});
	afterEach(() => store.disconnect());

	test("a create", async () => {
		fillDisk();
		await expect(store.insert({ _id: "c", title: "Carcassonne" })).rejects.toMatchObject(ENOSPC);
		expect(await titles(store)).toEqual(["Agricola", "Brass"]);
		expect(await titles(store, { title: "Carcassonne" })).toEqual([]);
		expect(readFileSync(file(), "utf8")).toBe(stored);
	});

	test("an update, of one record and of several", async () => {
		fillDisk();
		await expect(store.updateMany({ _id: "a" }, { $set: { title: "Azul" } })).rejects.toMatchObject(ENOSPC);
		await expect(store.updateMany({}, { $set: { title: "Same" } })).rejects.toMatchObject(ENOSPC);
		expect(await titles(store)).toEqual(["Agricola", "Brass"]);
		expect(await titles(store, { title: "Agricola" })).toEqual(["Agricola"]);
		expect(await titles(store, { title: "Azul" })).toEqual([]);
		expect(await titles(store, { title: "Same" })).toEqual([]);
		expect(readFileSync(file(), "utf8")).toBe(stored);
	});

	test("a delete, of one record and of several", async () => {
		fillDisk();
		await expect(store.removeMany({ _id: "a" })).rejects.toMatchObject(ENOSPC);
		await expect(store.removeMany({})).rejects.toMatchObject(ENOSPC);
		expect(await titles(store)).toEqual(["Agricola", "Brass"]);
		expect(await titles(store, { title: "Brass" })).toEqual(["Brass"]);
		expect(readFileSync(file(), "utf8")).toBe(stored);
	});

	test("a game's create, which publishes its draft: the draft stays hidden, and nothing is written", async () => {
		await store.insert({ _id: "d", title: "Dominion", draft: Date.now() });
		fillDisk();
		await expect(store.updateMany({ _id: "d", draft: { $exists: true } }, { $unset: { draft: true } })).rejects.toMatchObject(ENOSPC);
		expect(await titles(store, { draft: { $exists: false } })).toEqual(["Agricola", "Brass"]);
		expect(readFileSync(file(), "utf8")).toBe(stored);
	});

	test("once the disk has room again, the next writes are stored, and a restart finds exactly what was acknowledged", async () => {
		const full = fillDisk();
		await expect(store.insert({ _id: "c", title: "Carcassonne" })).rejects.toMatchObject(ENOSPC);
		await expect(store.updateMany({ _id: "a" }, { $set: { title: "Azul" } })).rejects.toMatchObject(ENOSPC);
		await expect(store.removeMany({ _id: "b" })).rejects.toMatchObject(ENOSPC);
		full.mockRestore();
		await store.insert({ _id: "e", title: "Eclipse" });
		await store.updateMany({ _id: "b" }, { $set: { title: "Brass: Birmingham" } });
		expect(await titles(store)).toEqual(["Agricola", "Brass: Birmingham", "Eclipse"]);
		// Every line whole: the half lines of the refused writes were cut off.
		const lines = readFileSync(file(), "utf8").split("\n");
		expect(lines.pop()).toBe("");
		for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
		await store.disconnect();

		store = await games();
		expect(await titles(store)).toEqual(["Agricola", "Brass: Birmingham", "Eclipse"]);
		// Nothing was cut at load: no torn tail was found.
		expect(readdirSync(dataDir).filter(name => name.includes(".torn-"))).toEqual([]);
	});
});

test("a half line that could not be cut off at once is cut before the next line, which is refused while it cannot be", async () => {
	const store = await games();
	try {
		await store.insert({ _id: "a", title: "Agricola" });
		const stored = readFileSync(file(), "utf8");
		const full = fillDisk();
		const cut = jest.spyOn(fs, "ftruncateSync").mockImplementation(() => {
			throw Object.assign(new Error("EIO: i/o error, ftruncate"), { code: "EIO" });
		});
		await expect(store.insert({ _id: "b", title: "Brass" })).rejects.toMatchObject(ENOSPC);
		full.mockRestore();
		expect(readFileSync(file(), "utf8")).not.toBe(stored);
		await expect(store.insert({ _id: "c", title: "Caylus" })).rejects.toMatchObject({ code: "EIO" });
		cut.mockRestore();
		await store.insert({ _id: "d", title: "Dominion" });
		expect(await titles(store)).toEqual(["Agricola", "Dominion"]);
		expect(readFileSync(file(), "utf8")).toBe(`${stored}{"_id":"d","title":"Dominion"}\n`);
	} finally {
		await store.disconnect();
	}
});

describe("whether the store refuses writes (readiness asks, mixins/db.mixin.ts)", () => {
	test("from a refused write until a write is stored; a change that appends nothing (a claim) does not count", async () => {
		const store = await games();
		try {
			await store.insert({ _id: "a", title: "Agricola" });
			expect(refusedWrites(store)).toBeUndefined();
			const full = fillDisk();
			await expect(store.insert({ _id: "b", title: "Brass" })).rejects.toMatchObject(ENOSPC);
			expect(refusedWrites(store)).toMatch(/ENOSPC/);
			full.mockRestore();
			await store.insert({ _id: "c", title: "Caylus", draft: Date.now() });
			expect(refusedWrites(store)).toMatch(/ENOSPC/);
			await store.updateMany({ _id: "c" }, { $unset: { draft: true } });
			expect(refusedWrites(store)).toBeUndefined();
		} finally {
			await store.disconnect();
		}
	});

	test("a store in memory never says so", () => {
		expect(refusedWrites(createAdapter("games", { storage: "memory", dataDir, mongoUri: null }))).toBeUndefined();
	});
});

test("a compaction the disk refuses keeps the old file in use, removes its half copy and says so in the log", async () => {
	const store = await games();
	const warn = jest.spyOn(logger, "warn");
	try {
		// NeDB's own first step, the new copy beside the file, runs out of space halfway.
		const compact = jest.spyOn(storage, "crashSafeWriteFileLinesAsync").mockImplementation(async (target, lines) => {
			fs.writeFileSync(`${target}~`, lines.slice(0, 10).join("\n"));
			throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
		});
		for (let n = 0; n <= COMPACTION_FLOOR; n++) await store.insert({ _id: `g${String(n).padStart(4, "0")}`, title: `Game ${n}` });
		// The compaction runs behind the writes, which never wait for it.
		const over = () => warn.mock.calls.length > 0 && !fs.existsSync(`${file()}~`);
		for (let waited = 0; !over() && waited < 5000; waited += 10) await new Promise(resolve => setTimeout(resolve, 10));
		expect(compact).toHaveBeenCalledTimes(1);
		expect(warn).toHaveBeenCalledWith(expect.stringContaining(`Could not compact ${file()} (ENOSPC`));
		expect(warn).toHaveBeenCalledWith(expect.stringContaining("it stays as it was, in use"));
		expect(fs.existsSync(`${file()}~`)).toBe(false);
		// Later lines go on to the old file, and are there after a restart.
		await store.insert({ _id: "late", title: "Late" });
		compact.mockRestore();
		expect(readFileSync(file(), "utf8").split("\n").filter(Boolean)).toHaveLength(COMPACTION_FLOOR + 2);
	} finally {
		await store.disconnect();
	}
	const again = await games();
	try {
		expect(await again.find({})).toHaveLength(COMPACTION_FLOOR + 2);
	} finally {
		await again.disconnect();
	}
});
