import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Api } from "../support/catalogue";
import { answers, freePort, startProcess, waitFor, type Node } from "../support/process";
import { PROMPT_SHOWN, ReplSession } from "../support/repl";
import { runTool, writeSyntheticExport } from "../support/transfer";

// `npm run backup -- <dir>` and the REPL's `backup <dir>` on a catalogue that keeps writing
// (docs/operations.md, "Backups"), and the documented restore: the copies started as DATA_DIR.

const dirs: string[] = [];
const nodes: (Node | ReplSession)[] = [];
afterAll(async () => {
	await Promise.all(nodes.map(node => node.kill()));
	for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function folder(name: string): string {
	const dir = mkdtempSync(path.join(tmpdir(), `catalogue-${name}-`));
	dirs.push(dir);
	return dir;
}

/** A write the catalogue answered 200 to, and when (ms since the epoch); `gone` for a delete. */
type Acknowledged = { kind: "category" | "author" | "game"; id: string; at: number; gone?: true };

/**
 * Writes through HTTP until stopped, each loop waiting for its answer: categories, authors and games
 * in them created; some created and deleted again (game first); and one author updated over and
 * over (`Counter`, nationality 1, 2, ...).
 */
function startWriter(api: Api) {
	const acknowledged: Acknowledged[] = [];
	const counted: { value: number; at: number }[] = [];
	const done = (kind: Acknowledged["kind"], id: string, gone?: true) => acknowledged.push({ kind, id, at: Date.now(), gone });
	let running = true;
	const creating = async (deleting: boolean) => {
		for (let n = 0; running; n++) {
			const category = await api.category(`Category ${n}`);
			done("category", category.id);
			const author = await api.author(`Author ${n}`, "Any");
			done("author", author.id);
			const game = await api.game(`Game ${n}`, category, author);
			done("game", game.id);
			if (!deleting) continue;
			for (const [kind, route, id] of [
				["game", "game", game.id],
				["category", "category", category.id],
				["author", "author", author.id],
			] as const) {
				const answer = await api.delete(`/${route}/${id}`);
				if (answer.status !== 200) throw new Error(`DELETE /${route}/${id} answered ${answer.status}`);
				done(kind, id, true);
			}
		}
	};
	const updating = async (id: string) => {
		for (let value = 1; running; value++) {
			const answer = await api.put(`/author/${id}`, { name: "Counter", nationality: String(value) });
			if (answer.status !== 200) throw new Error(`PUT /author/${id} answered ${answer.status}`);
			counted.push({ value, at: Date.now() });
		}
	};
	const counter = api.author("Counter", "0");
	const loops = [creating(false), creating(true), counter.then(({ id }) => updating(id))];
	return {
		acknowledged,
		counted,
		counter,
		/** Stops the loops; rejects if a write was refused. */
		stop: async () => {
			running = false;
			await Promise.all(loops);
		},
	};
}

type Writer = ReturnType<typeof startWriter>;

/** Runs `node dist/scripts/backup.js <args>` with `env`; its exit code and what it printed. */
async function runBackup(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
	const { code, output } = await runTool("backup", args, { env, timeoutMs: 20_000 });
	return { code, output };
}

/** The catalogue started on the database of `dataDir` with the REPL, once its gateway answers. */
async function startWithRepl(dataDir: string): Promise<{ repl: ReplSession; api: Api }> {
	const port = await freePort();
	const repl = new ReplSession({ DATA_DIR: dataDir, STORAGE: "file", PORT: String(port) });
	nodes.push(repl);
	await repl.waitFor(PROMPT_SHOWN);
	const api = new Api(`http://127.0.0.1:${port}`);
	await waitFor("the gateway answers", answers(api, "/category"));
	return { repl, api };
}

/**
 * The documented restore of `backupDir` (its catalogue.sqlite copied into an empty DATA_DIR, the
 * catalogue started on it, here with the REPL), checked against what `writer` had acknowledged before `began`.
 */
async function restoreAndCheck(backupDir: string, writer: Writer, began: number): Promise<void> {
	const dataDir = folder("restored");
	expect(readdirSync(backupDir).sort()).toEqual(["backup.json", "catalogue.sqlite"]);
	copyFileSync(path.join(backupDir, "catalogue.sqlite"), path.join(dataDir, "catalogue.sqlite"));
	const { repl: restored, api } = await startWithRepl(dataDir);

	const listed = {
		category: new Set<string>(((await api.get("/category")).body as { id: string }[]).map(record => record.id)),
		author: new Map<string, string>(
			((await api.get("/author")).body as { id: string; nationality: string }[]).map(a => [a.id, a.nationality]),
		),
		game: (await api.get("/game")).body as { id: string; category?: { id: string }; author?: { id: string } }[],
	};
	const has = (kind: Acknowledged["kind"], id: string) =>
		kind === "game" ? listed.game.some(game => game.id === id) : kind === "category" ? listed.category.has(id) : listed.author.has(id);
	// Every write acknowledged before the backup began: a record created is there, one deleted is not. A record
	// written again later (a delete acknowledged after) may be either: that write may have been committed before the snapshot.
	const last = new Map(writer.acknowledged.map(write => [write.id, write]));
	const settled = [...last.values()].filter(write => write.at < began);
	expect(settled.length).toBeGreaterThan(0);
	expect(settled.filter(write => has(write.kind, write.id) === Boolean(write.gone))).toEqual([]);
	const counter = (await writer.counter).id;
	const lastCounted = Math.max(0, ...writer.counted.filter(write => write.at < began).map(write => write.value));
	expect(Number(listed.author.get(counter))).toBeGreaterThanOrEqual(lastCounted);
	// No game whose category or author is missing, as listed and as the REPL's check finds.
	const orphans = listed.game.filter(game => !listed.category.has(game.category?.id ?? "") || !listed.author.has(game.author?.id ?? ""));
	expect(orphans).toEqual([]);
	expect(await restored.type("integrity")).toContain("Integrity check passed");
	const printed = await restored.waitFor(PROMPT_SHOWN);
	// Warned once, by the first service to open it: its change feeds start again (docs/operations.md, "Restore"); nothing else.
	const restoredLine = /^.*\bWARN\b.* is the backup taken at .+, restored: the change feeds start again.*$/gm;
	expect(printed.match(restoredLine)).toHaveLength(1);
	expect(printed.replace(restoredLine, "")).not.toMatch(/\bWARN\b|FATAL|malformed|not a database/i);
	expect(await restored.quit()).toBe(0);
}

test("npm run backup from another process while a writer creates, deletes and updates: the restored copy starts warning only of its restore and holds every acknowledged write", async () => {
	const dataDir = folder("backup-source");
	const first = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	nodes.push(first);
	const writer = startWriter(first.api);
	await waitFor("a thousand writes are acknowledged", async () => writer.acknowledged.length >= 1000, [first], 60_000);

	// Three backups one after the other, each while the writes go on.
	const taken: { dir: string; began: number; output: string }[] = [];
	for (let n = 0; n < 3; n++) {
		const dir = folder("backup");
		const began = Date.now();
		const { code, output } = await runBackup([dir], { DATA_DIR: dataDir, STORAGE: "file" });
		expect({ code, output }).toEqual({ code: 0, output: expect.stringMatching(/^Backed up .*, snapshot at /) });
		expect(output).toMatch(/\ngames\s+\d+\n/);
		taken.push({ dir, began, output });
	}
	await writer.stop();
	expect(await first.stop()).toBe(0);
	expect(writer.acknowledged.length).toBeGreaterThan(100);

	for (const { dir, began } of taken) {
		expect(JSON.parse(readFileSync(path.join(dir, "backup.json"), "utf8"))).toMatchObject({ dataDir, orphans: 0 });
		await restoreAndCheck(dir, writer, began);
	}
}, 180_000);

test("the REPL's backup <dir> in the node that writes: one exact snapshot while writes go on; the data folder itself refused", async () => {
	const dataDir = folder("repl-source");
	const { repl, api } = await startWithRepl(dataDir);
	const writer = startWriter(api);
	await waitFor("a hundred writes are acknowledged", async () => writer.acknowledged.length >= 100);

	const dir = folder("repl-backup");
	const began = Date.now();
	const printed = await repl.type(`backup ${dir}`);
	expect(printed).toContain(`Backed up ${dataDir} to ${path.join(dir, "catalogue.sqlite")}`);
	expect(printed).toMatch(/\nauthors\s+\d+\ncategories\s+\d+\ngames\s+\d+/);
	expect(await repl.type(`backup ${dataDir}`)).toContain(`Failed: The backup's folder ${dataDir} is the data folder itself`);
	await writer.stop();
	expect(await repl.quit()).toBe(0);
	await restoreAndCheck(dir, writer, began);
}, 120_000);

test("npm run backup without one folder prints its usage and exits 2, as export and import do", async () => {
	const usage = { code: 2, output: "usage: npm run backup -- <dir>   (the folder the copy goes to)\n" };
	expect(await runBackup([], { STORAGE: "file" })).toEqual(usage);
	expect(await runBackup(["a", "b"], { STORAGE: "file" })).toEqual(usage);
});

test("npm run backup refuses MongoDB (naming mongodump and mongorestore), memory, and a folder without a catalogue database", async () => {
	const target = path.join(folder("refused"), "copy");
	const mongo = await runBackup([target], { MONGO_URI: "mongodb://127.0.0.1:1/catalogue", STORAGE: "file" });
	expect(mongo).toEqual({ code: 1, output: expect.stringContaining("Backup failed: MONGO_URI is set") });
	expect(mongo.output).toContain("`mongodump --oplog`");
	expect(mongo.output).toContain("`mongorestore --oplogReplay`");
	expect(await runBackup([target], { STORAGE: "memory" })).toEqual({
		code: 1,
		output: "Backup failed: STORAGE=memory keeps no files: there is nothing to back up.\n",
	});
	const empty = folder("empty");
	expect(await runBackup([target], { DATA_DIR: empty, STORAGE: "file" })).toEqual({
		code: 1,
		output: expect.stringContaining(`Backup failed: ${path.join(empty, "catalogue.sqlite")} cannot be read`),
	});
	expect(existsSync(target)).toBe(false);
});

test("a relative <dir> is read from the folder npm was run in (INIT_CWD), not from the package's root", async () => {
	const data = folder("relative-data");
	const file = path.join(folder("relative-export"), "catalogue.jsonl");
	await writeSyntheticExport(file, { categories: 1, authors: 1, games: 1 });
	expect((await runTool("import", [file], { env: { DATA_DIR: data, STORAGE: "file" } })).code).toBe(0);
	const typedIn = folder("relative-typed-in");
	const run = await runBackup(["./copy"], { DATA_DIR: data, STORAGE: "file", INIT_CWD: typedIn });
	expect(run).toEqual({ code: 0, output: expect.stringContaining(`to ${path.join(typedIn, "copy", "catalogue.sqlite")}`) });
	expect(existsSync(path.join(typedIn, "copy", "backup.json"))).toBe(true);
});
