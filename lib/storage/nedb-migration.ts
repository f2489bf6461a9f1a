/**
 * A DATA_DIR of an earlier version, which kept each collection in a NeDB file (`<collection>.db`),
 * moved into the SQLite database at its first start: every record with its id in one transaction,
 * then the old files moved aside, into `nedb-<time>/`. Killed before the commit, nothing is
 * stored and the next start migrates again; killed after, the next start only moves the files.
 */
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import path from "node:path";
import type { Logger } from "moleculer";
import type { DatabaseSync } from "node:sqlite";
import { DATA_SERVICE_NAMES } from "../catalogue/services";
import { UnusableDataDir } from "./sqlite-database";

const MIGRATED = "nedb-migrated";

type Doc = Record<string, unknown> & { _id?: unknown; $$deleted?: unknown };

/**
 * The records a NeDB file holds: its lines in order, a later line of an id replacing an earlier
 * one and `$$deleted` removing it, index lines skipped. Lines are split at "\n" only (NeDB escapes
 * nothing else). A half-written last line, left by a process killed while appending, is dropped;
 * a damaged line anywhere else stops the start, naming it.
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

/** Migrates the NeDB files of `dataDir` into `db`, whose tables are those of lib/storage/sqlite-database.ts. */
export function migrateNeDbFiles(db: DatabaseSync, dataDir: string, logger?: Logger): void {
	const found = DATA_SERVICE_NAMES.map(name => ({ name, file: path.join(dataDir, `${name}.db`) })).filter(({ file }) => existsSync(file));
	if (found.length === 0) return;
	const migrated = db.prepare("SELECT value FROM catalogue_meta WHERE key = ?").get(MIGRATED) as { value: string } | undefined;
	if (!migrated) {
		const read = found.map(({ name, file }) => ({ name, file, ...readNeDbFile(file) }));
		db.exec("BEGIN IMMEDIATE");
		try {
			for (const { name, records } of read) {
				const insert = db.prepare(`INSERT OR REPLACE INTO ${name} (_id, doc) VALUES (?, ?)`);
				for (const { _id, ...doc } of records.values()) insert.run(String(_id), JSON.stringify(doc));
			}
			db.prepare("INSERT INTO catalogue_meta VALUES (?, ?)").run(MIGRATED, new Date().toISOString());
			db.exec("COMMIT");
		} catch (err) {
			db.exec("ROLLBACK");
			throw err;
		}
		for (const { file, name, records, tornTail } of read) {
			logger?.info(`Migrated ${records.size} ${name} from the NeDB file ${file} into the SQLite database.`);
			if (tornTail) logger?.warn(`${file} ended in a half-written line (a write cut off by a crash, never acknowledged): left out.`);
		}
	} else logger?.warn(`NeDB files in ${dataDir} after their migration on ${migrated.value}: moved aside unread.`);
	const aside = path.join(dataDir, `nedb-${new Date().toISOString().replace(/[:.]/g, "-")}`);
	mkdirSync(aside);
	for (const { file } of found) renameSync(file, path.join(aside, path.basename(file)));
	logger?.info(`The NeDB files are kept in ${aside}; the catalogue no longer reads them.`);
}
