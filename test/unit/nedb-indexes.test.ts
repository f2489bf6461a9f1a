import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceBroker, type Service } from "moleculer";
import { createAdapter, dropIndexes } from "../../lib/storage/adapter";

// A games.db written before NeDB's indexes on category and author were dropped still records
// them, and NeDB creates again every index its file records: they are removed at start.

type NeDb = Parameters<typeof dropIndexes>[0];

let dataDir: string;
beforeEach(async () => (dataDir = await mkdtemp(path.join(tmpdir(), "catalogue-indexes-"))));
afterEach(() => rm(dataDir, { recursive: true, force: true }));

/** The games' NeDB store in `dataDir`, loaded from its file. */
async function load(): Promise<NeDb> {
	const adapter = createAdapter("games", { storage: "file", dataDir, mongoUri: null });
	const broker = new ServiceBroker({ logger: false });
	adapter.init(broker, { broker, logger: broker.getLogger("games") } as unknown as Service);
	await adapter.connect();
	return (adapter as unknown as { db: NeDb }).db;
}

test("an index an older file records is dropped, and stays dropped after the next load", async () => {
	const game = {
		_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV",
		title: "Tigris",
		age: 12,
		category: "01ARZ3NDEKTSV4RRFFQ69G5FAW",
		author: "01ARZ3NDEKTSV4RRFFQ69G5FAX",
	};
	const lines = [
		{ $$indexCreated: { fieldName: "category", unique: false, sparse: false } },
		{ $$indexCreated: { fieldName: "author", unique: false, sparse: false } },
		game,
	];
	await writeFile(path.join(dataDir, "games.db"), lines.map(line => JSON.stringify(line)).join("\n") + "\n");
	const before = await load();
	expect(Object.keys(before.indexes).sort()).toEqual(["_id", "author", "category"]);
	await dropIndexes(before, ["category", "author"]);
	expect(Object.keys(before.indexes)).toEqual(["_id"]);
	expect(Object.keys((await load()).indexes)).toEqual(["_id"]);
	expect(await readFile(path.join(dataDir, "games.db"), "utf8")).toContain("Tigris");
});

test("a store without those indexes is left as it is: nothing is written", async () => {
	await writeFile(path.join(dataDir, "games.db"), "");
	const db = await load();
	const size = (await readFile(path.join(dataDir, "games.db"))).length;
	await dropIndexes(db, ["category", "author"]);
	expect((await readFile(path.join(dataDir, "games.db"))).length).toBe(size);
});
