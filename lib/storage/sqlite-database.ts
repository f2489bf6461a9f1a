/**
 * The embedded store's database: one SQLite file per DATA_DIR (`catalogue.sqlite`, node:sqlite), a
 * table per collection, opened once per process and shared by the services in it. docs/storage.md.
 */
import { accessSync, constants, existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { DATA_SERVICE_NAMES } from "../catalogue/services";
import { feedName, publishedKey, resetKey } from "../feed/changes";
import { databaseFile, LOCK_FILE } from "./location";

/** What `catalogue_meta` says a catalogue's database is; a file without it is not one. */
const FORMAT = "game-catalogue 1";

/** How long a write waits for another process's write to end before it fails (replicas sharing a file). */
const BUSY_WAIT_MS = 5000;

/** A DATA_DIR the catalogue cannot use, said in one line: the variable, the path and why. */
export class UnusableDataDir extends Error {}

/** A database opened by another catalogue process that keeps its cache in memory, or this one would. */
export class DataDirInUse extends UnusableDataDir {}

/**
 * How a process holds a DATA_DIR. `alone`: it caches answers in its own memory, so no other process may write under it.
 * `shared`: its cache sees every process's writes (or there is none), so processes may share the file.
 */
export type Holding = "alone" | "shared";

export interface Database {
	/** Where it is, for messages; `:memory:` for a store in memory. */
	file: string;
	/** Every write and short read goes through this connection. */
	writer: DatabaseSync;
	/** A statement of the writer, compiled once and kept: compiling costs more than running most of them. */
	prepared: (sql: string) => StatementSync;
	/** Long reads (a list of every game) step through connections of their own, so that writes commit meanwhile. */
	readers: Readers;
	/** A snapshot that only reads (`readSnapshot`): no index is made, no write taken. */
	readOnly: boolean;
	/** When the backup this database was restored from was taken, until said once (`restartFeeds`). */
	restoredFrom?: string;
	/** Closes it once every service of the process that opened it has. */
	release(): void;
}

/**
 * The connections of long reads. SQLite reads every statement of a connection in one snapshot while any of them is being stepped
 * through, so two long reads on one connection would read as the first began: a list begun after a write would miss it, and be
 * cached as current. Each long read takes a connection of its own and gives it back once its statement is done.
 */
export interface Readers {
	take(): DatabaseSync;
	give(db: DatabaseSync): void;
}

/** Idle reading connections kept per database; more long reads at once each open one, closed once given back. */
const READERS_KEPT = 4;

/** Reading connections to `file`, opened as needed: `close` ends them all, those in use too. */
function readingConnections(file: string): Readers & { close(): void } {
	const idle: DatabaseSync[] = [];
	const all = new Set<DatabaseSync>();
	return {
		take() {
			const db = idle.pop() ?? connect(file);
			all.add(db);
			return db;
		},
		give(db) {
			if (!all.has(db)) return;
			if (idle.length < READERS_KEPT) return void idle.push(db);
			all.delete(db);
			db.close();
		},
		close() {
			for (const db of all) db.close();
			all.clear();
			idle.length = 0;
		},
	};
}

/** One connection for every read: a database in memory, or a snapshot, which has no other. */
const only = (db: DatabaseSync): Readers => ({ take: () => db, give: () => undefined });

/** How often the checkpoint thread syncs the log to the disk: the most a power cut can take (docs/storage.md). */
const CHECKPOINT_EVERY_MS = 100;

/**
 * Log pages at which a write checkpoints the log itself (SQLite's `wal_autocheckpoint`): a bound
 * under writes so steady that the thread's checkpoints never leave the log empty to restart.
 */
const LOG_PAGES = 10_000;

/**
 * A thread that checkpoints `file`'s log every CHECKPOINT_EVERY_MS, as SQLite suggests, so the checkpoint's `fsync`s happen there,
 * not inside a write on the event loop (docs/performance.md, "Writes on SQLite"). A thread that fails (it cannot open the file,
 * with no file descriptor left, say) leaves the writer to sync every commit itself, and says so with `warn`.
 */
function checkpointThread(file: string, writer: DatabaseSync, warn?: (message: string) => void): Worker {
	const code = `
		const { DatabaseSync } = require("node:sqlite");
		const { workerData } = require("node:worker_threads");
		const db = new DatabaseSync(workerData.file, { timeout: 0 });
		db.exec("PRAGMA synchronous = NORMAL");
		// Busy (another process's checkpoint, a write in progress): the next one takes it.
		setInterval(() => { try { db.exec("PRAGMA wal_checkpoint(PASSIVE)"); } catch {} }, workerData.every);`;
	const thread = new Worker(code, { eval: true, workerData: { file, every: CHECKPOINT_EVERY_MS } });
	thread.on("error", (err: Error) => {
		if (!writer.isOpen) return;
		writer.exec("PRAGMA synchronous = FULL");
		warn?.(`The checkpoint thread of ${file} stopped (${err.message}): every commit is synced to the disk from now on.`);
	});
	thread.unref();
	return thread;
}

/** Statements kept per connection at most: the catalogue's texts in use, and room for the page sizes and limits clients vary. */
const STATEMENTS_KEPT = 500;

/**
 * `db`'s statements by their text, each compiled once, the least recently used let go past STATEMENTS_KEPT: a client varying its
 * page size cannot push out the statements every write uses. Only for statements run whole at once (`run`, `get`, `all`): one
 * being iterated must not be reset by another caller.
 */
function statements(db: DatabaseSync): (sql: string) => StatementSync {
	const kept = new Map<string, StatementSync>();
	return sql => {
		let statement = kept.get(sql);
		// Taken out and put back: the Map's first text is then the least recently used.
		if (statement) kept.delete(sql);
		else {
			if (kept.size >= STATEMENTS_KEPT) kept.delete(kept.keys().next().value!);
			statement = db.prepare(sql);
		}
		kept.set(sql, statement);
		return statement;
	};
}

/** Compiled patterns of `catalogue_matches`: the categories' name filter asks the same few again and again. */
const patterns = new Map<string, RegExp>();
const PATTERNS_KEPT = 100;

function compiled(source: string, givenFlags: string): RegExp {
	// A global or sticky pattern remembers where it last matched: kept for every row, it would skip rows. One that ignores case folds
	// letters as Unicode does (`u`: ß and ẞ, k and the Kelvin sign), as MongoDB's PCRE does.
	let flags = givenFlags.replace(/[gy]/g, "");
	if (flags.includes("i") && !flags.includes("u") && !flags.includes("v")) flags += "u";
	const key = `${flags}/${source}`;
	let pattern = patterns.get(key);
	if (!pattern) {
		if (patterns.size >= PATTERNS_KEPT) patterns.clear();
		pattern = new RegExp(source, flags);
		patterns.set(key, pattern);
	}
	return pattern;
}

/** A connection with the catalogue's settings: WAL, `synchronous=NORMAL` (docs/storage.md, "What a crash can and cannot lose"), the `$regex` function. */
function connect(file: string | URL, options: { readOnly?: boolean } = {}): DatabaseSync {
	const db = new DatabaseSync(file, { readOnly: options.readOnly ?? false, timeout: BUSY_WAIT_MS });
	try {
		// For a new file: each write rewrites a page per index it touches, and the log takes whole
		// pages; smaller pages make writes cheaper and long reads dearer (docs/performance.md).
		db.exec("PRAGMA page_size = 2048");
		db.exec("PRAGMA synchronous = NORMAL");
		db.function("catalogue_matches", { deterministic: true }, (value, source, flags) =>
			typeof value === "string" && compiled(String(source), String(flags)).test(value) ? 1 : 0,
		);
	} catch (err) {
		db.close();
		throw err;
	}
	return db;
}

/** Makes the database's notes in a new database (unless `readOnly`) and turns WAL on, or refuses a file that is not a catalogue's of this format. */
function prepare(db: DatabaseSync, file: string, readOnly = false): void {
	const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as { name: string }[];
	if (tables.length > 0 && !tables.some(({ name }) => name === "catalogue_meta"))
		throw new UnusableDataDir(`${file} is not a catalogue's database (it holds tables ${tables.map(t => t.name).join(", ")})`);
	if (!readOnly)
		inTransaction(db, () => {
			db.exec("CREATE TABLE IF NOT EXISTS catalogue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID");
			db.prepare("INSERT OR IGNORE INTO catalogue_meta VALUES ('format', ?)").run(FORMAT);
		});
	const { value } = (db.prepare("SELECT value FROM catalogue_meta WHERE key = 'format'").get() ?? { value: "none" }) as { value: string };
	if (value !== FORMAT)
		throw new UnusableDataDir(`${file} is a catalogue database of another format (${value}); this version reads ${FORMAT}`);
	if (!readOnly && file !== ":memory:") db.exec("PRAGMA journal_mode = WAL");
}

/**
 * `run` in one transaction of `db`: all of it or none. A failure after which SQLite has rolled the transaction back itself (a full
 * disk, an I/O error) is thrown as it came, not as the failed `ROLLBACK` of a transaction no longer there.
 */
export function inTransaction<T>(db: DatabaseSync, run: () => T): T {
	db.exec("BEGIN IMMEDIATE");
	try {
		const result = run();
		db.exec("COMMIT");
		return result;
	} catch (err) {
		if (db.isTransaction) db.exec("ROLLBACK");
		throw err;
	}
}

/** The note that marks a backup's copy (lib/storage/backup.ts): when it was taken. */
export const BACKUP_NOTE = "backup taken at";

/**
 * A backup restored in place of the database (docs/operations.md, "Restore") holds the feeds as they were then, and a follower may be
 * past them, holding writes the restore undid; the next changes would be numbered as others it has seen. Each feed is emptied and
 * numbered on from the time in hundredths of a millisecond (15 digits, as positions are), past any seq handed out before (more than
 * the writes any feed took since the last restore), so every follower starts again from a full read; the outbox counts on from there,
 * its relay tells the cluster's stream first (resetKey), and the note goes in the same transaction. When that backup was taken, or
 * undefined for a database that is not a restored backup.
 */
function restartFeeds(db: DatabaseSync): string | undefined {
	// Read in the transaction: two replicas starting at once on the restored file restart the feeds once.
	return inTransaction(db, () => {
		const note = db.prepare("SELECT value FROM catalogue_meta WHERE key = ?").get(BACKUP_NOTE) as { value: string } | undefined;
		if (!note) return undefined;
		const from = Date.now() * 100;
		const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as { name: string }[];
		const names = new Set(tables.map(({ name }) => name));
		for (const collection of DATA_SERVICE_NAMES.filter(name => names.has(feedName(name)))) {
			const feed = feedName(collection);
			db.exec(`DELETE FROM "${feed}"`);
			db.prepare("DELETE FROM sqlite_sequence WHERE name = ?").run(feed);
			db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)").run(feed, from);
			db.prepare("INSERT OR REPLACE INTO catalogue_meta VALUES (?, ?)").run(publishedKey(collection), from);
			db.prepare("INSERT OR REPLACE INTO catalogue_meta VALUES (?, ?)").run(resetKey(collection), from);
		}
		db.prepare("DELETE FROM catalogue_meta WHERE key = ?").run(BACKUP_NOTE);
		return note.value;
	});
}

/**
 * Takes the DATA_DIR's lock file as SQLite locks any database, with a transaction held while the process has the store: `alone`
 * exclusive, `shared` shared, so `alone` excludes all others. The OS drops it with the process; readers (export, backup) take none.
 */
function lock(dataDir: string, holding: Holding, writer: DatabaseSync): DatabaseSync {
	const lockFile = path.join(dataDir, LOCK_FILE);
	const unusable = (why: string) =>
		new UnusableDataDir(`DATA_DIR ${dataDir} cannot be used: ${lockFile} ${why}; it holds no data: remove it while no catalogue runs`);
	// SQLite opens a file it may not write read-only, and takes no exclusive lock on a read-only database: two would start alone.
	try {
		accessSync(lockFile, constants.R_OK | constants.W_OK);
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw unusable(`cannot be written (${(err as NodeJS.ErrnoException).code})`);
	}
	const held = new DatabaseSync(lockFile, { timeout: 0 });
	try {
		if (holding === "alone") held.exec("BEGIN EXCLUSIVE");
		else {
			held.exec("BEGIN");
			held.prepare("SELECT count(*) FROM sqlite_schema").get();
		}
	} catch (err) {
		held.close();
		if ((err as { errcode?: number }).errcode !== SQLITE_BUSY) throw unusable(`cannot be locked (${(err as Error).message})`);
		const owner = writer.prepare("SELECT value FROM catalogue_meta WHERE key = 'owner'").get() as { value: string } | undefined;
		throw new DataDirInUse(inUseText(dataDir, holding, owner?.value));
	}
	writer.prepare("INSERT OR REPLACE INTO catalogue_meta VALUES ('owner', ?)").run(`process ${process.pid}`);
	return held;
}

const SQLITE_BUSY = 5;

/** `owner`: the last process that opened the folder, which is the holder when one holds it alone. */
const inUseText = (dataDir: string, holding: Holding, owner = "unknown") =>
	holding === "alone"
		? `DATA_DIR ${dataDir} is in use by another catalogue process (last opened by ${owner}): stop it first, or give every ` +
			"process that shares the folder the same REDIS_URL, so that their caches see each other's writes (docs/storage.md)"
		: `DATA_DIR ${dataDir} is in use by a catalogue process that caches answers in its own memory (${owner}): stop it, ` +
			"or start it with the same REDIS_URL as this one (docs/storage.md)";

/**
 * Makes `dir` and the missing folders above it one at a time: Node's recursive mkdirSync loops for ever on a path under /proc. A folder
 * made meanwhile by another process (replicas starting at once) is taken as made.
 */
export function makeFolder(dir: string): void {
	const missing: string[] = [];
	for (let at = dir; !existsSync(at); at = path.dirname(at)) missing.unshift(at);
	for (const folder of missing)
		try {
			mkdirSync(folder);
		} catch (err) {
			if ((err as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(folder).isDirectory()) throw err;
		}
}

/** Why a path cannot be used, in a few words; SQLite's reasons name the database file. */
const reason = (err: unknown, file: string) => {
	const { code, message } = err as NodeJS.ErrnoException;
	if (code === "ERR_SQLITE_ERROR") return `${file}: ${message}`;
	return code && !message.includes(code) ? `${code}: ${message}` : message;
};

interface Open extends Database {
	users: number;
}

const opened = new Map<string, Open>();

/**
 * The database of `dataDir`, opened (and created) on first use in the process; `null` gives one in memory of its own.
 * Throws `UnusableDataDir` when the folder or file cannot be used, and `DataDirInUse` when another process holds it.
 */
export function openDatabase(dataDir: string | null, holding: Holding, warn?: (message: string) => void): Database {
	if (dataDir === null) {
		const db = connect(":memory:");
		prepare(db, ":memory:");
		return { file: ":memory:", writer: db, prepared: statements(db), readers: only(db), readOnly: false, release: () => db.close() };
	}
	const dir = path.resolve(dataDir);
	const known = opened.get(dir);
	if (known) {
		known.users++;
		return known;
	}
	const file = databaseFile(dir);
	const connections: DatabaseSync[] = [];
	try {
		makeFolder(dir);
		const writer = connect(file);
		connections.push(writer);
		prepare(writer, file);
		connections.push(lock(dir, holding, writer));
		const restoredFrom = restartFeeds(writer);
		writer.exec(`PRAGMA wal_autocheckpoint = ${LOG_PAGES}`);
		const readers = readingConnections(file);
		const checkpoints = checkpointThread(file, writer, warn);
		const database: Open = {
			file,
			writer,
			prepared: statements(writer),
			readers,
			readOnly: false,
			restoredFrom,
			users: 1,
			release() {
				if (--database.users > 0) return;
				opened.delete(dir);
				void checkpoints.terminate();
				readers.close();
				for (const db of connections.reverse()) db.close();
			},
		};
		opened.set(dir, database);
		return database;
	} catch (err) {
		for (const db of connections.reverse()) db.close();
		if (err instanceof UnusableDataDir) throw err;
		throw new UnusableDataDir(`DATA_DIR ${dir} cannot be used: ${reason(err, file)}`);
	}
}

/**
 * Makes every store this process opens on `dataDir` from now on read one snapshot of it (one read transaction held open), whatever
 * others write meanwhile; no lock is taken. For `npm run export`. Returns its end.
 */
export function readSnapshot(dataDir: string): () => void {
	const dir = path.resolve(dataDir);
	const db = openForReading(dir);
	db.exec("BEGIN");
	// A transaction takes its snapshot at its first read.
	db.prepare("SELECT count(*) FROM catalogue_meta").get();
	const snapshot: Open = {
		file: databaseFile(dir),
		writer: db,
		prepared: statements(db),
		readers: only(db),
		readOnly: true,
		users: 0,
		release: () => undefined,
	};
	opened.set(dir, snapshot);
	return () => {
		opened.delete(dir);
		db.close();
	};
}

/** The files of an earlier version's DATA_DIR (lib/storage/nedb-migration.ts). */
const NEDB_FILES = DATA_SERVICE_NAMES.map(name => `${name}.db`);

/** A connection that only reads the database of `dataDir`, beside any process that writes it; throws when there is none. */
export function openForReading(dataDir: string): DatabaseSync {
	const file = databaseFile(path.resolve(dataDir));
	// Run where the records are not (a REPL joined to a cluster from another host or container, a mistyped DATA_DIR).
	if (!existsSync(file)) {
		// An earlier version's folder: its records are there, in the files its first start migrates.
		const earlier = NEDB_FILES.filter(name => existsSync(path.join(path.dirname(file), name)));
		throw new UnusableDataDir(
			earlier.length > 0
				? `${file} cannot be read: the folder holds an earlier version's files (${earlier.join(", ")}), which the catalogue moves into its database at its first start: start it once, then run this again.`
				: `${file} cannot be read: no catalogue database is there. DATA_DIR must name the folder where the catalogue keeps its records, on this machine.`,
		);
	}
	try {
		return prepared(connect(file, { readOnly: true }), file);
	} catch (err) {
		// A stopped catalogue's folder mounted read-only, as a backup job mounts a volume: SQLite reads a database in WAL mode through
		// a `-shm` file it makes beside it, and may not make one there. No `-wal` left means the last writer put every record in the
		// file as it closed: the file alone is read, as immutable (no locks, no `-shm`). docs/operations.md, "Backups".
		const stoppedReadOnly =
			(err as { errcode?: number }).errcode === SQLITE_CANTOPEN && !existsSync(`${file}-wal`) && !writable(path.dirname(file));
		if (!stoppedReadOnly) throw new UnusableDataDir(`${file} cannot be read: ${reason(err, file)}`);
	}
	const url = pathToFileURL(file);
	url.searchParams.set("immutable", "1");
	try {
		return prepared(connect(url, { readOnly: true }), file);
	} catch (err) {
		throw new UnusableDataDir(`${file} cannot be read: ${reason(err, file)}`);
	}
}

/** SQLite's primary result code for a file it cannot open. */
const SQLITE_CANTOPEN = 14;

/** `db` once `prepare` has checked it is a catalogue's database to read; closed if it is not. */
function prepared(db: DatabaseSync, file: string): DatabaseSync {
	try {
		prepare(db, file, true);
		return db;
	} catch (err) {
		db.close();
		throw err;
	}
}

function writable(dir: string): boolean {
	try {
		accessSync(dir, constants.W_OK);
		return true;
	} catch {
		return false;
	}
}
