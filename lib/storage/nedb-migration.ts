/**
 * Moves a DATA_DIR's NeDB files (`<collection>.db`) into the SQLite database at start: each collection in one transaction, then its
 * file moved into `nedb-migrated/`. Killed before the commit, the next start migrates again; killed after, it only moves the file.
 */
import { isUtf8 } from "node:buffer";
import { existsSync, readFileSync, renameSync } from "node:fs";
import path from "node:path";
import type { Logger } from "moleculer";
import type { DatabaseSync } from "node:sqlite";
import { storedTypes } from "../catalogue/kind";
import { KINDS } from "../catalogue/kinds";
import { inTransaction, makeFolder, UnusableDataDir } from "./sqlite-database";

/** Where the migrated files go, in DATA_DIR. */
const MIGRATED_FOLDER = "nedb-migrated";

type Doc = Record<string, unknown> & { _id?: unknown; $$deleted?: unknown };

/** A file's lines, split at `\n` only, as bytes. */
function linesOf(bytes: Buffer): Buffer[] {
	const lines: Buffer[] = [];
	for (let start = 0; start <= bytes.length;) {
		const end = bytes.indexOf(0x0a, start);
		lines.push(bytes.subarray(start, end === -1 ? bytes.length : end));
		start = end === -1 ? bytes.length + 1 : end + 1;
	}
	return lines;
}

/**
 * The records a NeDB file holds: later lines of an id replace earlier ones, `$$deleted` removes one, index lines are skipped.
 * A half-written last line (a killed append) is dropped; a damaged line anywhere else stops the start, naming it: one that is not
 * UTF-8, not a JSON object, or a record with a field of another type than `types` gives it (a category's id that is an object
 * would fail every list of games).
 */
export function readNeDbFile(file: string, types: Record<string, string> = {}): { records: Map<string, Doc>; tornTail: boolean } {
	const lines = linesOf(readFileSync(file));
	const records = new Map<string, Doc>();
	let tornTail = false;
	const damaged = (index: number, why: string) =>
		new UnusableDataDir(`${file} line ${index + 1} is not a record NeDB wrote (${why}): it cannot be migrated`);
	lines.forEach((bytes, index) => {
		let doc: unknown;
		try {
			if (!isUtf8(bytes)) throw new Error("its bytes are not UTF-8");
			const line = bytes.toString("utf8");
			if (line.trim() === "") return;
			doc = JSON.parse(line);
		} catch (err) {
			if (index === lines.length - 1) {
				tornTail = true;
				return;
			}
			throw damaged(index, (err as Error).message);
		}
		if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw damaged(index, "it is not a JSON object");
		const record = doc as Doc;
		if (typeof record._id !== "string") return;
		if (record.$$deleted === true) {
			records.delete(record._id);
			return;
		}
		for (const [field, type] of Object.entries(types))
			if (field in record && typeof record[field] !== type) throw damaged(index, `its '${field}' is not a ${type}`);
		records.set(record._id, record);
	});
	return { records, tornTail };
}

/** Migrates `collection`'s NeDB file in `dataDir`, if any, into its table (each record stored by `put`), then moves the file aside. */
export function migrateNeDbFile(db: DatabaseSync, dataDir: string, collection: string, put: (doc: Doc) => void, logger?: Logger): void {
	const file = path.join(dataDir, `${collection}.db`);
	if (!existsSync(file)) return;
	const key = `nedb-migrated ${collection}`;
	const migratedOn = () => db.prepare("SELECT value FROM catalogue_meta WHERE key = ?").get(key) as { value: string } | undefined;
	let migrated = migratedOn();
	const kind = KINDS.find(({ service }) => service === collection);
	let read: ReturnType<typeof readNeDbFile>;
	try {
		read = migrated ? { records: new Map<string, Doc>(), tornTail: false } : readNeDbFile(file, kind && storedTypes(kind));
	} catch (err) {
		// Moved aside since it was looked for: a replica starting at once on this folder migrated it.
		if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
		throw err;
	}
	const { records, tornTail } = read;
	// Synced at its commit (NORMAL syncs at checkpoints): after a power cut the file is never found moved aside, its records lost.
	// Then as it was: FULL already when the checkpoint thread failed (sqlite-database.ts).
	const { synchronous } = db.prepare("PRAGMA synchronous").get() as { synchronous: number };
	db.exec("PRAGMA synchronous = FULL");
	try {
		// Asked again inside the transaction: replicas starting at once on one folder migrate it once.
		inTransaction(db, () => {
			migrated = migratedOn();
			if (migrated) return;
			for (const doc of records.values()) put(doc);
			db.prepare("INSERT INTO catalogue_meta VALUES (?, ?)").run(key, new Date().toISOString());
		});
	} finally {
		db.exec(`PRAGMA synchronous = ${synchronous}`);
	}
	if (migrated) logger?.warn(`${file} after its migration on ${migrated.value}: moved aside unread.`);
	else {
		logger?.info(`Migrated ${records.size} ${collection} from the NeDB file ${file} into the SQLite database.`);
		if (tornTail) logger?.warn(`${file} ended in a half-written line (a write cut off by a crash, never acknowledged): left out.`);
	}
	const aside = path.join(dataDir, MIGRATED_FOLDER);
	makeFolder(aside);
	const kept = path.join(
		aside,
		existsSync(path.join(aside, path.basename(file))) ? `${path.basename(file)}.${Date.now()}` : path.basename(file),
	);
	try {
		renameSync(file, kept);
	} catch (err) {
		// A replica starting at once moved it first.
		if ((err as NodeJS.ErrnoException).code === "ENOENT" && !existsSync(file)) return;
		throw err;
	}
	logger?.info(`The NeDB file is kept as ${kept}; the catalogue no longer reads it.`);
}
