import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import fs, { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { waitFor } from "../support/process";
import { withTables } from "../support/sqlite";
import { DATABASE_FILE } from "../../lib/storage/location";
import { DataDirInUse, openDatabase, openForReading, UnusableDataDir, type Holding } from "../../lib/storage/sqlite-database";

// Which processes may open a DATA_DIR's database, and the folders it refuses. Another catalogue
// process is played by a child process that takes the lock file's SQLite lock the way
// lib/storage/sqlite-database.ts does, and holds it until it is killed.

const LOCKER = `
import { DatabaseSync } from "node:sqlite";
const [file, holding] = process.argv.slice(2);
const db = new DatabaseSync(file, { timeout: 0 });
try {
	if (holding === "alone") db.exec("BEGIN EXCLUSIVE");
	else {
		db.exec("BEGIN");
		db.prepare("SELECT count(*) FROM sqlite_schema").get();
	}
} catch (err) {
	process.stdout.write("refused " + err.errcode + "\\n");
	process.exit(3);
}
process.stdout.write("held\\n");
setInterval(() => undefined, 60_000);
`;

let root: string;
let locker: string;
const children: ChildProcess[] = [];

beforeAll(() => {
	root = mkdtempSync(path.join(tmpdir(), "sqlite-database-"));
	locker = path.join(root, "locker.mjs");
	writeFileSync(locker, LOCKER);
});

afterEach(async () => {
	for (const child of children.splice(0)) await kill(child);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

const freshDataDir = () => mkdtempSync(path.join(root, "data-"));

/** Ends `child` as `kill -9` does, and waits until it is gone. */
async function kill(child: ChildProcess): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null) return;
	const exited = once(child, "exit");
	child.kill("SIGKILL");
	await exited;
}

/**
 * Another process taking the lock of `dataDir` as `holding`: "held" (it keeps it until killed)
 * or "refused" (it has ended).
 */
async function otherProcess(dataDir: string, holding: Holding): Promise<{ child: ChildProcess; answer: "held" | "refused" }> {
	const child = spawn(process.execPath, [locker, path.join(dataDir, "catalogue.lock"), holding], { stdio: ["ignore", "pipe", "pipe"] });
	children.push(child);
	let output = "";
	let errors = "";
	child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
	return new Promise((resolve, reject) => {
		child.stdout.on("data", (chunk: Buffer) => {
			output += chunk.toString();
			if (output.startsWith("held\n")) resolve({ child, answer: "held" });
			else if (output === "refused 5\n") resolve({ child, answer: "refused" });
		});
		child.on("exit", code => reject(new Error(`the locking process ended (${code}) with ${JSON.stringify(output + errors)}`)));
	});
}

/** The error `open` throws; fails when it throws none. */
function thrownBy(open: () => unknown): Error {
	try {
		const database = open() as { release(): void };
		database.release();
	} catch (err) {
		return err as Error;
	}
	throw new Error("it opened");
}

describe("the DATA_DIR's lock", () => {
	test("another process holding it alone refuses this one, alone or shared, naming the folder", async () => {
		const dataDir = freshDataDir();
		await otherProcess(dataDir, "alone");
		const expected = {
			alone: `DATA_DIR ${dataDir} is in use by another catalogue process`,
			shared: `DATA_DIR ${dataDir} is in use by a catalogue process that caches answers in its own memory`,
		};
		for (const holding of ["alone", "shared"] as const) {
			const refused = thrownBy(() => openDatabase(dataDir, holding));
			expect(refused).toBeInstanceOf(DataDirInUse);
			expect(refused.message).toContain(expected[holding]);
			expect(refused.message).not.toContain("\n");
		}
	});

	test("another process holding it shared lets this one share it and refuses it alone", async () => {
		const dataDir = freshDataDir();
		await otherProcess(dataDir, "shared");
		const shared = withTables(openDatabase(dataDir, "shared"));
		shared.writer.prepare("INSERT INTO games VALUES ('g1', '{}')").run();
		shared.release();
		const refused = thrownBy(() => openDatabase(dataDir, "alone"));
		expect(refused).toBeInstanceOf(DataDirInUse);
		expect(refused.message).toContain(`DATA_DIR ${dataDir} is in use by another catalogue process`);
	});

	test("this process holding it alone refuses any other process; released, it is free", async () => {
		const dataDir = freshDataDir();
		const database = openDatabase(dataDir, "alone");
		expect((await otherProcess(dataDir, "alone")).answer).toBe("refused");
		expect((await otherProcess(dataDir, "shared")).answer).toBe("refused");
		database.release();
		expect((await otherProcess(dataDir, "alone")).answer).toBe("held");
	});

	test("this process holding it shared lets other processes share it, not hold it alone", async () => {
		const dataDir = freshDataDir();
		const database = openDatabase(dataDir, "shared");
		try {
			expect((await otherProcess(dataDir, "shared")).answer).toBe("held");
			expect((await otherProcess(dataDir, "alone")).answer).toBe("refused");
		} finally {
			database.release();
		}
	});

	test("the lock is held until every user in the process has released the database", async () => {
		const dataDir = freshDataDir();
		const first = openDatabase(dataDir, "alone");
		const second = openDatabase(dataDir, "alone");
		first.release();
		expect((await otherProcess(dataDir, "alone")).answer).toBe("refused");
		second.release();
		expect((await otherProcess(dataDir, "alone")).answer).toBe("held");
	});

	test("a holder killed with SIGKILL leaves the lock free", async () => {
		const dataDir = freshDataDir();
		const { child } = await otherProcess(dataDir, "alone");
		expect(thrownBy(() => openDatabase(dataDir, "alone"))).toBeInstanceOf(DataDirInUse);
		await kill(child);
		const database = openDatabase(dataDir, "alone");
		database.release();
	});

	test("a reader (export, backup) is never refused by the lock", async () => {
		const dataDir = freshDataDir();
		const database = withTables(openDatabase(dataDir, "alone"));
		database.writer.prepare("INSERT INTO authors VALUES ('a1', '{\"name\":\"Uwe\"}')").run();
		database.release();
		await otherProcess(dataDir, "alone");
		const reader = openForReading(dataDir);
		try {
			expect(reader.prepare("SELECT _id, doc FROM authors").all()).toEqual([{ _id: "a1", doc: '{"name":"Uwe"}' }]);
		} finally {
			reader.close();
		}
	});
});

describe("a DATA_DIR that cannot be used", () => {
	/** The UnusableDataDir `open` throws, checked to be one line naming `named`. */
	function refusal(open: () => unknown, named: string): string {
		const refused = thrownBy(open);
		expect(refused).toBeInstanceOf(UnusableDataDir);
		expect(refused).not.toBeInstanceOf(DataDirInUse);
		expect(refused.message).toContain(named);
		expect(refused.message).not.toContain("\n");
		return refused.message;
	}

	test("under a regular file", () => {
		const file = path.join(freshDataDir(), "file");
		writeFileSync(file, "not a folder");
		const dataDir = path.join(file, "data");
		expect(refusal(() => openDatabase(dataDir, "alone"), dataDir)).toContain("ENOTDIR");
	});

	test("a folder it may not write in", () => {
		const dataDir = freshDataDir();
		chmodSync(dataDir, 0o555);
		let writable = true;
		try {
			writeFileSync(path.join(dataDir, "probe"), "");
		} catch {
			writable = false;
		}
		// root writes in any folder whatever its mode; /proc refuses new files to root too.
		const unwritable = writable ? "/proc" : dataDir;
		refusal(() => openDatabase(unwritable, "alone"), path.join(unwritable, DATABASE_FILE));
		chmodSync(dataDir, 0o755);
	});

	test("a folder that cannot be made, under /proc too (where Node's recursive mkdir never returns)", () => {
		refusal(() => openDatabase("/proc/nope/data", "alone"), "/proc/nope");
	});

	test("a catalogue.sqlite that is not a SQLite file, left as it was", () => {
		const dataDir = freshDataDir();
		const file = path.join(dataDir, DATABASE_FILE);
		const bytes = randomBytes(4096);
		writeFileSync(file, bytes);
		refusal(() => openDatabase(dataDir, "alone"), file);
		expect(readFileSync(file).equals(bytes)).toBe(true);
	});

	test("the SQLite file of another application, left as it was: its tables, and its journal mode", () => {
		const dataDir = freshDataDir();
		const file = path.join(dataDir, DATABASE_FILE);
		const other = new DatabaseSync(file);
		other.exec("CREATE TABLE foo (bar TEXT); INSERT INTO foo VALUES ('kept')");
		other.close();
		expect(refusal(() => openDatabase(dataDir, "alone"), file)).toBe(`${file} is not a catalogue's database (it holds tables foo)`);
		const reopened = new DatabaseSync(file, { readOnly: true });
		try {
			expect(reopened.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all()).toEqual([{ name: "foo" }]);
			expect(reopened.prepare("SELECT bar FROM foo").all()).toEqual([{ bar: "kept" }]);
			expect(reopened.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "delete" });
		} finally {
			reopened.close();
		}
	});

	test("a catalogue database of another format", () => {
		const dataDir = freshDataDir();
		const file = path.join(dataDir, DATABASE_FILE);
		const other = new DatabaseSync(file);
		other.exec(
			"CREATE TABLE catalogue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO catalogue_meta VALUES ('format', 'game-catalogue 2')",
		);
		other.close();
		expect(refusal(() => openDatabase(dataDir, "alone"), file)).toContain("another format (game-catalogue 2)");
	});

	test("a catalogue.lock it may not write (SQLite would open it read-only, and lock nothing), naming the lock file", () => {
		const dataDir = freshDataDir();
		const lockFile = path.join(dataDir, "catalogue.lock");
		writeFileSync(lockFile, "");
		chmodSync(lockFile, 0o444);
		// root writes any file whatever its mode, but not an immutable one.
		const asRoot = process.getuid?.() === 0;
		if (asRoot) execFileSync("chattr", ["+i", lockFile]);
		try {
			expect(refusal(() => openDatabase(dataDir, "alone"), lockFile)).toMatch(/cannot be written \((EACCES|EPERM)\)/);
		} finally {
			if (asRoot) execFileSync("chattr", ["-i", lockFile]);
		}
	});

	test("a damaged catalogue.lock is named as such, not as the database", () => {
		const dataDir = freshDataDir();
		const lockFile = path.join(dataDir, "catalogue.lock");
		writeFileSync(lockFile, randomBytes(8192));
		const message = refusal(() => openDatabase(dataDir, "shared"), lockFile);
		expect(message).toContain("cannot be locked");
		expect(message).not.toContain(`${DATABASE_FILE}:`);
	});

	test("openForReading a DATA_DIR without a database refuses it and creates none", () => {
		const dataDir = freshDataDir();
		const file = path.join(dataDir, DATABASE_FILE);
		refusal(() => openForReading(dataDir), file);
		expect(existsSync(file)).toBe(false);
	});

	test("the folder is created when it does not exist yet", () => {
		const dataDir = path.join(freshDataDir(), "new", "data");
		const database = openDatabase(dataDir, "alone");
		database.release();
		expect(existsSync(path.join(dataDir, DATABASE_FILE))).toBe(true);
	});
});

describe("replicas starting at once", () => {
	test("a DATA_DIR another process made between the look and the making is used", () => {
		const dataDir = path.join(freshDataDir(), "made-meanwhile");
		const mkdir = jest.spyOn(fs, "mkdirSync").mockImplementationOnce((folder, options) => {
			mkdir.mockRestore();
			fs.mkdirSync(folder, options);
			return fs.mkdirSync(folder, options);
		});
		try {
			openDatabase(dataDir, "shared").release();
		} finally {
			mkdir.mockRestore();
		}
		expect(existsSync(path.join(dataDir, DATABASE_FILE))).toBe(true);
	});
});

describe("the log's checkpoints", () => {
	/** Whether the database file alone, without its log (what a power cut may leave of the log), holds game `id`. */
	function inDatabaseFile(dataDir: string, id: string): boolean {
		const copy = mkdtempSync(path.join(root, "copy-"));
		copyFileSync(path.join(dataDir, DATABASE_FILE), path.join(copy, DATABASE_FILE));
		const db = new DatabaseSync(path.join(copy, DATABASE_FILE));
		try {
			const tables = db.prepare("SELECT name FROM sqlite_schema WHERE name = 'games'").all();
			return tables.length > 0 && db.prepare("SELECT _id FROM games WHERE _id = ?").get(id) !== undefined;
		} finally {
			db.close();
		}
	}

	test("a commit is in the database file, synced, within a fraction of a second without another write", async () => {
		const dataDir = freshDataDir();
		const database = withTables(openDatabase(dataDir, "alone"));
		try {
			// Far below the log pages at which a write checkpoints the log itself.
			database.writer.prepare("INSERT INTO games (_id, doc) VALUES ('g1', '{}')").run();
			await waitFor("the game is in the database file alone", () => Promise.resolve(inDatabaseFile(dataDir, "g1")), [], 2000);
		} finally {
			database.release();
		}
	});

	test("a checkpoint thread that fails leaves the process up, and every commit synced by the writer, said once", async () => {
		const dataDir = freshDataDir();
		const warnings: string[] = [];
		const database = openDatabase(dataDir, "alone", message => warnings.push(message));
		try {
			// The thread opens the file once it has started, which is after this: its folder is gone by then.
			rmSync(dataDir, { recursive: true });
			await waitFor("the thread's failure said", () => Promise.resolve(warnings.length === 1), [], 5000);
			expect(warnings[0]).toMatch(/^The checkpoint thread of .*catalogue\.sqlite stopped \(.+\): every commit is synced/);
			expect(database.writer.prepare("PRAGMA synchronous").get()).toEqual({ synchronous: 2 });
		} finally {
			database.release();
		}
	});
});

describe("the connections of long reads", () => {
	test("each long read has a connection of its own, kept for the next: more at once are closed once given back, and all at release", () => {
		const database = withTables(openDatabase(freshDataDir(), "alone"));
		const { readers } = database;
		const taken = Array.from({ length: 7 }, () => readers.take());
		expect(new Set([database.writer, ...taken]).size).toBe(8);
		for (const connection of taken) readers.give(connection);
		// Four are kept idle (READERS_KEPT); the three more were closed.
		expect(taken.filter(connection => connection.isOpen)).toHaveLength(4);
		expect(taken.slice(4).every(connection => !connection.isOpen)).toBe(true);
		const again = readers.take();
		expect(taken).toContain(again);
		const stillReading = readers.take();
		database.release();
		expect([again, stillReading, ...taken].some(connection => connection.isOpen)).toBe(false);
	});

	test("a long read begun while another is being stepped through reads the writes committed since, not the other's snapshot", () => {
		const database = withTables(openDatabase(freshDataDir(), "alone"));
		try {
			const insert = database.writer.prepare("INSERT INTO games (_id, doc) VALUES (?, '{}')");
			for (let n = 0; n < 10; n++) insert.run(`g${n}`);
			const { readers } = database;
			const first = readers.take();
			const stepping = first.prepare("SELECT _id FROM games ORDER BY _id").iterate();
			stepping.next();
			insert.run("late");
			const second = readers.take();
			expect(second.prepare("SELECT count(*) AS n FROM games").get()).toEqual({ n: 11 });
			readers.give(second);
			expect([...stepping]).toHaveLength(9);
			readers.give(first);
		} finally {
			database.release();
		}
	});
});

describe("the statements kept", () => {
	test("a statement in use stays compiled while a thousand others come and go, as pages of every size would bring", () => {
		const database = withTables(openDatabase(freshDataDir(), "alone"));
		try {
			const byId = "SELECT _id, doc FROM games WHERE _id = ?";
			const page = (size: number) => `SELECT _id, doc FROM games ORDER BY _id LIMIT ${size}`;
			const first = database.prepared(byId);
			const firstPage = database.prepared(page(1));
			for (let size = 2; size <= 1000; size++) {
				database.prepared(page(size)).all();
				expect(database.prepared(byId)).toBe(first);
			}
			// The texts kept stay bounded: the least recently used went, and is compiled anew.
			expect(database.prepared(page(1))).not.toBe(firstPage);
		} finally {
			database.release();
		}
	});
});
