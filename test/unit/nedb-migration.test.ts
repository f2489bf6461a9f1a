import fs, { appendFileSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import escapeRegExp from "lodash/escapeRegExp";
import type { Logger } from "moleculer";
import { migrateNeDbFile, readNeDbFile } from "../../lib/storage/nedb-migration";
import { openDatabase, openForReading, UnusableDataDir, type Database } from "../../lib/storage/sqlite-database";

// A DATA_DIR of the previous release (test/fixtures/nedb-data-dir: its NeDB files, and what its
// GET /category, /author and /game answered for them) opened by this one.

const FIXTURES = path.join(__dirname, "../fixtures/nedb-data-dir");
const FILES = ["authors.db", "categories.db", "games.db"];

interface Listed {
	id: string;
}
type ListedGame = Listed & { title: string; age: number; category: Listed; author: Listed };
const listed = <T>(name: string) => JSON.parse(readFileSync(path.join(FIXTURES, `listed-${name}.json`), "utf8")) as T[];

/** The records the previous release listed, as this one stores them: the id and the fields of the record itself. */
const expected = {
	categories: listed<Listed & { name: string }>("category").map(({ id, ...category }) => ({ _id: id, ...category })),
	authors: listed<Listed & { name: string; nationality: string }>("author").map(({ id, ...author }) => ({ _id: id, ...author })),
	games: listed<ListedGame>("game").map(({ id, title, age, category, author }) => ({
		_id: id,
		title,
		age,
		category: category.id,
		author: author.id,
	})),
};
type Collection = keyof typeof expected;

let root: string;
const open: Database[] = [];

beforeAll(() => {
	root = mkdtempSync(path.join(tmpdir(), "nedb-migration-"));
});

afterEach(() => {
	for (const database of open.splice(0)) database.release();
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A DATA_DIR holding the previous release's files. */
function earlierDataDir(): string {
	const dataDir = mkdtempSync(path.join(root, "data-"));
	for (const name of FILES) copyFileSync(path.join(FIXTURES, name), path.join(dataDir, name));
	return dataDir;
}

const quietLogger = () => ({ info: jest.fn(), warn: jest.fn() });

const COLLECTIONS: Collection[] = ["categories", "authors", "games"];

type Put = (doc: Record<string, unknown>) => void;

/** Opens `dataDir` as the catalogue's adapters do, each making its table and migrating its NeDB file. */
function start(dataDir: string, logger = quietLogger(), putting = (put: Put, _collection: string, _writer: DatabaseSync) => put): Database {
	const database = openDatabase(dataDir, "alone");
	open.push(database);
	for (const collection of COLLECTIONS) {
		database.writer.exec(`CREATE TABLE IF NOT EXISTS ${collection} (_id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL)`);
		const insert = database.writer.prepare(`INSERT OR REPLACE INTO ${collection} (_id, doc) VALUES (?, ?)`);
		const put: Put = ({ _id, ...doc }) => insert.run(String(_id), JSON.stringify(doc));
		migrateNeDbFile(database.writer, dataDir, collection, putting(put, collection, database.writer), logger as unknown as Logger);
	}
	return database;
}

/** Closes what `start` opened, as a process ending does. */
function stop(database: Database): void {
	open.splice(open.indexOf(database), 1);
	database.release();
}

/** Every record of `collection`, in id order, as moleculer-db is given it. */
function stored(db: DatabaseSync, collection: Collection): Record<string, unknown>[] {
	const rows = db.prepare(`SELECT _id, doc FROM ${collection} ORDER BY _id`).all() as { _id: string; doc: string }[];
	return rows.map(({ _id, doc }) => ({ _id, ...(JSON.parse(doc) as object) }));
}

const byId = (records: { _id: string }[]) => [...records].sort((a, b) => (a._id < b._id ? -1 : 1));

/** What an independent connection reads in `dataDir`'s database: whether anything was committed. */
function committed(dataDir: string): { counts: number[]; migrated: unknown } {
	const reader = openForReading(dataDir);
	try {
		const counts = (["authors", "categories", "games"] as const).map(
			name => (reader.prepare(`SELECT count(*) AS n FROM ${name}`).get() as { n: number }).n,
		);
		const migrated = reader.prepare("SELECT key FROM catalogue_meta WHERE key LIKE 'nedb-migrated %' ORDER BY key").all();
		return { counts, migrated };
	} finally {
		reader.close();
	}
}

const topLevelFiles = (dataDir: string) => readdirSync(dataDir).filter(name => name.endsWith(".db"));
const asideFolders = (dataDir: string) => readdirSync(dataDir).filter(name => name.startsWith("nedb-"));

/** `file` with its line `number` (from 1) replaced. */
function replaceLine(file: string, number: number, line: string): void {
	const lines = readFileSync(file, "utf8").split("\n");
	lines[number - 1] = line;
	writeFileSync(file, lines.join("\n"));
}

describe("migrating the previous release's NeDB files", () => {
	test("every record comes with its id, as the previous release listed it", () => {
		const { writer } = start(earlierDataDir());
		for (const collection of ["categories", "authors", "games"] as const)
			expect(stored(writer, collection)).toEqual(byId(expected[collection]));
		expect(stored(writer, "games")).toHaveLength(25);
	});

	test("its commit is synced to the disk before the file moves aside (synchronous FULL), and the store goes back to NORMAL", () => {
		const levels = new Set<number>();
		const database = start(earlierDataDir(), quietLogger(), (put, _collection, writer) => doc => {
			levels.add((writer.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous);
			put(doc);
		});
		expect(levels).toEqual(new Set([2]));
		expect((database.writer.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous).toBe(1);
	});

	test("a store syncing every commit already (its checkpoint thread failed) keeps doing so after a migration", () => {
		const database = start(earlierDataDir(), quietLogger(), (put, collection, writer) => {
			if (collection === COLLECTIONS[0]) writer.exec("PRAGMA synchronous = FULL");
			return put;
		});
		expect((database.writer.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous).toBe(2);
	});

	test("line and paragraph separators, quotes, accents and emoji come through exactly", () => {
		const { writer } = start(earlierDataDir());
		const one = (collection: Collection, id: string) => stored(writer, collection).find(record => record._id === id);
		expect(one("games", "01M8B9B91QAEN657F9JQNDBDGB")).toMatchObject({ title: "Line\u2028sep 1 (2nd ed.\u2028)" });
		expect(one("games", "01M8B9B91T1NPNA8BMRSH1M905")).toMatchObject({ title: "Para\u2029sep 2 (2nd ed.\u2028)" });
		expect(one("games", "01M8B9B91WRJX1EG3VA7WZ7CC8")).toMatchObject({ title: '"Quoted" 3 (2nd ed.\u2028)' });
		expect(one("games", "01M8B9B91YD1H52VDFXBEF7PAC")).toMatchObject({ title: "Café à 4 é (2nd ed.\u2028)" });
		expect(one("games", "01M8B9B9200TX3K06FFGY60RK1")).toMatchObject({ title: "Emoji 🎲 5" });
		expect(one("categories", "01M8B9B90Y51ZH5GM4H1V28PQG")).toEqual({ _id: "01M8B9B90Y51ZH5GM4H1V28PQG", name: "Ñandú\u2028line" });
		expect(one("authors", "01M8B9B91GRZ588FBZ2RMWAS1R")).toEqual({
			_id: "01M8B9B91GRZ588FBZ2RMWAS1R",
			name: 'Reiner "Knizia"',
			nationality: "German\u2029x",
		});
	});

	test("a record's last line wins: updated records as updated, deleted ones absent", () => {
		const { writer } = start(earlierDataDir());
		const ids = (collection: Collection) => stored(writer, collection).map(record => record._id);
		expect(stored(writer, "authors")).toContainEqual({
			_id: "01M8B9B916C3SX2VNEHF01G70K",
			name: "Uwe Rosenberg",
			nationality: "Deutsch",
		});
		expect(ids("categories")).not.toContain("01M8B9BCPHPQZ7EM1TN5C97E2F");
		expect(ids("games")).not.toContain("01M8B9B934Z5XD5HEQTF07TC4B");
		expect(stored(writer, "games")).toContainEqual({
			_id: "01M8B9B91KJ0MZAGSRFYRS2SHV",
			title: "Agricola 0 (2nd ed.\u2028)",
			age: 10,
			category: "01M8B9B90784BF0S3F6BCVBEGT",
			author: "01M8B9B918XCWQYXR92DT8VXJ8",
		});
	});

	test("the files are moved, unchanged, into a nedb-* folder of the DATA_DIR", () => {
		const dataDir = earlierDataDir();
		const logger = quietLogger();
		start(dataDir, logger);
		expect(topLevelFiles(dataDir)).toEqual([]);
		const aside = asideFolders(dataDir);
		expect(aside).toHaveLength(1);
		for (const name of FILES)
			expect(readFileSync(path.join(dataDir, aside[0], name)).equals(readFileSync(path.join(FIXTURES, name)))).toBe(true);
		expect(logger.info).toHaveBeenCalledWith(
			`Migrated 25 games from the NeDB file ${path.join(dataDir, "games.db")} into the SQLite database.`,
		);
		expect(logger.warn).not.toHaveBeenCalled();
	});

	test("the next start finds nothing more to do", () => {
		const dataDir = earlierDataDir();
		stop(start(dataDir));
		const before = committed(dataDir);
		const logger = quietLogger();
		const { writer } = start(dataDir, logger);
		expect(committed(dataDir)).toEqual(before);
		expect(stored(writer, "games")).toEqual(byId(expected.games));
		expect(asideFolders(dataDir)).toHaveLength(1);
		expect(logger.info).not.toHaveBeenCalled();
		expect(logger.warn).not.toHaveBeenCalled();
	});

	test("a DATA_DIR without NeDB files is left as it is", () => {
		const dataDir = mkdtempSync(path.join(root, "data-"));
		const logger = quietLogger();
		start(dataDir, logger);
		expect(asideFolders(dataDir)).toEqual([]);
		expect(committed(dataDir)).toEqual({ counts: [0, 0, 0], migrated: [] });
		expect(logger.info).not.toHaveBeenCalled();
	});
});

describe("an interrupted migration", () => {
	test("a damaged line in the middle of a file stops the start, naming it; none of its records is stored and the file stays", () => {
		const dataDir = earlierDataDir();
		const games = path.join(dataDir, "games.db");
		replaceLine(games, 10, '{"_id":"01M8B9B91YD1H52VDFXBEF7PAC","title":"Caf');
		const damaged = readFileSync(games);

		expect(() => start(dataDir)).toThrow(UnusableDataDir);
		expect(() => start(dataDir)).toThrow(new RegExp(`^${escapeRegExp(games)} line 10 is not a record NeDB wrote [^\n]*$`));
		// Each collection is migrated whole or not at all: the categories and authors before it are in.
		expect(committed(dataDir)).toEqual({
			counts: [expected.authors.length, expected.categories.length, 0],
			migrated: [{ key: "nedb-migrated authors" }, { key: "nedb-migrated categories" }],
		});
		expect(topLevelFiles(dataDir)).toEqual(["games.db"]);
		expect(readFileSync(games).equals(damaged)).toBe(true);

		// Repaired, the next start migrates everything.
		copyFileSync(path.join(FIXTURES, "games.db"), games);
		expect(stored(start(dataDir).writer, "games")).toEqual(byId(expected.games));
	});

	test("a transaction that fails midway stores none of its collection and leaves its file; the next start migrates it", () => {
		const dataDir = earlierDataDir();
		// The tenth game written fails, once a few games are in.
		const failing = (put: Put, collection: string) => (collection === "games" ? failingAfter(put, 9) : put);
		expect(() => start(dataDir, quietLogger(), failing)).toThrow("the disk went away");
		expect(committed(dataDir).counts).toEqual([expected.authors.length, expected.categories.length, 0]);
		expect(topLevelFiles(dataDir)).toEqual(["games.db"]);

		const { writer } = start(dataDir);
		for (const collection of ["categories", "authors", "games"] as const)
			expect(stored(writer, collection)).toEqual(byId(expected[collection]));
		expect(topLevelFiles(dataDir)).toEqual([]);
	});

	test("a torn last line (a write cut off, never acknowledged) is left out and the rest migrates", () => {
		const dataDir = earlierDataDir();
		appendFileSync(path.join(dataDir, "games.db"), '{"_id":"01M8B9C00000000000000TORN0","title":"Half wri');
		const logger = quietLogger();
		const { writer } = start(dataDir, logger);
		expect(stored(writer, "games")).toEqual(byId(expected.games));
		expect(logger.warn).toHaveBeenCalledWith(expect.stringContaining(`${path.join(dataDir, "games.db")} ended in a half-written line`));
		expect(topLevelFiles(dataDir)).toEqual([]);
	});

	test("killed after the commit, before the files were moved: the next start moves them aside unread", () => {
		const dataDir = earlierDataDir();
		stop(start(dataDir));
		const before = committed(dataDir);
		// The files back where they were, one of them with lines the migration never saw.
		for (const name of FILES) copyFileSync(path.join(FIXTURES, name), path.join(dataDir, name));
		appendFileSync(
			path.join(dataDir, "games.db"),
			'{"_id":"01M8B9B9200TX3K06FFGY60RK1","title":"Changed","age":1,"category":"c","author":"a"}\n' +
				'{"_id":"01M8B9C000000000000000NEW0","title":"New","age":1,"category":"c","author":"a"}\n',
		);

		const logger = quietLogger();
		const { writer } = start(dataDir, logger);
		expect(committed(dataDir)).toEqual(before);
		for (const collection of ["categories", "authors", "games"] as const)
			expect(stored(writer, collection)).toEqual(byId(expected[collection]));
		expect(topLevelFiles(dataDir)).toEqual([]);
		expect(asideFolders(dataDir)).toHaveLength(1);
		expect(readdirSync(path.join(dataDir, asideFolders(dataDir)[0]))).toHaveLength(6);
		expect(logger.warn).toHaveBeenCalledWith(expect.stringContaining("moved aside unread"));
		expect(logger.info).not.toHaveBeenCalledWith(expect.stringContaining("Migrated"));
	});
});

describe("replicas starting at once on one folder", () => {
	test("a file another replica moved aside first, or a folder for them it made first, does not stop this one's start", () => {
		const dataDir = earlierDataDir();
		const aside = path.join(dataDir, "nedb-migrated");
		// The other replica moves each file just before this one does, having made the folder just before this one makes it.
		const mkdir = jest.spyOn(fs, "mkdirSync").mockImplementationOnce((folder, options) => {
			mkdir.mockRestore();
			fs.mkdirSync(folder, options);
			return fs.mkdirSync(folder, options);
		});
		const renameFile = fs.renameSync.bind(fs);
		const rename = jest.spyOn(fs, "renameSync").mockImplementation((from, to) => {
			renameFile(from, `${String(to)}.other`);
			throw Object.assign(new Error(`ENOENT: no such file or directory, rename '${String(from)}'`), { code: "ENOENT" });
		});
		try {
			const { writer } = start(dataDir);
			for (const collection of COLLECTIONS) expect(stored(writer, collection)).toEqual(byId(expected[collection]));
		} finally {
			rename.mockRestore();
			mkdir.mockRestore();
		}
		expect(topLevelFiles(dataDir)).toEqual([]);
		expect(readdirSync(aside).sort()).toEqual(FILES.map(name => `${name}.other`));
	});

	test("a file another replica migrated and moved aside between this one's look and its read does not stop this one's start", () => {
		const dataDir = earlierDataDir();
		// The other replica migrates the first file just before this one reads it.
		const read = jest.spyOn(fs, "readFileSync").mockImplementationOnce(((file: string, options?: unknown) => {
			read.mockRestore();
			const other = new DatabaseSync(path.join(dataDir, "catalogue.sqlite"));
			try {
				const insert = other.prepare(`INSERT INTO ${COLLECTIONS[0]} (_id, doc) VALUES (?, ?)`);
				const put: Put = ({ _id, ...doc }) => insert.run(String(_id), JSON.stringify(doc));
				migrateNeDbFile(other, dataDir, COLLECTIONS[0], put);
			} finally {
				other.close();
			}
			return fs.readFileSync(file, options as BufferEncoding);
		}) as typeof fs.readFileSync);
		try {
			const { writer } = start(dataDir);
			for (const collection of COLLECTIONS) expect(stored(writer, collection)).toEqual(byId(expected[collection]));
		} finally {
			read.mockRestore();
		}
		expect(topLevelFiles(dataDir)).toEqual([]);
	});
});

describe("readNeDbFile", () => {
	test("a raw line or paragraph separator inside a value does not split the line", () => {
		const file = path.join(mkdtempSync(path.join(root, "raw-")), "games.db");
		writeFileSync(file, '{"_id":"g1","title":"Line\u2028sep"}\n{"_id":"g2","title":"Para\u2029sep\u2028"}\n');
		expect(readFileSync(file, "utf8")).not.toContain("\\u2028");
		const { records, tornTail } = readNeDbFile(file);
		expect([...records.values()]).toEqual([
			{ _id: "g1", title: "Line\u2028sep" },
			{ _id: "g2", title: "Para\u2029sep\u2028" },
		]);
		expect(tornTail).toBe(false);
	});

	test("a raw separator comes through a migration whole", () => {
		const dataDir = mkdtempSync(path.join(root, "data-"));
		writeFileSync(path.join(dataDir, "categories.db"), '{"name":"Ñandú\u2028line \\"x\\"","_id":"c1"}\n');
		expect(stored(start(dataDir).writer, "categories")).toEqual([{ _id: "c1", name: 'Ñandú\u2028line "x"' }]);
	});

	test("index lines and lines without an id are skipped; a record deleted then stored again is there", () => {
		const file = path.join(mkdtempSync(path.join(root, "lines-")), "authors.db");
		const lines = [
			{ $$indexCreated: { fieldName: "name", sparse: false } },
			{ _id: "a1", name: "First" },
			{ _id: "a2", name: "Gone" },
			{ name: "no id" },
			{ _id: "a1", name: "Second" },
			{ $$deleted: true, _id: "a2" },
			{ _id: "a3", name: "Back" },
			{ $$deleted: true, _id: "a3" },
			{ _id: "a3", name: "Back again" },
		];
		writeFileSync(file, lines.map(line => JSON.stringify(line)).join("\n") + "\n");
		expect([...readNeDbFile(file).records.entries()]).toEqual([
			["a1", { _id: "a1", name: "Second" }],
			["a3", { _id: "a3", name: "Back again" }],
		]);
	});

	test.each([
		["bytes that are not UTF-8", Buffer.from('{"_id":"g2","title":"Agric\xe9la"}', "latin1"), "its bytes are not UTF-8"],
		["null", Buffer.from("null"), "it is not a JSON object"],
		["a number", Buffer.from("5"), "it is not a JSON object"],
		["an array", Buffer.from("[1]"), "it is not a JSON object"],
		[
			"a record whose category is an object",
			Buffer.from('{"_id":"g2","title":"T","category":{"x":1}}'),
			"its 'category' is not a string",
		],
		["a record whose age is text", Buffer.from('{"_id":"g2","title":"T","age":"ten"}'), "its 'age' is not a number"],
	])("a line holding %s stops the migration, naming the file and the line", (_case, bad, why) => {
		const file = path.join(mkdtempSync(path.join(root, "bad-")), "games.db");
		writeFileSync(
			file,
			Buffer.concat([Buffer.from('{"_id":"g1","title":"Fine","age":10}\n'), bad, Buffer.from('\n{"_id":"g3","title":"Also"}\n')]),
		);
		const types = { title: "string", age: "number", category: "string", author: "string" };
		expect(() => readNeDbFile(file, types)).toThrow(
			new UnusableDataDir(`${file} line 2 is not a record NeDB wrote (${why}): it cannot be migrated`),
		);
	});

	test("a migration checks each record against its kind's fields: a game whose category is an object stops the start, naming it", () => {
		const dataDir = mkdtempSync(path.join(root, "data-"));
		const games = path.join(dataDir, "games.db");
		writeFileSync(games, '{"_id":"g1","title":"Object category","age":4,"category":{"x":1},"author":"a1"}\n');
		expect(() => start(dataDir)).toThrow(`${games} line 1 is not a record NeDB wrote (its 'category' is not a string)`);
	});

	test("a last line cut inside a character (a write cut off) is a torn line, left out", () => {
		const file = path.join(mkdtempSync(path.join(root, "tail-")), "games.db");
		writeFileSync(file, Buffer.concat([Buffer.from('{"_id":"g1","title":"One"}\n{"_id":"g2","title":"Caf'), Buffer.from([0xc3])]));
		expect(readNeDbFile(file)).toEqual({ records: new Map([["g1", { _id: "g1", title: "One" }]]), tornTail: true });
	});

	test("the same text without its last newline is no torn line", () => {
		const file = path.join(mkdtempSync(path.join(root, "tail-")), "authors.db");
		writeFileSync(file, '{"_id":"a1","name":"One"}\n{"_id":"a2","name":"Two"}');
		expect(readNeDbFile(file)).toEqual({
			records: new Map([
				["a1", { _id: "a1", name: "One" }],
				["a2", { _id: "a2", name: "Two" }],
			]),
			tornTail: false,
		});
	});
});

/** `put`, failing from the `(after + 1)`th record on, as a disk going away would make it. */
function failingAfter(put: Put, after: number): Put {
	let left = after;
	return doc => {
		if (left-- <= 0) throw new Error("the disk went away");
		put(doc);
	};
}
