/**
 * An online backup of the embedded store: a copy of the NeDB files of a DATA_DIR taken while the
 * catalogue that writes them runs, in this process or another, and kept only once NeDB reads it
 * back with every game's category and author in it. docs/operations.md, "Backups".
 */
import { closeSync, existsSync, fstatSync, openSync, read, realpathSync } from "node:fs";
import path from "node:path";
import Datastore from "@seald-io/nedb";
import { inSteps } from "../async/steps";
import { DATA_SERVICE_NAMES, type DataServiceName } from "../catalogue/services";
import type { CatalogueConfig } from "../config/config";
import { orphans } from "../integrity/integrity";
import { dataFile } from "./adapter";
import { writeBackupFolder } from "./backup-folder";
import { escapeLineBreaks, keepLine } from "./nedb-files";

/** Snapshots taken before a backup gives up: a write lands between two opens rarely, twice in a row more rarely still. */
const BACKUP_TRIES = 5;

/** Records put into NeDB's indexes between two turns of the event loop: a few milliseconds' work. */
const INSERT_STEP = 2000;

/** What a finished backup says of itself, in its manifest and to whoever ran it. */
export interface Backup {
	dataDir: string;
	/** When the snapshot kept was taken (ISO 8601). */
	takenAt: string;
	/** Snapshots taken until one held every game's category and author. */
	tries: number;
	/** False when the folder lacks categories.db or authors.db (a cluster node keeps its own collection only). */
	referencesChecked: boolean;
	/** Each collection copied: its records and its file's bytes. */
	collections: Partial<Record<DataServiceName, { records: number; bytes: number }>>;
}

export interface BackupOptions {
	tries?: number;
	/** Called after each file of a snapshot is opened: where a test lands the write another process may. */
	opened?: (collection: DataServiceName) => void;
}

/** A collection's file as a snapshot holds it: open, with its size at that instant. */
type Opened = { collection: DataServiceName; fd: number; size: number };
type Copy = { collection: DataServiceName; bytes: Buffer; records: Record<string, unknown>[] };

const FILE_NAMES = DATA_SERVICE_NAMES.map(name => `${name}.db`).join(", ");

/** Why this configuration leaves no files to back up (MongoDB, memory), or undefined when it keeps NeDB files. */
export function noFilesToBackUp({ mongoUri, storage }: Pick<CatalogueConfig, "mongoUri" | "storage">): string | undefined {
	if (mongoUri)
		return (
			"MONGO_URI is set: the records are in MongoDB, not in files here. Back it up with `mongodump --oplog` and restore it " +
			'with `mongorestore --oplogReplay` (docs/operations.md, "Backups"; not tried with this catalogue: no MongoDB ran where it was built).'
		);
	return storage === "memory" ? "STORAGE=memory keeps no files: there is nothing to back up." : undefined;
}

/** The file opened for reading, or undefined when there is none. */
function openIfThere(file: string): number | undefined {
	try {
		return openSync(file, "r");
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
		throw err;
	}
}

/**
 * The collections' files open, each with its size, taken in one synchronous stretch: in the process
 * that writes them (each append one synchronous write, a compaction one rename), no write lands in
 * between, so together they are one instant. A compaction's rename leaves an open file whole.
 */
function snapshot(dataDir: string, opened?: BackupOptions["opened"]): Opened[] {
	const files: Opened[] = [];
	try {
		for (const collection of DATA_SERVICE_NAMES) {
			const fd = openIfThere(dataFile(dataDir, collection));
			if (fd === undefined) continue;
			files.push({ collection, fd, size: fstatSync(fd).size });
			opened?.(collection);
		}
	} catch (err) {
		for (const { fd } of files) closeSync(fd);
		throw err;
	}
	return files;
}

const readAt = (fd: number, into: Buffer, at: number) =>
	new Promise<number>((resolve, reject) =>
		read(fd, into, at, into.length - at, at, (err, bytes) => (err ? reject(err) : resolve(bytes))),
	);

/** The file's bytes up to its snapshot size, cut after the last "\n": another process's append may be half there. */
async function wholeLines({ fd, size }: Omit<Opened, "collection">): Promise<Buffer> {
	const bytes = Buffer.alloc(size);
	let end = 0;
	for (let got = 1; end < size && got > 0; end += got) got = await readAt(fd, bytes, end);
	return bytes.subarray(0, bytes.subarray(0, end).lastIndexOf(0x0a) + 1);
}

/**
 * The records of a copy as the adapter's NeDB loads them (`$$deleted` and index lines applied);
 * throws on a line it cannot read. NeDB reads the text in one synchronous call (about 0.3 s at
 * 100,000 games, which the REPL's process spends away from its requests); the records go into its
 * indexes a step at a time.
 */
async function records(bytes: Buffer): Promise<Record<string, unknown>[]> {
	const db = new Datastore<Record<string, unknown>>({
		inMemoryOnly: true,
		afterSerialization: escapeLineBreaks,
		beforeDeserialization: keepLine,
		corruptAlertThreshold: 0,
	});
	// NeDB's own reading of a data file's text, which its load runs; it does not export it by name.
	const reader = db.persistence as unknown as {
		treatRawData(text: string): { data: Record<string, unknown>[]; indexes: Record<string, Datastore.EnsureIndexOptions> };
	};
	const { data, indexes } = reader.treatRawData(bytes.toString("utf8"));
	for (const index of Object.values(indexes)) await db.ensureIndexAsync(index);
	for await (const step of inSteps(data, INSERT_STEP)) await db.insertAsync(step);
	return db.getAllData();
}

/** One snapshot's copies, each with its records, or with why they are not a catalogue: a line of one NeDB cannot read. */
async function takeCopies(dataDir: string, opened: BackupOptions["opened"]): Promise<{ taken: Copy[]; problem?: string }> {
	const files = snapshot(dataDir, opened);
	const taken: Copy[] = [];
	try {
		for (const { collection, ...file } of files) {
			const bytes = await wholeLines(file);
			const loaded = await records(bytes).catch((err: Error) => err);
			if (loaded instanceof Error) return { taken, problem: `${collection}.db holds a line NeDB cannot read (${loaded.message})` };
			taken.push({ collection, bytes, records: loaded });
		}
	} finally {
		for (const { fd } of files) closeSync(fd);
	}
	return { taken };
}

/** Whether the copies hold categories and authors, against which the games' references are checked. */
const referencesChecked = (taken: Copy[]) => ["categories", "authors"].every(name => taken.some(copy => copy.collection === name));

/** The games of the copies whose category or author is not in them, said in a line; undefined when there are none. */
function missingReferences(taken: Copy[]): string | undefined {
	if (!referencesChecked(taken)) return undefined;
	const of = (name: DataServiceName) => taken.find(copy => copy.collection === name)?.records ?? [];
	const ids = (name: DataServiceName) => new Set(of(name).map(record => String(record._id)));
	const games = of("games").map(game => ({ id: String(game._id), category: String(game.category), author: String(game.author) }));
	const missing = orphans(games, { categories: ids("categories"), authors: ids("authors") });
	if (missing.length === 0) return undefined;
	const named = missing.slice(0, 5).map(game => `${game.id} (${game.missing.join(", ")})`);
	return `${missing.length} game(s) refer to a missing category or author: ${named.join(", ")}`;
}

/** Snapshots of `from` until one is a whole catalogue, at most `tries`; throws when none was, or there are no files. */
async function consistentCopies(from: string, { tries = BACKUP_TRIES, opened }: BackupOptions) {
	for (let tried = 1; ; tried++) {
		const takenAt = new Date();
		const { taken, problem = missingReferences(taken) } = await takeCopies(from, opened);
		if (!problem && taken.length === 0)
			throw new Error(`No catalogue files in ${from} (${FILE_NAMES}): is it the DATA_DIR the catalogue writes?`);
		if (!problem) return { taken, takenAt, tried };
		if (tried >= tries)
			throw new Error(
				`No consistent copy of ${from} in ${tried} tries: ${problem}. Either writes kept getting between the files, ` +
					"or the files themselves hold such games (the REPL's `integrity` command lists them).",
			);
	}
}

/** The path a folder really is (symbolic links followed), or as given when there is none yet. */
const realFolder = (dir: string) => (existsSync(dir) ? realpathSync(dir) : dir);

/**
 * Copies the collections' files of `dataDir` into `targetDir` as `<collection>.db`, then `backup.json`,
 * while a catalogue may write them; returns what it copied. A snapshot whose games lack a category
 * or author (a write got between two opens, out of process) is taken again, up to `tries` times.
 * The folder never holds a torn file (`writeBackupFolder`).
 */
export async function backupDataDir(dataDir: string, targetDir: string, options: BackupOptions = {}): Promise<Backup> {
	const [from, to] = [path.resolve(dataDir), path.resolve(targetDir)];
	if (realFolder(to) === realFolder(from))
		throw new Error(
			`The backup's folder ${to} is the data folder itself: give another one (the copy would be written over what it copies).`,
		);
	const { taken, takenAt, tried } = await consistentCopies(from, options);
	const backup: Backup = {
		dataDir: from,
		takenAt: takenAt.toISOString(),
		tries: tried,
		referencesChecked: referencesChecked(taken),
		collections: Object.fromEntries(taken.map(copy => [copy.collection, { records: copy.records.length, bytes: copy.bytes.length }])),
	};
	await writeBackupFolder(to, taken, backup);
	return backup;
}

/** The lines an operator reads after a backup: from where to where, in how many tries, each collection's records and bytes. */
export function backupText(backup: Backup, targetDir: string): string {
	const tries = backup.tries === 1 ? "1 try" : `${backup.tries} tries (a write got between the files)`;
	const rows = Object.entries(backup.collections).map(
		([name, copied]) => `${name.padEnd(12)} ${String(copied.records).padStart(8)} ${String(copied.bytes).padStart(12)}`,
	);
	const unchecked = backup.referencesChecked ? [] : ["Games' categories and authors not checked: their files are not in this folder."];
	return [
		`Backed up ${backup.dataDir} to ${path.resolve(targetDir)} in ${tries}, snapshot at ${backup.takenAt}:`,
		`${"collection".padEnd(12)} ${"records".padStart(8)} ${"bytes".padStart(12)}`,
		...rows,
		...unchecked,
	].join("\n");
}
