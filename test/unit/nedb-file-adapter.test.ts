import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceBroker, type Service } from "moleculer";
import DbService from "moleculer-db";
import { createAdapter } from "../../lib/storage/adapter";
import { SERIALIZE_STEP } from "../../lib/storage/nedb-compaction";
import { COMPACTION_FLOOR } from "../../lib/storage/nedb-files";
import type { Store } from "../../mixins/db.mixin";

// The NeDB file adapter createAdapter gives without MONGO_URI, in a broker of its own, on a data
// folder of each test's own.

interface Datastore {
	compactDatafileAsync(): Promise<void>;
	insertAsync(doc: object | object[]): Promise<unknown>;
	updateAsync(query: object, update: object, options: object): Promise<unknown>;
}

type FileService = Service & Store & { adapter: { db: Datastore } };

let dataDir: string;
let broker: ServiceBroker;

beforeEach(() => {
	dataDir = mkdtempSync(path.join(tmpdir(), "catalogue-nedb-adapter-"));
});
afterEach(async () => {
	await broker?.stop();
	rmSync(dataDir, { recursive: true, force: true });
});

/** Starts a `categories` service storing in `dataDir/categories.db`. */
async function startCategories(): Promise<FileService> {
	broker = new ServiceBroker({ logger: false });
	const service = broker.createService({
		name: "categories",
		mixins: [DbService],
		adapter: createAdapter("categories", { mongoUri: null, storage: "file", dataDir }),
	} as never) as FileService;
	await broker.start();
	return service;
}

const file = () => path.join(dataDir, "categories.db");
const lines = () => readFileSync(file(), "utf8").split("\n").filter(Boolean).length;

describe("compaction while the service runs", () => {
	test("3,000 updates of one category leave the file within the floor, not 3,000 lines", async () => {
		const categories = await startCategories();
		const { _id } = await categories.adapter.insert({ name: "Euro" });
		const oneLine = statSync(file()).size;
		// What moleculer-db's update becomes in the services (lib/storage/adapter.ts, useNeDbPromises).
		for (let n = 0; n < 3000; n++) await categories.adapter.db.updateAsync({ _id }, { $set: { name: `Euro ${n % 10}` } }, {});
		await broker.stop();
		expect(lines()).toBeLessThanOrEqual(COMPACTION_FLOOR + 1);
		expect(statSync(file()).size).toBeLessThan((COMPACTION_FLOOR + 1) * (oneLine + 2));
	});

	test("a burst of concurrent writes queues one compaction at a time, and the writes all succeed", async () => {
		const categories = await startCategories();
		const compact = jest.spyOn(categories.adapter.db, "compactDatafileAsync");
		const written = await Promise.all(Array.from({ length: 2500 }, (_, n) => categories.adapter.insert({ name: `Category ${n}` })));
		expect(written).toHaveLength(2500);
		// The one compaction was queued behind the burst's writes, and ran once they were done.
		expect(compact).toHaveBeenCalledTimes(1);
		expect(await categories.adapter.count({})).toBe(2500);
	});

	test("a compaction that fails fails no write: it is logged as a warning and tried again later", async () => {
		const categories = await startCategories();
		jest.spyOn(categories.adapter.db, "compactDatafileAsync").mockRejectedValue(new Error("ENOSPC: no space left on device"));
		const warn = jest.spyOn(categories.logger, "warn");
		for (let n = 0; n <= COMPACTION_FLOOR; n++) await categories.adapter.insert({ name: `Category ${n}` });
		await new Promise(resolve => setImmediate(resolve));
		expect(warn).toHaveBeenCalledWith(expect.stringContaining(`Could not compact ${file()}`));
		expect(warn).toHaveBeenCalledTimes(1);
		expect(await categories.adapter.count({})).toBe(COMPACTION_FLOOR + 1);
	});

	test("no compaction starts once the service has stopped", async () => {
		const categories = await startCategories();
		const { db } = categories.adapter;
		const compact = jest.spyOn(db, "compactDatafileAsync");
		await broker.stop();
		for (let n = 0; n <= COMPACTION_FLOOR; n++) await db.insertAsync({ name: `Category ${n}` });
		expect(compact).not.toHaveBeenCalled();
	});
});

// NeDB's storage module: a compaction hands it every line of the new file.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const storage = require("@seald-io/nedb/lib/storage.js") as { crashSafeWriteFileLinesAsync(...args: unknown[]): Promise<void> };

test("a compaction of 20,000 records lets the event loop turn while it serializes them, and writes them all", async () => {
	const categories = await startCategories();
	const records = 20_000;
	await categories.adapter.db.insertAsync(Array.from({ length: records }, (_, n) => ({ name: `Category ${n}` })));
	// After the compaction those appends set off, so that the one timed below is the only one.
	await categories.adapter.db.compactDatafileAsync();
	let turns = 0;
	let ticking = true;
	const tick = () => {
		turns++;
		if (ticking) setImmediate(tick);
	};
	let turnsBeforeWrite = -1;
	const original = storage.crashSafeWriteFileLinesAsync;
	const write = jest.spyOn(storage, "crashSafeWriteFileLinesAsync").mockImplementation((...args) => {
		turnsBeforeWrite = turns;
		return original(...args);
	});
	try {
		setImmediate(tick);
		await categories.adapter.db.compactDatafileAsync();
	} finally {
		ticking = false;
		write.mockRestore();
	}
	// NeDB's own compaction serializes every record in one loop: no turn passes before the write.
	expect(turnsBeforeWrite).toBeGreaterThanOrEqual(records / SERIALIZE_STEP - 1);
	expect(lines()).toBe(records);
});

describe("what a crash during a compaction leaves (NeDB writes `<file>~`, then renames it)", () => {
	const records = ['{"name":"Euro","_id":"a"}', '{"name":"Ameritrash","_id":"b"}', '{"name":"Abstract","_id":"c"}'];

	test("the whole file and half a new one: the whole file is loaded, and the half is gone", async () => {
		writeFileSync(file(), records.join("\n") + "\n");
		writeFileSync(`${file()}~`, `${records[0]}\n{"name":"Amer`);
		const categories = await startCategories();
		expect(await categories.adapter.count({})).toBe(3);
		expect(existsSync(`${file()}~`)).toBe(false);
		expect(readFileSync(file(), "utf8")).toBe(records.join("\n") + "\n");
	});

	test("only the new file, written whole: it becomes the file", async () => {
		writeFileSync(`${file()}~`, records.join("\n") + "\n");
		const categories = await startCategories();
		expect(await categories.adapter.count({})).toBe(3);
		expect(existsSync(`${file()}~`)).toBe(false);
	});
});

test("a name holding U+2028, which NeDB's reader takes as a line break, is read back after a restart", async () => {
	let categories = await startCategories();
	const { _id } = await categories.adapter.insert({ name: "Euro\u2028games" });
	await broker.stop();
	categories = await startCategories();
	expect(await categories.adapter.findById(_id as string)).toEqual({ _id, name: "Euro\u2028games" });
});

test("NeDB's queue does not keep the records a find answered once it has answered them (it keeps its last task's result)", async () => {
	const categories = await startCategories();
	await categories.adapter.db.insertAsync(Array.from({ length: 100 }, (_, n) => ({ name: `Category ${n}` })));
	const found = await categories.adapter.find({});
	expect(found).toHaveLength(100);
	const { queue } = (categories.adapter.db as unknown as { executor: { queue: { guardian: Promise<{ result: unknown }> } } }).executor;
	expect((await queue.guardian).result).not.toBe(found);
});
