import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { runTool } from "../support/transfer";
import { startNode, startProcess, type Node } from "../support/process";
import { canMountTmpfs, mountTmpfs, unmount } from "../support/tmpfs";

// DATA_DIR at start (docs/storage.md): a folder of the previous release's NeDB files migrated, a
// folder or file that cannot be used refused in one line, and one process at a time.

const FIXTURE = path.join(__dirname, "..", "fixtures", "nedb-data-dir");
const dirs: string[] = [];
const nodes: Node[] = [];
afterAll(async () => {
	await Promise.all(nodes.map(node => node.kill()));
	for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function dataFolder(): string {
	const dir = mkdtempSync(path.join(tmpdir(), "catalogue-files-"));
	dirs.push(dir);
	return dir;
}

/** Everything the catalogue lists, to compare. */
async function everything(api: { get(path: string): Promise<{ body: unknown }> }) {
	return {
		category: (await api.get("/category")).body,
		author: (await api.get("/author")).body,
		game: (await api.get("/game")).body,
	};
}

/** What the previous release listed for the fixture's NeDB files. */
const listedBefore = () =>
	Object.fromEntries(
		["category", "author", "game"].map(kind => [kind, JSON.parse(readFileSync(path.join(FIXTURE, `listed-${kind}.json`), "utf8"))]),
	);

const NEDB_FILES = ["authors.db", "categories.db", "games.db"];

/** A node on `env` that must end by itself: its exit code and output, or "running" after `ms`. */
async function ending(env: NodeJS.ProcessEnv, ms = 15_000) {
	const node = startNode({ STORAGE: "file", START_TIMEOUT: "10", ...env });
	nodes.push(node);
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<"running">(resolve => (timer = setTimeout(() => resolve("running"), ms)));
	const code = await Promise.race([node.exited, late]).finally(() => clearTimeout(timer));
	return { code, output: node.output() };
}

test("a DATA_DIR of the previous release's NeDB files starts migrated, listing exactly what it listed; the files are kept aside, named in the log", async () => {
	const dataDir = dataFolder();
	cpSync(FIXTURE, dataDir, { recursive: true, filter: file => !file.endsWith(".json") });
	const first = await startProcess({ DATA_DIR: dataDir, STORAGE: "file", LOGLEVEL: "info" });
	nodes.push(first);
	try {
		expect(await everything(first.api)).toEqual(listedBefore());
	} finally {
		await first.stop();
	}
	const aside = readdirSync(dataDir).filter(name => name.startsWith("nedb-"));
	expect(aside).toHaveLength(1);
	expect(readdirSync(path.join(dataDir, aside[0])).sort()).toEqual(NEDB_FILES);
	for (const file of NEDB_FILES) expect(existsSync(path.join(dataDir, file))).toBe(false);
	for (const file of NEDB_FILES)
		expect(first.output()).toContain(
			`The NeDB file is kept as ${path.join(dataDir, aside[0], file)}; the catalogue no longer reads it.`,
		);
	expect(first.output()).toMatch(/Migrated 25 games from the NeDB file/);

	const second = await startProcess({ DATA_DIR: dataDir, STORAGE: "file", LOGLEVEL: "info" });
	nodes.push(second);
	try {
		expect(await everything(second.api)).toEqual(listedBefore());
		expect(second.output()).not.toContain("Migrated");
	} finally {
		await second.stop();
	}
});

test("a migration killed (SIGKILL) while it runs is run again whole at the next start", async () => {
	const dataDir = dataFolder();
	// Enough records that the migration takes a while: the fixture's games, then 150,000 more of them.
	cpSync(FIXTURE, dataDir, { recursive: true, filter: file => !file.endsWith(".json") });
	const [game] = readFileSync(path.join(FIXTURE, "games.db"), "utf8")
		.split("\n")
		.filter(line => line.includes('"title"'))
		.map(line => JSON.parse(line) as Record<string, unknown>);
	const more = Array.from({ length: 150_000 }, (_, n) => JSON.stringify({ ...game, _id: `01ZZ${String(n).padStart(22, "0")}` }));
	writeFileSync(path.join(dataDir, "games.db"), `${readFileSync(path.join(FIXTURE, "games.db"), "utf8")}${more.join("\n")}\n`);
	/** Whether a kill landed once the database was made and the NeDB files were still unmigrated. */
	let midway = false;
	for (let delay = 150; delay < 5000; delay *= 1.3) {
		const node = startNode({ DATA_DIR: dataDir, STORAGE: "file" });
		nodes.push(node);
		await new Promise(resolve => setTimeout(resolve, delay));
		await node.kill();
		const unmigrated = NEDB_FILES.every(file => existsSync(path.join(dataDir, file)));
		if (unmigrated && existsSync(path.join(dataDir, "catalogue.sqlite"))) {
			// Not read-only: after a kill the log may need recovering, which SQLite refuses a read-only connection (SQLITE_READONLY_RECOVERY);
			// the recovery keeps exactly what was committed, as the next start would.
			const db = new DatabaseSync(path.join(dataDir, "catalogue.sqlite"));
			try {
				// A collection is migrated whole or not at all; committed, its file may not be moved yet.
				expect([0, 25 + 150_000]).toContain((db.prepare("SELECT count(*) AS n FROM games").get() as { n: number }).n);
				midway = true;
			} catch (err) {
				// The kill landed before the tables were made: nothing to check yet.
				if (!String(err).includes("no such table")) throw err;
			} finally {
				db.close();
			}
		}
		if (!unmigrated) break;
	}
	expect(midway).toBe(true);
	const after = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" }, 60_000);
	nodes.push(after);
	try {
		const games = (await after.api.get("/game")).body as unknown[];
		expect(games).toHaveLength(25 + 150_000);
	} finally {
		await after.stop();
	}
}, 120_000);

describe("a DATA_DIR that cannot be used stops the start at once with one line naming the variable, the path and why; exit code 1", () => {
	const oneLine = (output: string) => {
		expect(output).not.toMatch(/^\s+at /m);
		expect(output).not.toContain("Reconnecting");
		expect(output.match(/DATA_DIR \S+ cannot be used|is not a catalogue's database|is in use/g)).toHaveLength(1);
	};

	test.each([
		["under a regular file", () => path.join(makeFile(), "data"), "ENOTDIR"],
		["on /proc", () => "/proc/nope/data", "ENOENT"],
	])("%s", async (_case, dataDir, reason) => {
		const dir = dataDir();
		const { code, output } = await ending({ DATA_DIR: dir });
		expect(code).toBe(1);
		expect(output).toContain(`DATA_DIR ${dir} cannot be used: ${reason}`);
		oneLine(output);
	});

	test("a read-only file system", async () => {
		if (!canMountTmpfs()) throw new Error("mounting a read-only tmpfs needs root, as CI runs the tests");
		const dir = dataFolder();
		mountTmpfs(dir, "64k");
		try {
			execFileSync("mount", ["-o", "remount,ro", dir]);
			const { code, output } = await ending({ DATA_DIR: dir });
			expect(code).toBe(1);
			expect(output).toMatch(new RegExp(`DATA_DIR ${dir} cannot be used: .*(read-only|readonly|unable to open)`, "i"));
			oneLine(output);
		} finally {
			unmount(dir);
		}
	});

	test("a file that is not a database, and another application's SQLite database, are named and left as they were", async () => {
		const damaged = dataFolder();
		const bytes = Buffer.from("this is not a SQLite database at all, but it is long enough to look at ".repeat(20));
		writeFileSync(path.join(damaged, "catalogue.sqlite"), bytes);
		const first = await ending({ DATA_DIR: damaged });
		expect(first.code).toBe(1);
		expect(first.output).toContain(
			`DATA_DIR ${damaged} cannot be used: ${path.join(damaged, "catalogue.sqlite")}: file is not a database`,
		);
		oneLine(first.output);
		expect(readFileSync(path.join(damaged, "catalogue.sqlite")).equals(bytes)).toBe(true);

		const foreign = dataFolder();
		const other = new DatabaseSync(path.join(foreign, "catalogue.sqlite"));
		other.exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY)");
		other.close();
		const second = await ending({ DATA_DIR: foreign });
		expect(second.code).toBe(1);
		expect(second.output).toContain(
			`${path.join(foreign, "catalogue.sqlite")} is not a catalogue's database (it holds tables invoices)`,
		);
		oneLine(second.output);
	});
});

test("a second catalogue on a DATA_DIR in use is refused while the first caches in its memory; a backup beside it is not", async () => {
	const dataDir = dataFolder();
	const first = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	nodes.push(first);
	try {
		const second = await ending({ DATA_DIR: dataDir, PORT: "0" });
		expect(second.code).toBe(1);
		expect(second.output).toContain(
			`DATA_DIR ${dataDir} is in use by another catalogue process (last opened by process ${first.child.pid})`,
		);
		// Readers are not refused: the backup copies it while it runs.
		const backup = await runTool("backup", [path.join(dataFolder(), "copy")], { env: { DATA_DIR: dataDir, STORAGE: "file" } });
		expect(backup.code).toBe(0);
		expect((await first.api.get("/health/ready")).status).toBe(200);
	} finally {
		await first.stop();
	}
});

function makeFile(): string {
	const file = path.join(dataFolder(), "a-file");
	writeFileSync(file, "not a folder");
	return file;
}
