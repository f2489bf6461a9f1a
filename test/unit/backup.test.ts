import { appendFileSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import fsPromises from "node:fs/promises";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { backupDataDir, backupText, noFilesToBackUp } from "../../lib/storage/backup";
import { MANIFEST } from "../../lib/storage/backup-folder";
import { cutTornTail } from "../../lib/storage/nedb-files";

// lib/storage/backup.ts on NeDB files written here line by line, as the adapter appends them.

let root: string;
let dataDir: string;
let target: string;
beforeEach(async () => {
	root = await mkdtemp(path.join(tmpdir(), "catalogue-backup-"));
	[dataDir, target] = [path.join(root, "data"), path.join(root, "backup")];
	mkdirSync(dataDir);
});
afterEach(async () => {
	jest.restoreAllMocks();
	await rm(root, { recursive: true, force: true });
});

/** Appends records (or NeDB's `$$deleted` and `$$indexCreated` lines) to a collection's file, one line each. */
const append = (collection: string, ...records: object[]) =>
	appendFileSync(path.join(dataDir, `${collection}.db`), records.map(record => `${JSON.stringify(record)}\n`).join(""));

const category = (id: string) => ({ name: `Category ${id}`, _id: id });
const author = (id: string) => ({ name: `Author ${id}`, nationality: "German", _id: id });
const game = (id: string, categoryId: string, authorId: string) => ({
	title: `Game ${id}`,
	age: 10,
	category: categoryId,
	author: authorId,
	_id: id,
});

/** A small catalogue: a removed category, an index line, and a game updated (its second line wins). */
function catalogue(): void {
	append("categories", category("c1"), category("c2"), { $$deleted: true, _id: "c2" });
	append("authors", author("a1"), { $$indexCreated: { fieldName: "name", unique: false, sparse: false } });
	append("games", game("g1", "c1", "a1"), { ...game("g1", "c1", "a1"), title: "Renamed" });
}

const copied = (collection: string) => readFileSync(path.join(target, `${collection}.db`), "utf8");
const stored = (collection: string) => readFileSync(path.join(dataDir, `${collection}.db`), "utf8");

test("copies each file whole, with NeDB's count of its records, and writes backup.json last", async () => {
	catalogue();
	const backup = await backupDataDir(dataDir, target);
	for (const collection of ["categories", "authors", "games"]) expect(copied(collection)).toBe(stored(collection));
	expect(backup).toMatchObject({
		dataDir,
		tries: 1,
		referencesChecked: true,
		collections: {
			categories: { records: 1, bytes: Buffer.byteLength(stored("categories")) },
			authors: { records: 1, bytes: Buffer.byteLength(stored("authors")) },
			games: { records: 1, bytes: Buffer.byteLength(stored("games")) },
		},
	});
	expect(JSON.parse(readFileSync(path.join(target, MANIFEST), "utf8"))).toEqual(backup);
	expect(readdirSync(target).sort()).toEqual(["authors.db", "backup.json", "categories.db", "games.db"]);
	expect(backupText(backup, target)).toMatch(/in 1 try[^]*\ngames\s+1\s+\d+/);
});

test("a half-written last line (another process's append caught halfway) is left out: the copy starts without a warning", async () => {
	catalogue();
	const whole = stored("games");
	appendFileSync(path.join(dataDir, "games.db"), '{"title":"Half","age":1');
	const backup = await backupDataDir(dataDir, target);
	expect(copied("games")).toBe(whole);
	expect(backup.collections.games).toEqual({ records: 1, bytes: Buffer.byteLength(whole) });
	// What the adapter runs at start, and warns about when it cuts something.
	expect(await cutTornTail(path.join(target, "games.db"))).toBeUndefined();
});

test("a snapshot with a game whose category came between two opens is taken again", async () => {
	catalogue();
	let landed = false;
	const backup = await backupDataDir(dataDir, target, {
		// Another process creates a category and then a game in it, after the categories were opened.
		opened: collection => {
			if (collection !== "categories" || landed) return;
			append("categories", category("c3"));
			append("games", game("g2", "c3", "a1"));
			landed = true;
		},
	});
	expect(backup.tries).toBe(2);
	expect(backup.collections).toMatchObject({ categories: { records: 2 }, games: { records: 2 } });
	expect(copied("categories")).toContain('"_id":"c3"');
	expect(backupText(backup, target)).toContain("in 2 tries (a write got between the files)");
});

test("gives up after its tries when the games keep missing a category, naming them; nothing is written", async () => {
	catalogue();
	// A game whose category was removed behind the catalogue's back: no snapshot is ever whole.
	append("games", game("g9", "c2", "a1"));
	let snapshots = 0;
	const backup = backupDataDir(dataDir, target, { tries: 3, opened: collection => void (collection === "games" && snapshots++) });
	await expect(backup).rejects.toThrow(
		`No consistent copy of ${dataDir} in 3 tries: 1 game(s) refer to a missing category or author: g9 (category). ` +
			"Either writes kept getting between the files, or the files themselves hold such games",
	);
	expect(snapshots).toBe(3);
	expect(readdirSync(root)).toEqual(["data"]);
});

test("a copy the disk refuses halfway leaves the earlier backup whole, its manifest included, and no partial file", async () => {
	catalogue();
	await backupDataDir(dataDir, target);
	const before = Object.fromEntries(readdirSync(target).map(name => [name, readFileSync(path.join(target, name), "utf8")]));
	append("games", game("g2", "c1", "a1"));
	const writeFile = fsPromises.writeFile;
	jest.spyOn(fsPromises, "writeFile").mockImplementation(async (file, data, options) => {
		if (typeof file !== "string" || !file.includes("games.db")) return writeFile(file, data, options);
		await writeFile(file, (data as Buffer).subarray(0, 20), options);
		throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
	});
	await expect(backupDataDir(dataDir, target)).rejects.toMatchObject({ code: "ENOSPC" });
	const after = Object.fromEntries(readdirSync(target).map(name => [name, readFileSync(path.join(target, name), "utf8")]));
	expect(after).toEqual(before);
});

test("refuses the data folder itself as the target, by its name or through a link", async () => {
	catalogue();
	const link = path.join(root, "link");
	symlinkSync(dataDir, link);
	for (const same of [dataDir, `${dataDir}/`, link])
		await expect(backupDataDir(dataDir, same)).rejects.toThrow("is the data folder itself: give another one");
	expect(readdirSync(dataDir).sort()).toEqual(["authors.db", "categories.db", "games.db"]);
});

test("a folder without catalogue files is refused; a games node's folder is copied without checking references", async () => {
	await expect(backupDataDir(dataDir, target)).rejects.toThrow(`No catalogue files in ${dataDir} (authors.db, categories.db, games.db)`);
	writeFileSync(path.join(dataDir, "games.db"), `${JSON.stringify(game("g1", "c1", "a1"))}\n`);
	const backup = await backupDataDir(dataDir, target);
	expect(backup).toMatchObject({ referencesChecked: false, collections: { games: { records: 1 } } });
	expect(Object.keys(backup.collections)).toEqual(["games"]);
	expect(backupText(backup, target)).toContain("Games' categories and authors not checked");
});

test("MongoDB and memory have no files to back up: the operator is told what to use instead", () => {
	expect(noFilesToBackUp({ mongoUri: "mongodb://db/catalogue", storage: "file" })).toContain(
		"Back it up with `mongodump --oplog` and restore it with `mongorestore --oplogReplay`",
	);
	expect(noFilesToBackUp({ mongoUri: null, storage: "memory" })).toBe("STORAGE=memory keeps no files: there is nothing to back up.");
	expect(noFilesToBackUp({ mongoUri: null, storage: "file" })).toBeUndefined();
});
