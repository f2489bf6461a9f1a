/**
 * Moves a DATA_DIR's NeDB files (`<collection>.db`) into the SQLite database at start: each collection in one transaction, then its
 * file moved into `nedb-migrated/`. Killed before the commit, the next start migrates again; killed after, it only moves the file.
 */
import { existsSync, readFileSync, renameSync } from "node:fs";
import path from "node:path";
import type { Logger } from "moleculer";
import type { DatabaseSync } from "node:sqlite";
import { inTransaction, makeFolder, UnusableDataDir } from "./sqlite-database";

/** Where the migrated files go, in DATA_DIR. */
const MIGRATED_FOLDER = "nedb-migrated";

type Doc = Record<string, unknown> & { _id?: unknown; $$deleted?: unknown };

/**
 * The records a NeDB file holds: later lines of an id replace earlier ones, `$$deleted` removes one, index lines are skipped.
 * A half-written last line (a killed append) is dropped; a damaged line anywhere else stops the start, naming it.
 */
export function readNeDbFile(file: string): { records: Map<string, Doc>; tornTail: boolean } {
	const lines = readFileSync(file, "utf8").split("\n");
	const records = new Map<string, Doc>();
	let tornTail = false;
	lines.forEach((line, index) => {
		if (line.trim() === "") return;
		let doc: Doc;
		try {
			doc = JSON.parse(line) as Doc;
		} catch (err) {
			if (index === lines.length - 1) {
				tornTail = true;
				return;
			}
			throw new UnusableDataDir(
				`${file} line ${index + 1} is not a record NeDB wrote (${(err as Error).message}): it cannot be migrated`,
			);
		}
		if (typeof doc._id !== "string") return;
		if (doc.$$deleted === true) records.delete(doc._id);
		else records.set(doc._id, doc);
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
	const { records, tornTail } = migrated ? { records: new Map<string, Doc>(), tornTail: false } : readNeDbFile(file);
	// Synced at its commit (NORMAL syncs at checkpoints): after a power cut the file is never found moved aside, its records lost.
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
		db.exec("PRAGMA synchronous = NORMAL");
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
