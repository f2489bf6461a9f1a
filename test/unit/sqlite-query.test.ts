import type { DatabaseSync } from "node:sqlite";
import { openDatabase, type Database } from "../../lib/storage/sqlite-database";
import { withTables } from "../support/sqlite";
import { column, extracted, limitOf, orderBy, updatedColumns, updatedDoc, where } from "../../lib/storage/sqlite-query";

// The SQL of the services' MongoDB-style queries, run on a real table of a database in memory
// (which has the `catalogue_matches` function `$regex` needs).

const games = {
	g1: { title: "Agricola", age: 12, category: "c1", change: { token: "t1" } },
	g2: { title: "agricola deluxe", age: 8, category: "c2", draft: true },
	g3: { title: "Carcassonne", age: 7, category: "c1" },
	g4: { title: "Café", age: 14 },
};

let database: Database;
let db: DatabaseSync;

beforeEach(() => {
	database = withTables(openDatabase(null, "alone"));
	db = database.writer;
	for (const [id, doc] of Object.entries(games)) insertGame(id, doc);
});

afterEach(() => database.release());

const insertGame = (id: string, doc: object) => db.prepare("INSERT INTO games (_id, doc) VALUES (?, ?)").run(id, JSON.stringify(doc));

/** The ids of the games `query` selects, in id order. */
function selected(query: Record<string, unknown>): string[] {
	const { sql, values } = where(query);
	return (db.prepare(`SELECT _id FROM games WHERE ${sql} ORDER BY _id`).all(...values) as { _id: string }[]).map(row => row._id);
}

/** The ids of every game in the order `sort` gives. */
function ordered(sort: string[]): string[] {
	return (db.prepare(`SELECT _id FROM games ORDER BY ${orderBy(sort)}`).all() as { _id: string }[]).map(row => row._id);
}

/** Runs `update` on the games `query` selects; answers how many changed. */
function update(query: Record<string, unknown>, change: Record<string, unknown>): number {
	const doc = updatedDoc(change);
	const condition = where(query);
	return Number(db.prepare(`UPDATE games SET doc = ${doc.sql} WHERE ${condition.sql}`).run(...doc.values, ...condition.values).changes);
}

const stored = (id: string) => JSON.parse((db.prepare("SELECT doc FROM games WHERE _id = ?").get(id) as { doc: string }).doc) as unknown;

describe("where", () => {
	test("an empty query selects every record", () => {
		expect(selected({})).toEqual(["g1", "g2", "g3", "g4"]);
	});

	test("equality on _id and on a field", () => {
		expect(selected({ _id: "g2" })).toEqual(["g2"]);
		expect(selected({ category: "c1" })).toEqual(["g1", "g3"]);
		expect(selected({ age: 7 })).toEqual(["g3"]);
		expect(selected({ _id: "nope" })).toEqual([]);
	});

	test("equality on a nested field", () => {
		expect(selected({ "change.token": "t1" })).toEqual(["g1"]);
		expect(selected({ "change.token": "t2" })).toEqual([]);
	});

	test("several fields must all hold", () => {
		expect(selected({ category: "c1", age: 7 })).toEqual(["g3"]);
		expect(selected({ _id: "g1", category: "c2" })).toEqual([]);
	});

	test("$exists: true selects the records with the field, false those without", () => {
		expect(selected({ draft: { $exists: true } })).toEqual(["g2"]);
		expect(selected({ draft: { $exists: false } })).toEqual(["g1", "g3", "g4"]);
		expect(selected({ "change.token": { $exists: true } })).toEqual(["g1"]);
	});

	test("$lt and $gt compare numbers as numbers", () => {
		// As text, "12" and "14" would sort before "9".
		expect(selected({ age: { $lt: 9 } })).toEqual(["g2", "g3"]);
		expect(selected({ age: { $gt: 9 } })).toEqual(["g1", "g4"]);
		expect(selected({ age: { $gt: 7, $lt: 14 } })).toEqual(["g1", "g2"]);
	});

	test("$ne also selects the records without the field, as MongoDB does", () => {
		expect(selected({ category: { $ne: "c1" } })).toEqual(["g2", "g4"]);
		expect(selected({ "change.token": { $ne: "t1" } })).toEqual(["g2", "g3", "g4"]);
	});

	test("$in selects the records whose field is one of the values", () => {
		expect(selected({ _id: { $in: ["g1", "g3", "nope"] } })).toEqual(["g1", "g3"]);
		expect(selected({ category: { $in: ["c2"] } })).toEqual(["g2"]);
		expect(selected({ _id: { $in: [] } })).toEqual([]);
	});

	test("$in with a thousand ids selects exactly those records", () => {
		const id = (n: number) => `a${String(n).padStart(4, "0")}`;
		const insert = db.prepare("INSERT INTO authors (_id, doc) VALUES (?, '{}')");
		for (let n = 0; n < 2000; n++) insert.run(id(n));
		const even = Array.from({ length: 1000 }, (_, n) => id(2 * n));
		const { sql, values } = where({ _id: { $in: even } });
		const rows = db.prepare(`SELECT _id FROM authors WHERE ${sql} ORDER BY _id`).all(...values) as { _id: string }[];
		expect(rows.map(row => row._id)).toEqual(even);
	});

	test("$regex matches with the pattern's flags, given as a RegExp or a string", () => {
		expect(selected({ title: { $regex: /^agricola/i } })).toEqual(["g1", "g2"]);
		expect(selected({ title: { $regex: /^agricola/ } })).toEqual(["g2"]);
		expect(selected({ title: { $regex: "^Agri" } })).toEqual(["g1"]);
		expect(selected({ title: /CAFÉ/i })).toEqual(["g4"]);
		expect(selected({ "change.token": { $regex: /./ } })).toEqual(["g1"]);
	});

	test("a $regex that ignores case folds letters as Unicode does, as MongoDB's PCRE does (ß and ẞ, k and the Kelvin sign)", () => {
		insertGame("g5", { title: "STRAẞENBAHN" });
		insertGame("g6", { title: "\u212Aartenspiele" });
		expect(selected({ title: /straße/i })).toEqual(["g5"]);
		expect(selected({ title: /^kartenspiele$/i })).toEqual(["g6"]);
	});

	test("a global or sticky $regex matches every row it matches, not every other one", () => {
		expect(selected({ title: { $regex: /a/g } })).toEqual(["g1", "g2", "g3", "g4"]);
		expect(selected({ title: { $regex: /^[ac]/giy } })).toEqual(["g1", "g2", "g3", "g4"]);
	});

	test("$or selects the records that match one of its queries, beside the other fields", () => {
		expect(selected({ $or: [{ category: "c2" }, { age: { $gt: 13 } }] })).toEqual(["g2", "g4"]);
		expect(selected({ category: "c1", $or: [{ age: { $lt: 8 } }, { draft: { $exists: true } }] })).toEqual(["g3"]);
		expect(selected({ $or: [] })).toEqual([]);
	});

	test("an operator it does not know throws rather than selecting anything", () => {
		expect(() => where({ age: { $gte: 3 } })).toThrow("query operator $gte is not supported by the SQLite store");
		expect(() => where({ $and: [{ age: 3 }] })).toThrow("not a field the catalogue stores");
	});

	test("a value that is neither a string nor a number throws", () => {
		expect(() => where({ category: { $in: [{ $gt: "" }] } })).toThrow("a query value must be a string or a number");
		expect(() => where({ category: true })).toThrow("a query value must be a string or a number");
	});

	test("a field name that is not one throws, and no SQL is built from it", () => {
		for (const field of ["a'b", "x); DROP TABLE games; --", "title'", "a..b", "1st", ""])
			expect(() => where({ [field]: "x" })).toThrow(`not a field the catalogue stores: ${JSON.stringify(field)}`);
		expect(() => where({ $or: [{ "x); DROP TABLE games; --": 1 }] })).toThrow("not a field the catalogue stores");
		expect(selected({})).toHaveLength(4);
	});
});

describe("orderBy", () => {
	test("sorts ascending, `-` descending, each key after the one before", () => {
		expect(ordered(["age"])).toEqual(["g3", "g2", "g1", "g4"]);
		expect(ordered(["-age"])).toEqual(["g4", "g1", "g2", "g3"]);
		// A record without the field sorts first, as in MongoDB.
		expect(ordered(["category", "-age"])).toEqual(["g4", "g1", "g3", "g2"]);
		expect(ordered(["-_id"])).toEqual(["g4", "g3", "g2", "g1"]);
	});

	test("no keys, no ORDER BY list", () => {
		expect(orderBy([])).toBe("");
		expect(orderBy()).toBe("");
	});

	test("a key that is not a field throws", () => {
		expect(() => orderBy(["a'b"])).toThrow("not a field the catalogue stores");
		expect(() => orderBy(["-x); DROP TABLE games; --"])).toThrow("not a field the catalogue stores");
	});
});

describe("limitOf", () => {
	test("writes a whole number of rows into the SQL, and throws on anything else rather than write it", () => {
		expect(limitOf(20)).toBe(" LIMIT 20");
		expect(limitOf(-1)).toBe(" LIMIT -1");
		expect(db.prepare(`SELECT _id FROM games ORDER BY _id${limitOf(2)}`).all()).toEqual([{ _id: "g1" }, { _id: "g2" }]);
		for (const rows of [1.5, Number.NaN, Infinity, 2 ** 53, "1; DROP TABLE games", "3"])
			expect(() => limitOf(rows as number)).toThrow(/not a number of rows/);
	});
});

describe("column", () => {
	test("_id is the column, any other field is read out of the record", () => {
		expect(column("_id")).toBe("_id");
		const read = (field: string) =>
			(db.prepare(`SELECT ${column(field)} AS value FROM games WHERE _id = 'g1'`).get() as { value: unknown }).value;
		expect(read("_id")).toBe("g1");
		expect(read("title")).toBe("Agricola");
		expect(read("age")).toBe(12);
		expect(read("change.token")).toBe("t1");
		expect(read("draft")).toBeNull();
	});

	test("a name that is not a field throws", () => {
		expect(() => column("a'b")).toThrow('not a field the catalogue stores: "a\'b"');
		expect(() => column("x); DROP")).toThrow("not a field the catalogue stores");
	});
});

describe("updatedDoc", () => {
	test("$set of an object stores it as an object, queryable by its fields", () => {
		expect(update({ _id: "g3" }, { $set: { change: { token: "t9", at: 5 } } })).toBe(1);
		expect(stored("g3")).toEqual({ ...games.g3, change: { token: "t9", at: 5 } });
		expect(selected({ "change.token": "t9" })).toEqual(["g3"]);
	});

	test("$set of a string stores it exactly, quotes and all", () => {
		const title = `It's "new"\u2028 ✓`;
		expect(update({ _id: "g4" }, { $set: { title, age: 3 } })).toBe(1);
		expect(stored("g4")).toEqual({ title, age: 3 });
	});

	test("$unset removes the fields, leaving the others", () => {
		expect(update({ _id: "g2" }, { $unset: { draft: true, category: true } })).toBe(1);
		expect(stored("g2")).toEqual({ title: "agricola deluxe", age: 8 });
	});

	test("$unset and $set in one update", () => {
		expect(update({ _id: "g1" }, { $unset: { change: true }, $set: { category: "c2" } })).toBe(1);
		expect(stored("g1")).toEqual({ title: "Agricola", age: 12, category: "c2" });
	});

	test("changes only the records the condition selects", () => {
		const claim = { $set: { change: { token: "t2" } } };
		expect(update({ _id: "g2", draft: { $exists: false } }, claim)).toBe(0);
		expect(stored("g2")).toEqual(games.g2);
		expect(update({ category: "c1" }, { $set: { age: 1 } })).toBe(2);
		expect(selected({ age: 1 })).toEqual(["g1", "g3"]);
	});

	test("an update of _id throws", () => {
		expect(() => updatedDoc({ $set: { _id: "other" } })).toThrow('not a field an update may write: "_id"');
		expect(() => updatedDoc({ $unset: { _id: true } })).toThrow('not a field an update may write: "_id"');
	});

	test("an operator it does not know, or a field that is not one, throws", () => {
		expect(() => updatedDoc({ $inc: { age: 1 } })).toThrow("update operators $inc are not supported by the SQLite store");
		expect(() => updatedDoc({ title: "replaced" })).toThrow("update operators title are not supported");
		expect(() => updatedDoc({ $set: { "a'b": 1 } })).toThrow("not a field an update may write");
		expect(() => updatedDoc({ $unset: { "x'); DROP TABLE games; --": true } })).toThrow("not a field an update may write");
	});
});

describe("updatedColumns", () => {
	const indexed = new Set(["title", "category", "change.at", "change.category"]);

	test("names only the columns of the fields the update writes, with their new values", () => {
		expect(updatedColumns({ $set: { title: "Agricola", age: 12 } }, indexed)).toEqual({ sql: ', "title" = ?', values: ["Agricola"] });
		expect(updatedColumns({ $set: { age: 12 }, $unset: { draft: true } }, indexed)).toEqual({ sql: "", values: [] });
	});

	test("a field written or removed whole names the columns inside it", () => {
		expect(updatedColumns({ $set: { change: { token: "t1", at: 5, category: "c2" } } }, indexed)).toEqual({
			sql: ', "change.at" = ?, "change.category" = ?',
			values: [5, "c2"],
		});
		expect(updatedColumns({ $set: { change: { token: "t1" } } }, indexed)).toEqual({
			sql: ', "change.at" = ?, "change.category" = ?',
			values: [null, null],
		});
		expect(updatedColumns({ $unset: { change: true }, $set: { category: "c1" } }, indexed)).toEqual({
			sql: ', "category" = ?, "change.at" = NULL, "change.category" = NULL',
			values: ["c1"],
		});
	});

	test("each column holds what SQLite's json_extract reads from the same record", () => {
		const record = { title: "Café \u2028", age: 12, draft: true, change: { at: 5, tags: ["a"] }, none: null };
		db.prepare("INSERT INTO games (_id, doc) VALUES ('g9', ?)").run(JSON.stringify(record));
		for (const field of ["title", "age", "draft", "change", "change.at", "change.tags", "none", "missing", "title.inner"]) {
			const sql = (db.prepare(`SELECT ${column(field)} AS value FROM games WHERE _id = 'g9'`).get() as { value: unknown }).value;
			expect([field, extracted(record, field)]).toEqual([field, sql]);
		}
	});

	test("a write inside an indexed field throws rather than leaving its column behind", () => {
		expect(() => updatedColumns({ $set: { "title.sub": 1 } }, indexed)).toThrow(
			"an update inside the indexed field title is not supported by the SQLite store",
		);
	});
});
