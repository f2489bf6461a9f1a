import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import fsPromises from "node:fs/promises";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { backupDataDir, backupText, MANIFEST } from "../../lib/storage/backup";
import { DATABASE_FILE, noFilesToBackUp } from "../../lib/storage/location";
import { SqliteAdapter } from "../../lib/storage/sqlite-adapter";
import { BACKUP_NOTE, openDatabase, type Database } from "../../lib/storage/sqlite-database";
import { runsWith } from "../support/not-run";
import { withTables } from "../support/sqlite";
import { canMountTmpfs, mountTmpfs, remountReadOnly, unmount } from "../support/tmpfs";

// lib/storage/backup.ts on a SQLite database this process holds open and writes, as the REPL's node does.

let root: string;
let dataDir: string;
let target: string;
let database: Database;
beforeEach(async () => {
	root = await mkdtemp(path.join(tmpdir(), "catalogue-backup-"));
	[dataDir, target] = [path.join(root, "data"), path.join(root, "backup")];
	mkdirSync(dataDir);
	database = withTables(openDatabase(dataDir, "alone"));
});
afterEach(async () => {
	jest.restoreAllMocks();
	database.release();
	await rm(root, { recursive: true, force: true });
});

const insert = (collection: string, id: string, doc: object) =>
	database.writer.prepare(`INSERT INTO ${collection} (_id, doc) VALUES (?, ?)`).run(id, JSON.stringify(doc));

/** A category, an author and a game in them; `n` tells them apart. */
function records(n: number): void {
	insert("categories", `c${n}`, { name: `Category ${n}` });
	insert("authors", `a${n}`, { name: `Author ${n}`, nationality: "German" });
	insert("games", `g${n}`, { title: `Game ${n}`, age: 10, category: `c${n}`, author: `a${n}` });
}

const rowsOf = (file: string, collection: string) => {
	const copy = new DatabaseSync(file, { readOnly: true });
	try {
		return copy.prepare(`SELECT _id, doc FROM ${collection} ORDER BY _id`).all();
	} finally {
		copy.close();
	}
};

test("copies the database whole, counts each collection, and writes backup.json last", async () => {
	records(1);
	records(2);
	const backup = await backupDataDir(dataDir, target);
	const copy = path.join(target, DATABASE_FILE);
	for (const collection of ["categories", "authors", "games"])
		expect(rowsOf(copy, collection)).toEqual(database.writer.prepare(`SELECT _id, doc FROM ${collection} ORDER BY _id`).all());
	expect(backup).toMatchObject({ dataDir, collections: { categories: 2, authors: 2, games: 2 }, orphans: 0 });
	expect(JSON.parse(readFileSync(path.join(target, MANIFEST), "utf8"))).toEqual(backup);
	expect(readdirSync(target).sort()).toEqual([MANIFEST, DATABASE_FILE].sort());
	expect(backupText(backup, target)).toMatch(/snapshot at [^]*\ngames\s+2$/);
});

test("counts the games as the services do: a draft (a write in progress, even one without its category) is copied, not counted", async () => {
	records(1);
	insert("games", "g8", { title: "Draft", age: 1, category: "c-gone", author: "a1", draft: Date.now() });
	const backup = await backupDataDir(dataDir, target);
	expect(backup).toMatchObject({ collections: { categories: 1, authors: 1, games: 1 }, orphans: 0 });
	expect(rowsOf(path.join(target, DATABASE_FILE), "games")).toHaveLength(2);
});

test("one snapshot while this process keeps writing: every game's category and author are in the copy", async () => {
	records(0);
	let n = 1;
	let writing = true;
	// A category, then a game in it, each its own commit, as the catalogue writes them.
	const writer = (async () => {
		while (writing) {
			insert("categories", `c${n}`, { name: `Category ${n}` });
			await new Promise(resolve => setImmediate(resolve));
			insert("games", `g${n}`, { title: `Game ${n}`, age: 1, category: `c${n}`, author: "a0" });
			n++;
			await new Promise(resolve => setImmediate(resolve));
		}
	})();
	await new Promise(resolve => setTimeout(resolve, 50));
	const backup = await backupDataDir(dataDir, target);
	writing = false;
	await writer;
	expect(backup.orphans).toBe(0);
	expect(backup.collections.games).toBeGreaterThan(1);
	expect(rowsOf(path.join(target, DATABASE_FILE), "games")).toHaveLength(backup.collections.games!);
});

test("counts the games the database itself holds without their category, and says so", async () => {
	records(1);
	insert("games", "g9", { title: "Orphan", age: 1, category: "c-gone", author: "a1" });
	const backup = await backupDataDir(dataDir, target);
	expect(backup.orphans).toBe(1);
	expect(backupText(backup, target)).toContain("1 game(s) refer to a missing category or author, in the database itself");
});

test("a copy that fails halfway leaves the earlier backup whole, its manifest included, and no partial file", async () => {
	records(1);
	await backupDataDir(dataDir, target);
	const before = Object.fromEntries(readdirSync(target).map(name => [name, readFileSync(path.join(target, name))]));
	records(2);
	jest.spyOn(fsPromises, "stat").mockRejectedValueOnce(Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" }));
	await expect(backupDataDir(dataDir, target)).rejects.toMatchObject({ code: "ENOSPC" });
	const after = Object.fromEntries(readdirSync(target).map(name => [name, readFileSync(path.join(target, name))]));
	expect(Object.keys(after).sort()).toEqual([MANIFEST, DATABASE_FILE].sort());
	expect(after[DATABASE_FILE].equals(before[DATABASE_FILE])).toBe(true);
	expect(JSON.parse(after[MANIFEST].toString()).collections).toEqual({ categories: 1, authors: 1, games: 1 });
});

test.each([
	["a file", (file: string) => writeFileSync(file, ""), (file: string) => file, "is a file"],
	["a path under a file", (file: string) => writeFileSync(file, ""), (file: string) => path.join(file, "backup"), "is under a file"],
])("a target that is %s is refused, naming it", async (_case, make, targetOf, why) => {
	records(1);
	const file = path.join(root, "a-file");
	make(file);
	await expect(backupDataDir(dataDir, targetOf(file))).rejects.toThrow(
		`The backup's folder ${targetOf(file)} ${why}: give a folder this process can write into.`,
	);
});

test("refuses the data folder itself as the target, by its name or through a link", async () => {
	const link = path.join(root, "link");
	symlinkSync(dataDir, link);
	for (const same of [dataDir, `${dataDir}/`, link])
		await expect(backupDataDir(dataDir, same)).rejects.toThrow("is the data folder itself: give another one");
});

test("another catalogue's data folder (one that holds its lock) is refused as the target, and left as it was", async () => {
	const other = path.join(root, "other");
	mkdirSync(other);
	const running = withTables(openDatabase(other, "alone"));
	try {
		running.writer.prepare("INSERT INTO categories (_id, doc) VALUES ('x', '{\"name\":\"Kept\"}')").run();
		const before = readdirSync(other).sort();
		await expect(backupDataDir(dataDir, other)).rejects.toThrow(
			`The backup's folder ${other} is a catalogue's data folder (it holds catalogue.lock)`,
		);
		expect(readdirSync(other).sort()).toEqual(before);
		expect(running.writer.prepare("SELECT count(*) AS n FROM categories").get()).toEqual({ n: 1 });
	} finally {
		running.release();
	}
});

test("a folder without a catalogue database is refused, naming the file", async () => {
	const empty = path.join(root, "empty");
	mkdirSync(empty);
	await expect(backupDataDir(empty, target)).rejects.toThrow(
		`${path.join(empty, DATABASE_FILE)} cannot be read: no catalogue database is there. DATA_DIR must name the folder where the catalogue keeps its records, on this machine.`,
	);
	expect(readdirSync(empty)).toEqual([]);
});

test("a folder holding only an earlier version's files is refused, saying that the catalogue's first start migrates them", async () => {
	const earlier = path.join(root, "earlier");
	mkdirSync(earlier);
	writeFileSync(path.join(earlier, "games.db"), "");
	await expect(backupDataDir(earlier, target)).rejects.toThrow(
		`${path.join(earlier, DATABASE_FILE)} cannot be read: the folder holds an earlier version's files (games.db), which the catalogue moves into its database at its first start: start it once, then run this again.`,
	);
});

test("MongoDB and memory have no files to back up: the operator is told what to use instead", () => {
	expect(noFilesToBackUp({ mongoUri: "mongodb://db/catalogue", storage: "file" })).toContain(
		"Back it up with `mongodump --oplog` and restore it with `mongorestore --oplogReplay`",
	);
	expect(noFilesToBackUp({ mongoUri: null, storage: "memory" })).toBe("STORAGE=memory keeps no files: there is nothing to back up.");
	expect(noFilesToBackUp({ mongoUri: null, storage: "file" })).toBeUndefined();
});

test("a node of one service (its own DATA_DIR, as on several hosts): its collection copied and counted, no orphans counted", async () => {
	const gamesOnly = path.join(root, "games-node");
	mkdirSync(gamesOnly);
	const games = openDatabase(gamesOnly, "alone");
	try {
		games.writer.exec("CREATE TABLE games (_id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL)");
		games.writer
			.prepare("INSERT INTO games (_id, doc) VALUES ('g1', ?)")
			.run(JSON.stringify({ title: "T", category: "c", author: "a" }));
		const backup = await backupDataDir(gamesOnly, target);
		expect(backup.collections).toEqual({ games: 1 });
		expect(backup.orphans).toBeUndefined();
		expect(rowsOf(path.join(target, DATABASE_FILE), "games")).toHaveLength(1);
		expect(backupText(backup, target)).toMatch(/\ngames\s+1$/);
	} finally {
		games.release();
	}
});

test("a catalogue restored from a backup numbers its feed on past every seq handed out before, and empties it: followers read again", async () => {
	const games = (dir: string) =>
		new SqliteAdapter({ dataDir: dir, holding: "alone", collection: "games", indexes: [], sparseIndexes: [], orders: [] });
	const write = (store: SqliteAdapter, id: string) =>
		store.recordedWrite({ insert: [{ _id: id, title: id }] }, () => ({ type: "created", record: { id } }));
	const live = games(dataDir);
	await live.connect();
	for (const id of ["g1", "g2", "g3"]) await write(live, id);
	await backupDataDir(dataDir, target);
	// Handed out after the backup: a follower may have seen these, which the restore undoes.
	for (const id of ["g4", "g5", "g6"]) await write(live, id);
	const seen = (await live.changesAfter(0, 500)).last;
	expect(seen).toBe(6);
	await live.disconnect();

	const restoredDir = path.join(root, "restored");
	mkdirSync(restoredDir);
	await fsPromises.copyFile(path.join(target, DATABASE_FILE), path.join(restoredDir, DATABASE_FILE));
	const restored = games(restoredDir);
	await restored.connect();
	const feed = await restored.changesAfter(seen, 500);
	expect(feed.changes).toEqual([]);
	// `first > after + 1`: a follower at any position handed out before starts again from a full read.
	expect(feed.first).toBeGreaterThan(seen + 1);
	expect(String(feed.last)).toMatch(/^\d{15}$/);
	expect(await restored.findById("g4")).toBeUndefined();
	const [next] = (await write(restored, "g7")).changes;
	expect(next.seq).toBe(feed.last + 1);
	// The outbox starts from there too: nothing of the jump counts as unpublished, and the stream is to be told first.
	expect(await restored.unpublished(500)).toMatchObject({ published: feed.last, last: feed.last + 1, reset: feed.last });
	await restored.disconnect();

	// Once: opened again, the feed keeps its place, and the stream's reset waits until noted, by its own restore only.
	const reopened = games(restoredDir);
	await reopened.connect();
	expect((await reopened.changesAfter(0, 500)).changes.map(change => change.seq)).toEqual([next.seq]);
	await reopened.markReset(feed.last - 1);
	expect(await reopened.unpublished(500)).toMatchObject({ reset: feed.last });
	await reopened.markReset(feed.last);
	expect(await reopened.unpublished(500)).toMatchObject({ reset: null });
	await reopened.disconnect();
	// The live database was not marked: only the backup's copy is.
	const own = new DatabaseSync(path.join(dataDir, DATABASE_FILE), { readOnly: true });
	expect(own.prepare("SELECT count(*) AS n FROM catalogue_meta WHERE key = ?").get(BACKUP_NOTE)).toEqual({ n: 0 });
	own.close();
});

describe("on a real tmpfs: a full disk, a folder mounted read-only", () => {
	if (
		!runsWith(canMountTmpfs(), {
			notRun: "The tmpfs backup tests (a full disk, a folder mounted read-only) did NOT run: they mount a tmpfs, which needs root (or CAP_SYS_ADMIN)",
			hint: "Run the tests as root, as CI does.",
			name: "on a real tmpfs: a full disk, a folder mounted read-only",
		})
	)
		return;

	test("a backup refused by a full disk leaves the earlier one whole and nothing beside it (no copy, log or journal)", async () => {
		mkdirSync(target);
		mountTmpfs(target, "3m");
		try {
			let n = 0;
			const games = (count: number) => {
				for (const end = n + count; n < end; n++)
					insert("games", `g${n}`, { title: "x".repeat(1500), age: 1, category: "c", author: "a" });
			};
			games(600);
			await backupDataDir(dataDir, target);
			const before = Object.fromEntries(readdirSync(target).map(name => [name, readFileSync(path.join(target, name))]));
			let refused: unknown;
			while (!refused) {
				// A few games at a time: the copy that first does not fit may fail in any of its steps (the copy, its log, its note).
				games(5);
				refused = await backupDataDir(dataDir, target).then(
					() => undefined,
					(err: unknown) => err,
				);
				if (!refused)
					Object.assign(
						before,
						Object.fromEntries(readdirSync(target).map(name => [name, readFileSync(path.join(target, name))])),
					);
			}
			expect((refused as Error).message).toMatch(/disk is full|disk I\/O error/);
			const after = Object.fromEntries(readdirSync(target).map(name => [name, readFileSync(path.join(target, name))]));
			expect(Object.keys(after).sort()).toEqual([MANIFEST, DATABASE_FILE].sort());
			for (const name of [MANIFEST, DATABASE_FILE]) expect(after[name].equals(before[name])).toBe(true);
		} finally {
			unmount(target);
		}
	}, 30_000);

	describe("a catalogue's folder mounted read-only, as a backup job mounts a volume", () => {
		let mounted: string;
		beforeEach(() => {
			mounted = path.join(root, "mounted");
			mkdirSync(mounted);
			mountTmpfs(mounted, "8m");
			const stopped = withTables(openDatabase(mounted, "alone"));
			stopped.writer.prepare("INSERT INTO categories (_id, doc) VALUES (?, ?)").run("c1", JSON.stringify({ name: "Abstract" }));
			stopped.release();
		});
		afterEach(() => unmount(mounted));

		test("of a catalogue stopped cleanly (no -wal left): backed up whole", async () => {
			expect(existsSync(path.join(mounted, `${DATABASE_FILE}-wal`))).toBe(false);
			remountReadOnly(mounted);
			expect(await backupDataDir(mounted, target)).toMatchObject({ collections: { categories: 1, authors: 0, games: 0 } });
			expect(rowsOf(path.join(target, DATABASE_FILE), "categories")).toEqual([
				{ _id: "c1", doc: JSON.stringify({ name: "Abstract" }) },
			]);
		});

		test("of a catalogue killed with writes in its -wal: backed up with them, not from the file alone", async () => {
			// A writer that ends without closing, as `kill -9` ends one: its last write is in the -wal, not yet in the file.
			const file = path.join(mounted, DATABASE_FILE);
			const write = `const db = new (require("node:sqlite").DatabaseSync)(${JSON.stringify(file)}); db.exec("PRAGMA wal_autocheckpoint = 0");
			db.prepare("INSERT INTO categories (_id, doc) VALUES ('c2', '{}')").run(); process.exit(0);`;
			execFileSync(process.execPath, ["-e", write]);
			expect(existsSync(`${file}-wal`)).toBe(true);
			remountReadOnly(mounted);
			expect(await backupDataDir(mounted, target)).toMatchObject({ collections: { categories: 2 } });
		});
	});
});
