/**
 * An online backup of the embedded store: SQLite's backup of DATA_DIR's database, taken while a catalogue writes it, from the REPL
 * or `npm run backup` (docs/operations.md, "Backups").
 */
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { open, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { backup, DatabaseSync } from "node:sqlite";
import { DATA_SERVICE_NAMES, type DataServiceName } from "../catalogue/services";
import { orphans } from "../integrity/integrity";
import { DATABASE_FILE, LOCK_FILE, realFolder } from "./location";
import { BACKUP_NOTE, makeFolder, openForReading } from "./sqlite-database";

/** The file written last into a backup's folder: a folder without it holds no finished backup. */
export const MANIFEST = "backup.json";

/** SQLite copies this many pages per step at most: all of them, in one step, so that no write restarts the copy. */
const ALL_PAGES = 0x7fffffff;

/** What a finished backup says of itself, in its manifest and to whoever ran it. */
export interface Backup {
	dataDir: string;
	/** When the snapshot was taken (ISO 8601). */
	takenAt: string;
	/** The records of each collection in the copy: those its node keeps (a node of one service keeps one). */
	collections: Partial<Record<DataServiceName, number>>;
	/** The copy's size. */
	bytes: number;
	/**
	 * Games of the copy whose category or author it lacks (none, unless the database itself has such games); absent when the copy
	 * does not keep all three collections, as a node of one service does.
	 */
	orphans?: number;
}

/** Flushes a folder's entries (the renames and removals in it) to the disk. */
export async function syncFolder(dir: string): Promise<void> {
	const handle = await open(dir, "r");
	await handle.sync().finally(() => handle.close());
}

/** Flushes a file to the disk. */
async function syncFile(file: string): Promise<void> {
	const handle = await open(file, "r+");
	await handle.sync().finally(() => handle.close());
}

/**
 * What the copy holds: each collection's records and its orphaned games. The copy is first made one file (no WAL) for a restore, and
 * noted as a backup taken at `takenAt`, so that the catalogue restored from it starts its feeds again (sqlite-database.ts restartFeeds).
 */
function contents(file: string, takenAt: string): Pick<Backup, "collections" | "orphans"> {
	const db = new DatabaseSync(file);
	try {
		db.exec("PRAGMA journal_mode = DELETE");
		db.prepare("INSERT OR REPLACE INTO catalogue_meta VALUES (?, ?)").run(BACKUP_NOTE, takenAt);
		const kept = DATA_SERVICE_NAMES.filter(name =>
			db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(name),
		);
		const ids = (name: DataServiceName) =>
			new Set((db.prepare(`SELECT _id FROM ${name}`).all() as { _id: string }[]).map(row => row._id));
		// The records as the services count them: a game that is a draft (a write in progress, dropped once its lease ends) is not one.
		const stored = (name: DataServiceName) => (name === "games" ? `games WHERE json_extract(doc, '$.draft') IS NULL` : name);
		const collections = Object.fromEntries(
			kept.map(name => [name, (db.prepare(`SELECT count(*) AS n FROM ${stored(name)}`).get() as { n: number }).n]),
		) as Partial<Record<DataServiceName, number>>;
		if (kept.length < DATA_SERVICE_NAMES.length) return { collections };
		const games = db
			.prepare(
				`SELECT _id AS id, json_extract(doc, '$.category') AS category, json_extract(doc, '$.author') AS author FROM ${stored("games")}`,
			)
			.all() as { id: string; category: string; author: string }[];
		return { collections, orphans: orphans(games, { categories: ids("categories"), authors: ids("authors") }).length };
	} finally {
		db.close();
	}
}

/** Makes `dir` if it is missing; refuses, naming it, a path that is not a folder or one this process cannot write into. */
function writableFolder(dir: string): void {
	const refused = (why: string) => new Error(`The backup's folder ${dir} ${why}: give a folder this process can write into.`);
	try {
		makeFolder(dir);
		if (!statSync(dir).isDirectory()) throw refused("is a file");
		accessSync(dir, constants.W_OK);
	} catch (err) {
		const { code } = err as NodeJS.ErrnoException;
		if (code === "ENOTDIR") throw refused("is under a file");
		if (code) throw refused(`cannot be written (${code})`);
		throw err;
	}
}

/**
 * Copies `dataDir`'s database into `targetDir` as one snapshot, while a catalogue may write it, then writes `backup.json`; returns
 * what it copied. The copy is renamed into place once on disk and the manifest goes last, so the folder never holds a torn copy.
 */
export async function backupDataDir(dataDir: string, targetDir: string): Promise<Backup> {
	const [from, to] = [path.resolve(dataDir), path.resolve(targetDir)];
	if (realFolder(to) === realFolder(from))
		throw new Error(
			`The backup's folder ${to} is the data folder itself: give another one (the copy would be written over what it copies).`,
		);
	// Another catalogue's folder: its database would be replaced under its log, which SQLite then reads as damage.
	if (existsSync(path.join(to, LOCK_FILE)))
		throw new Error(
			`The backup's folder ${to} is a catalogue's data folder (it holds ${LOCK_FILE}): give another one (the copy would replace its database).`,
		);
	const source = openForReading(from);
	try {
		writableFolder(to);
	} catch (err) {
		source.close();
		throw err;
	}
	const [copy, partial, manifest] = [path.join(to, DATABASE_FILE), path.join(to, `${DATABASE_FILE}.partial`), path.join(to, MANIFEST)];
	// The copy and the files SQLite keeps beside it while it writes the copy (its log and the log's index, as the source is in WAL
	// mode, and the journal of the note): those of a backup killed or failed must not be paired with the next copy.
	const removePartial = () => Promise.all(["", "-wal", "-shm", "-journal"].map(suffix => rm(`${partial}${suffix}`, { force: true })));
	let taken: Backup;
	try {
		await removePartial();
		const takenAt = new Date().toISOString();
		await backup(source, partial, { rate: ALL_PAGES });
		const held = contents(partial, takenAt);
		await syncFile(partial);
		taken = { dataDir: from, takenAt, ...held, bytes: (await stat(partial)).size };
	} catch (err) {
		await removePartial();
		throw err;
	} finally {
		source.close();
	}
	// From here until the new manifest, the folder holds no finished backup.
	await rm(manifest, { force: true });
	await rename(partial, copy);
	await syncFolder(to);
	await writeFile(`${manifest}.partial`, `${JSON.stringify(taken, null, 2)}\n`, { flush: true });
	await rename(`${manifest}.partial`, manifest);
	await syncFolder(to);
	return taken;
}

/** The lines an operator reads after a backup: from where to where, when, each collection's records. */
export function backupText(taken: Backup, targetDir: string): string {
	const rows = Object.entries(taken.collections).map(([name, records]) => `${name.padEnd(12)} ${String(records).padStart(8)}`);
	const orphaned =
		(taken.orphans ?? 0) > 0
			? [
					`${taken.orphans} game(s) refer to a missing category or author, in the database itself: the REPL's \`integrity\` lists them.`,
				]
			: [];
	return [
		`Backed up ${taken.dataDir} to ${path.join(path.resolve(targetDir), DATABASE_FILE)} (${taken.bytes} bytes), snapshot at ${taken.takenAt}:`,
		`${"collection".padEnd(12)} ${"records".padStart(8)}`,
		...rows,
		...orphaned,
	].join("\n");
}
