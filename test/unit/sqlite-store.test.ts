import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { ServiceBroker, type Service } from "moleculer";
import { constants, DatabaseSync } from "node:sqlite";
import { isDuplicateId } from "../../lib/storage/adapter";
import { SqliteAdapter, type SqliteAdapterOptions } from "../../lib/storage/sqlite-adapter";
import { DATABASE_FILE } from "../../lib/storage/location";
import { openDatabase, openForReading } from "../../lib/storage/sqlite-database";
import { orderBy, where } from "../../lib/storage/sqlite-query";
import { runsWith } from "../support/not-run";
import { canMountTmpfs, mountTmpfs, unmount } from "../support/tmpfs";
import { turnsDuring } from "../support/turns";

// The SQLite adapter on a real DATA_DIR, as moleculer-db drives it.

const broker = new ServiceBroker({ logger: false });
let root: string;
const connected: SqliteAdapter[] = [];

beforeAll(() => {
	root = mkdtempSync(path.join(tmpdir(), "sqlite-store-"));
});

afterEach(async () => {
	for (const adapter of connected.splice(0)) await adapter.disconnect();
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

const freshDataDir = () => mkdtempSync(path.join(root, "data-"));

/** A connected adapter for `collection` under `dataDir`, with the indexes the games service asks for, or `indexed`. */
async function store(
	dataDir: string,
	collection = "games",
	orders: string[][] = [["title"]],
	indexed: Pick<SqliteAdapterOptions, "indexes" | "sparseIndexes"> = { indexes: ["category"], sparseIndexes: ["draft"] },
): Promise<SqliteAdapter> {
	const adapter = new SqliteAdapter({ dataDir, holding: "alone", collection, ...indexed, orders });
	adapter.init(broker, { logger: broker.getLogger("store") } as unknown as Service);
	await adapter.connect();
	connected.push(adapter);
	return adapter;
}

const game = (n: number) => ({ _id: `g${String(n).padStart(4, "0")}`, title: `Title ${String(9999 - n).padStart(4, "0")}`, age: n % 18 });

/** `count` games, whose ids sort in the opposite order from their titles. */
const manyGames = (count: number) => Array.from({ length: count }, (_, n) => game(n));

describe("SqliteAdapter", () => {
	test("a record inserted is found by its id, with every field", async () => {
		const adapter = await store(freshDataDir());
		const record = { _id: "g1", title: `"Quoted" Café 🎲\u2028`, age: 12, category: "c1", change: { token: "t1", at: 5 } };
		expect(await adapter.insert(record)).toEqual(record);
		expect(await adapter.findById("g1")).toEqual(record);
		expect(await adapter.findById("nope")).toBeUndefined();
	});

	test("an id already stored is refused, recognised by isDuplicateId", async () => {
		const adapter = await store(freshDataDir());
		await adapter.insert({ _id: "g1", title: "First" });
		const refused: unknown = await adapter.insert({ _id: "g1", title: "Second" }).catch((err: unknown) => err);
		expect(refused).toMatchObject({ message: "UNIQUE constraint failed: games._id" });
		expect(isDuplicateId(refused)).toBe(true);
		expect(await adapter.findById("g1")).toEqual({ _id: "g1", title: "First" });
	});

	test("insertMany of a batch holding an id already stored stores none of it", async () => {
		const adapter = await store(freshDataDir());
		await adapter.insert({ _id: "g2", title: "Stored" });
		const batch = [
			{ _id: "g1", title: "New 1" },
			{ _id: "g2", title: "Again" },
			{ _id: "g3", title: "New 3" },
		];
		const refused: unknown = await adapter.insertMany(batch).catch((err: unknown) => err);
		expect(isDuplicateId(refused)).toBe(true);
		expect(await adapter.find({})).toEqual([{ _id: "g2", title: "Stored" }]);
		expect(await adapter.insertMany([batch[0], batch[2]])).toEqual([batch[0], batch[2]]);
		expect(await adapter.count()).toBe(3);
	});

	test("a failure other than a duplicate id is not taken for one", async () => {
		const adapter = await store(freshDataDir());
		const refused: unknown = await adapter.insert({ _id: "g1", title: 1n }).catch((err: unknown) => err);
		expect(refused).toMatchObject({ message: expect.stringContaining("BigInt") });
		expect(isDuplicateId(refused)).toBe(false);
	});

	test("a conditional updateMany changes the record only when the condition holds", async () => {
		const adapter = await store(freshDataDir());
		await adapter.insertMany([
			{ _id: "g1", title: "Draft", draft: 1 },
			{ _id: "g2", title: "Published" },
		]);
		const claim = { $set: { change: { token: "t1", at: 7 } } };
		expect(await adapter.updateMany({ _id: "g1", draft: { $exists: false } }, claim)).toBe(0);
		expect(await adapter.findById("g1")).toEqual({ _id: "g1", title: "Draft", draft: 1 });
		expect(await adapter.updateMany({ _id: "g2", draft: { $exists: false } }, claim)).toBe(1);
		expect(await adapter.findById("g2")).toEqual({ _id: "g2", title: "Published", change: { token: "t1", at: 7 } });
		// A second claim on the claimed record finds it taken.
		expect(await adapter.updateMany({ _id: "g2", change: { $exists: false } }, { $set: { change: { token: "t2" } } })).toBe(0);
		expect(await adapter.findOne({ "change.token": "t1" })).toMatchObject({ _id: "g2" });
	});

	test("updateById, removeById and removeMany answer what they changed", async () => {
		const adapter = await store(freshDataDir());
		await adapter.insertMany([game(1), game(2), game(3)]);
		expect(await adapter.updateById("g0001", { $set: { age: 99 } })).toEqual({ ...game(1), age: 99 });
		expect(await adapter.updateById("nope", { $set: { age: 99 } })).toBeUndefined();
		expect(await adapter.removeById("g0002")).toEqual(game(2));
		expect(await adapter.removeById("g0002")).toBeUndefined();
		expect(await adapter.findByIds(["g0003", "g0002", "g0001"])).toEqual([{ ...game(1), age: 99 }, game(3)]);
		expect(await adapter.removeMany({ age: { $gt: 50 } })).toBe(1);
		expect(await adapter.find({})).toEqual([game(3)]);
	});

	test("find with sort, limit and offset answers one page in order", async () => {
		const adapter = await store(freshDataDir());
		await adapter.insertMany(manyGames(20));
		const page = await adapter.find({ sort: ["title"], limit: 3, offset: 5 });
		expect(page.map(record => record._id)).toEqual(["g0014", "g0013", "g0012"]);
		const last = await adapter.find({ query: { age: { $lt: 10 } }, sort: ["-title"], limit: 4, offset: 8 });
		expect(last.map(record => record._id)).toEqual(["g0008", "g0009", "g0018", "g0019"]);
		expect(await adapter.find({ sort: ["title"], offset: 18 })).toEqual([game(1), game(0)]);
		expect(await adapter.count({ query: { age: { $lt: 10 } } })).toBe(12);
	});

	test("pages are read from the indexes the options name, never sorted afresh", async () => {
		const dataDir = freshDataDir();
		const adapter = await store(dataDir);
		await adapter.insertMany(manyGames(100));
		// The same database, the process's one: opening the DATA_DIR again shares it.
		const database = openDatabase(dataDir, "alone");
		try {
			// The indexed fields are columns of the table.
			const columns = new Set(["title", "category", "draft"]);
			const plan = (query: Record<string, unknown>, sort: string[] = []) => {
				const condition = where(query, columns);
				const order = sort.length > 0 ? ` ORDER BY ${orderBy(sort, columns)}` : "";
				const sql = `EXPLAIN QUERY PLAN SELECT _id, doc FROM games WHERE ${condition.sql}${order} LIMIT 10`;
				return (database.writer.prepare(sql).all(...condition.values) as { detail: string }[]).map(row => row.detail).join("; ");
			};
			expect(plan({}, ["title"])).toBe("SCAN games USING INDEX games_by_title");
			expect(plan({ category: "c1" })).toBe("SEARCH games USING INDEX games_category (category=?)");
			expect(plan({ draft: { $exists: true } })).toBe("SEARCH games USING INDEX games_draft (draft>?)");
		} finally {
			database.release();
		}
		expect(await adapter.count()).toBe(100);
	});

	test("a find without a limit answers every record in order, the event loop free meanwhile", async () => {
		const adapter = await store(freshDataDir());
		const games = manyGames(5000);
		await adapter.insertMany(games);
		let turned = false;
		setImmediate(() => (turned = true));
		const listing = adapter.find({ sort: ["title"] }).then(records => ({ records, turnedBefore: turned }));
		const { records, turnedBefore } = await listing;
		expect(turnedBefore).toBe(true);
		expect(records).toEqual(games.reverse());
	});

	test("a write during a long find commits at once, seen by any read that starts after", async () => {
		const dataDir = freshDataDir();
		const adapter = await store(dataDir);
		await adapter.insertMany(manyGames(5000));
		let finished = false;
		const listing = adapter.find({ sort: ["title"] }).finally(() => (finished = true));
		await nextTurn();
		expect(finished).toBe(false);

		const late = { _id: "late", title: "Zz late" };
		await adapter.insert(late);
		expect(await adapter.findById("late")).toEqual(late);
		// Committed: a connection of its own, outside this process's shared database, reads it.
		const reader = openForReading(dataDir);
		try {
			expect(reader.prepare("SELECT _id FROM games WHERE _id = 'late'").get()).toEqual({ _id: "late" });
		} finally {
			reader.close();
		}
		expect(finished).toBe(false);
		// A long read begun after the write sees it, though the first long read is still open (a list made then is cached as current).
		const begunAfter = await adapter.find({ sort: ["title"] });
		expect(begunAfter).toHaveLength(5001);
		expect(begunAfter[5000]).toEqual(late);
		expect(await adapter.count()).toBe(5001);

		// The long find answers the records as they were when it began.
		expect(await listing).toHaveLength(5000);
		const after = await adapter.find({ sort: ["title"] });
		expect(after).toHaveLength(5001);
		expect(after[5000]).toEqual(late);
	});

	test("a transaction the disk refuses, which SQLite rolls back itself, is refused as such: noted for readiness, none of it stored", async () => {
		const adapter = await store(freshDataDir());
		const { writer } = (adapter as unknown as { database: { writer: DatabaseSync } }).database;
		const pages = (writer.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
		// The database may not grow: as a full disk, SQLITE_FULL.
		writer.exec(`PRAGMA max_page_count = ${pages}`);
		const batch = manyGames(200).map(record => ({ ...record, title: `${record.title} ${"x".repeat(2000)}` }));
		await expect(adapter.insertMany(batch)).rejects.toMatchObject({ errcode: 13, message: "database or disk is full" });
		expect(adapter.refusedWrites).toBe("database or disk is full");
		expect(await adapter.count()).toBe(0);
		writer.exec("PRAGMA max_page_count = 1073741823");
		await adapter.insertMany(batch);
		expect(adapter.refusedWrites).toBeUndefined();
		expect(await adapter.count()).toBe(200);
	});

	test("the records without a field are counted in one snapshot: another process's write cannot come between its two counts", async () => {
		const dataDir = freshDataDir();
		const adapter = await store(dataDir);
		await adapter.insert({ _id: "g1", title: "Shown" });
		// Another process on the same file: a connection of its own.
		const other = new DatabaseSync(path.join(dataDir, DATABASE_FILE), { timeout: 5000 });
		const database = (adapter as unknown as { database: { prepared(sql: string): { get(...values: unknown[]): unknown } } }).database;
		const { prepared } = database;
		let wrote = false;
		database.prepared = (sql: string) => {
			const statement = prepared(sql);
			return {
				get(...values: unknown[]) {
					const row = statement.get(...values);
					// Right after the first statement of the count: a draft stored by the other process.
					if (!wrote) other.prepare("INSERT INTO games (_id, doc, draft) VALUES ('g2', '{\"draft\":1}', 1)").run();
					wrote = true;
					return row;
				},
			};
		};
		try {
			expect(await adapter.count({ query: { draft: { $exists: false } } })).toBe(1);
		} finally {
			database.prepared = prepared;
			other.close();
		}
		expect(wrote).toBe(true);
		expect(await adapter.count({ query: { draft: { $exists: false } } })).toBe(1);
		expect(await adapter.count()).toBe(2);
	});

	test("the records are still there once the store is closed and opened again", async () => {
		const dataDir = freshDataDir();
		const first = await store(dataDir);
		await first.insertMany(manyGames(3));
		await first.updateById("g0001", { $set: { title: "Changed" } });
		await first.disconnect();

		const again = await store(dataDir);
		expect(await again.find({})).toEqual([game(0), { ...game(1), title: "Changed" }, game(2)]);
	});

	test("a table made by a version that indexed other fields is made again with today's columns, its records kept", async () => {
		const dataDir = freshDataDir();
		const before = await store(dataDir, "games", [["title"]]);
		await before.insertMany(manyGames(30));
		await before.disconnect();

		const after = await store(dataDir, "games", [["age", "_id"]]);
		expect(await after.count()).toBe(30);
		expect((await after.find({ sort: ["-age", "_id"], limit: 1 }))[0]).toMatchObject({ age: expect.any(Number) });
		const database = openDatabase(dataDir, "alone");
		try {
			const columns = (database.writer.prepare("PRAGMA table_xinfo(games)").all() as { name: string }[]).map(({ name }) => name);
			expect(columns.sort()).toEqual(["_id", "age", "category", "doc", "draft"]);
			const plan = database.writer.prepare("EXPLAIN QUERY PLAN SELECT _id FROM games ORDER BY age, _id LIMIT 5").all() as {
				detail: string;
			}[];
			expect(plan.map(step => step.detail)).toEqual(["SCAN games USING COVERING INDEX games_by_age__id"]);
		} finally {
			database.release();
		}
	});

	test("a table of an earlier version, its columns generated from `doc`, is made again with columns the adapter writes", async () => {
		const dataDir = freshDataDir();
		const earlier = openDatabase(dataDir, "alone");
		const generated = (field: string) => `"${field}" AS (json_extract(doc, '$.${field}')) STORED`;
		earlier.writer.exec(
			`CREATE TABLE games (_id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL, ${["category", "draft", "title"].map(generated).join(", ")})`,
		);
		const insert = earlier.writer.prepare("INSERT INTO games (_id, doc) VALUES (?, ?)");
		for (const { _id, ...doc } of manyGames(3)) insert.run(_id, JSON.stringify({ ...doc, category: "c1" }));
		earlier.release();

		const adapter = await store(dataDir);
		const database = openDatabase(dataDir, "alone");
		try {
			const columns = database.writer.prepare("PRAGMA table_xinfo(games)").all() as { name: string; hidden: number }[];
			expect(columns.filter(({ hidden }) => hidden !== 0)).toEqual([]);
			expect(await adapter.updateById("g0001", { $set: { title: "Changed" } })).toMatchObject({ title: "Changed" });
			expect(await adapter.find({ query: { category: "c1" }, sort: ["title"] })).toEqual([
				{ ...game(1), category: "c1", title: "Changed" },
				{ ...game(2), category: "c1" },
				{ ...game(0), category: "c1" },
			]);
		} finally {
			database.release();
		}
	});

	test("each indexed column holds its field's value through inserts, claims, releases and updates", async () => {
		const dataDir = freshDataDir();
		const adapter = await store(dataDir, "games", [["draft", "title", "_id"]], {
			indexes: ["category"],
			sparseIndexes: ["draft", "change.at", "change.category"],
		});
		const database = openDatabase(dataDir, "alone");
		const mismatched = () =>
			database.writer
				.prepare(
					`SELECT _id FROM games WHERE ${["category", "draft", "title", "change.at", "change.category"]
						.map(field => `"${field}" IS NOT json_extract(doc, '$.${field}')`)
						.join(" OR ")}`,
				)
				.all();
		try {
			await adapter.insertMany(manyGames(4).map(record => ({ ...record, category: "c1" })));
			await adapter.insert({ _id: "draft", title: "Draft", category: "c2", draft: 17 });
			expect(mismatched()).toEqual([]);
			await adapter.updateMany({ _id: "draft", draft: { $exists: true } }, { $unset: { draft: true } });
			await adapter.updateMany(
				{ _id: "g0001", change: { $exists: false } },
				{ $set: { change: { token: "t1", at: 5, category: "c9" } } },
			);
			expect(mismatched()).toEqual([]);
			expect((await adapter.find({ query: { "change.category": "c9" } })).map(record => record._id)).toEqual(["g0001"]);
			await adapter.updateMany(
				{ _id: "g0001", "change.token": "t1" },
				{ $set: { title: "New", category: "c9" }, $unset: { change: true } },
			);
			await adapter.updateById("g0002", { $set: { age: 3 } });
			expect(mismatched()).toEqual([]);
			expect(await adapter.count({ query: { "change.at": { $exists: true } } })).toBe(0);
			expect(await adapter.count({ query: { draft: { $exists: false } } })).toBe(5);
			expect((await adapter.find({ query: { category: "c9" } })).map(record => record.title)).toEqual(["New"]);
		} finally {
			database.release();
		}
	});

	test("an update rewrites the index pages of the fields it names only", async () => {
		const dataDir = freshDataDir();
		const adapter = await store(dataDir, "games", [
			["title", "_id"],
			["age", "_id"],
			["draft", "title", "_id"],
			["draft", "age", "_id"],
		]);
		await adapter.insertMany(manyGames(200).map(record => ({ ...record, category: "c1" })));
		const database = openDatabase(dataDir, "alone");
		/** The pages the log gains while `write` runs. */
		const logPages = async (write: () => Promise<unknown>) => {
			database.writer.exec("PRAGMA wal_checkpoint(TRUNCATE)");
			await write();
			return (database.writer.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as { log: number }).log;
		};
		try {
			// The table's page alone, against it and the pages of the two indexes on `age`.
			const unindexed = await logPages(() => adapter.updateById("g0100", { $set: { note: "n" } }));
			const indexed = await logPages(() => adapter.updateById("g0100", { $set: { age: 99 } }));
			expect(unindexed).toBe(1);
			expect(indexed).toBeGreaterThan(2);
		} finally {
			database.release();
		}
	});

	test("a read by id, a page and a look at the feed compile their statements once, whatever their limit and values", async () => {
		const dataDir = freshDataDir();
		const adapter = await store(dataDir);
		await adapter.insertMany(manyGames(30));
		await adapter.recordedWrite({ insert: [{ _id: "x", title: "x" }] }, id => ({ id, record: { id } }));
		const reads = (n: number) =>
			Promise.all([
				adapter.find({ query: { _id: game(n)._id }, limit: 1 }),
				adapter.find({ sort: ["title"], limit: 5, offset: n }),
				adapter.changesAfter(n, 10),
				adapter.unpublished(10),
			]);
		const database = openDatabase(dataDir, "alone");
		// SQLite asks the authorizer while it compiles a statement: at its first run, and again at each run it compiles anew.
		let compiled = 0;
		database.writer.setAuthorizer(action => {
			if (action === constants.SQLITE_SELECT) compiled++;
			return constants.SQLITE_OK;
		});
		try {
			await reads(0);
			expect(compiled).toBeGreaterThan(0);
			compiled = 0;
			for (let n = 1; n < 10; n++) await reads(n);
			// A bound LIMIT is compiled again at each new binding, since SQLite plans with its value.
			expect(compiled).toBe(0);
		} finally {
			database.writer.setAuthorizer(null);
			database.release();
		}
	});

	test("the collections of one DATA_DIR share one database file, opened once in the process", async () => {
		const dataDir = freshDataDir();
		const games = await store(dataDir, "games");
		const authors = await store(dataDir, "authors");
		await games.insert({ _id: "g1", title: "Agricola" });
		await authors.insert({ _id: "a1", name: "Uwe Rosenberg" });
		// Beside the database (and its WAL), only the lock file and its journal.
		expect(readdirSync(dataDir).filter(name => !name.startsWith(DATABASE_FILE) && !name.startsWith("catalogue.lock"))).toEqual([]);

		const first = openDatabase(dataDir, "alone");
		const second = openDatabase(dataDir, "shared");
		expect(second).toBe(first);
		expect(first.file).toBe(path.join(dataDir, DATABASE_FILE));
		const rows = first.writer.prepare("SELECT (SELECT count(*) FROM games) AS games, (SELECT count(*) FROM authors) AS authors").get();
		expect(rows).toEqual({ games: 1, authors: 1 });
		first.release();
		second.release();

		// The adapters' own hold on the database outlives the two released above.
		await games.disconnect();
		expect(await authors.findById("a1")).toEqual({ _id: "a1", name: "Uwe Rosenberg" });
	});
});

describe("writes of one record that answer it, on a real full disk (a tmpfs)", () => {
	if (
		!runsWith(canMountTmpfs(), {
			notRun: "The full-disk adapter tests did NOT run: they mount a small tmpfs, which needs root (or CAP_SYS_ADMIN)",
			hint: "Run the tests as root, as CI does.",
			name: "refuses answering writes a full disk did not store",
		})
	)
		return;

	let dataDir: string;
	beforeAll(() => {
		dataDir = freshDataDir();
		mountTmpfs(dataDir, "1m");
	});
	afterAll(() => unmount(dataDir));

	// Their commit is the statement's end, where the log's pages are written: a disk that refuses them must refuse the write, not
	// answer the record as changed (node:sqlite's `get` would drop that failure).
	test("updateOne, updateById and removeById are refused, and the record stays as it was", async () => {
		const adapter = await store(dataDir);
		await adapter.insert(game(1));
		for (let n = 2; ; n++) {
			const refused = await adapter.insert({ ...game(n), title: "x".repeat(3000) }).then(
				() => false,
				() => true,
			);
			if (refused) break;
		}
		const big = { $set: { title: "y".repeat(20_000) } };
		await expect(adapter.updateOne({ _id: "g0001" }, big)).rejects.toMatchObject({ errcode: 13 });
		await expect(adapter.updateById("g0001", big)).rejects.toMatchObject({ errcode: 13 });
		await expect(adapter.removeById("g0001")).rejects.toMatchObject({ errcode: 13 });
		expect(await adapter.findById("g0001")).toEqual(game(1));
	});
});

describe("the change feed's table (docs/followers.md)", () => {
	const change = (id: string) => ({ id: `change-${id}`, record: { id } });
	const write = (adapter: SqliteAdapter, id: string) => adapter.recordedWrite({ insert: [{ _id: id, title: id }] }, change);

	test("a write refused by the store records no change, and the seq of the next one follows the last", async () => {
		const adapter = await store(freshDataDir());
		expect((await write(adapter, "a")).changes.map(recorded => recorded.seq)).toEqual([1]);
		await expect(write(adapter, "a")).rejects.toMatchObject({ duplicateId: true });
		expect((await write(adapter, "b")).changes.map(recorded => recorded.seq)).toEqual([2]);
		expect((await adapter.changesAfter(0, 10)).changes.map(recorded => recorded.id)).toEqual(["change-a", "change-b"]);
	});

	test("the records one write changes are numbered in id order, as MongoDB finds them", async () => {
		const adapter = await store(freshDataDir());
		await adapter.insertMany(["c", "a", "b"].map(_id => ({ _id, title: _id })));
		const { changes } = await adapter.recordedWrite(
			{ query: { _id: { $in: ["b", "c", "a"] } }, update: { $set: { title: "x" } } },
			change,
		);
		expect(changes.map(recorded => recorded.id)).toEqual(["change-a", "change-b", "change-c"]);
	});

	test("the published mark never goes back (two replicas noting out of order)", async () => {
		const adapter = await store(freshDataDir());
		for (const id of ["a", "b", "c"]) await write(adapter, id);
		await adapter.markPublished(3);
		await adapter.markPublished(1);
		expect((await adapter.unpublished(10)).published).toBe(3);
	});

	test("a prune of 2,500 changes drops them 1,000 at a time, the event loop turning between", async () => {
		const adapter = await store(freshDataDir());
		for (let i = 0; i < 2600; i++) await write(adapter, `g${i}`);
		const { result: dropped, turns } = await turnsDuring(() => adapter.pruneChanges({ maxAgeMs: 60_000, maxChanges: 100 }));
		expect(dropped).toBe(2500);
		expect(turns).toBeGreaterThanOrEqual(2);
		expect((await adapter.changesAfter(0, 10)).first).toBe(2501);
	});

	test("pruning keeps what is not published, and never leaves a hole when the clock went back", async () => {
		const adapter = await store(freshDataDir());
		for (const id of ["a", "b", "c", "d"]) await write(adapter, id);
		await adapter.markPublished(2);
		expect(await adapter.pruneChanges({ maxAgeMs: 60_000, maxChanges: 0 }, true)).toBe(2);
		expect((await adapter.changesAfter(0, 10)).first).toBe(3);
		// Change 4 written with an older time than change 3 (the clock set back between them): the age cut keeps it until 3 is old.
		const { writer } = (adapter as unknown as { database: { writer: { exec(sql: string): void } } }).database;
		writer.exec("UPDATE games_changes SET at = at + 1000000 WHERE seq = 3");
		writer.exec("UPDATE games_changes SET at = 0 WHERE seq = 4");
		const kept = async () => {
			const { changes, first, last } = await adapter.changesAfter(0, 10);
			return { first, last, seqs: changes.map(recorded => recorded.seq) };
		};
		expect(await adapter.pruneChanges({ maxAgeMs: 1, maxChanges: 100 }, false)).toBe(0);
		expect(await kept()).toEqual({ first: 3, last: 4, seqs: [3, 4] });
		writer.exec("UPDATE games_changes SET at = 0 WHERE seq = 3");
		expect(await adapter.pruneChanges({ maxAgeMs: 1, maxChanges: 100 }, false)).toBe(2);
		expect(await kept()).toEqual({ first: 5, last: 4, seqs: [] });
	});
});
