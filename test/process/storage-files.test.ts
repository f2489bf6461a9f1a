import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startNode, startProcess, type Node } from "../support/process";

// The NeDB files of `npm start` after a crash: docs/storage.md, "What a crash can and cannot lose".

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

/** Everything the catalogue lists, to compare before and after a restart. */
async function everything(api: { get(path: string): Promise<{ body: unknown }> }) {
	return {
		categories: (await api.get("/category")).body,
		authors: (await api.get("/author")).body,
		games: (await api.get("/game")).body,
	};
}

/**
 * A node on `dataDir` with a few records of each kind, killed (SIGKILL) once they are acknowledged;
 * what it listed. A dozen authors: NeDB's default would drop one damaged line in ten without a word.
 */
async function writeAndKill(dataDir: string) {
	const first = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	nodes.push(first);
	try {
		const euro = await first.api.category("Euro");
		await first.api.category("Abstract");
		const knizia = await first.api.author("Reiner Knizia", "German");
		for (let n = 1; n < 12; n++) await first.api.author(`Author ${n}`, "Any");
		await first.api.game("Tigris & Euphrates", euro, knizia, 12);
		return await everything(first.api);
	} finally {
		await first.kill();
	}
}

test("a half-written last line is cut off at start, kept in a copy, and every acknowledged record is there", async () => {
	const dataDir = dataFolder();
	const written = await writeAndKill(dataDir);
	// What a process killed in the middle of appending a record leaves.
	const torn = '{"name":"Ameritrash","_id":"01J';
	appendFileSync(path.join(dataDir, "categories.db"), torn);

	const second = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	nodes.push(second);
	try {
		expect((await second.api.get("/health/ready")).status).toBe(200);
		expect(await everything(second.api)).toEqual(written);
	} finally {
		await second.stop();
	}
	const copies = readdirSync(dataDir).filter(name => name.startsWith("categories.db.torn-"));
	expect(copies).toHaveLength(1);
	const copy = path.join(dataDir, copies[0]);
	expect(readFileSync(copy, "utf8")).toBe(torn);
	expect(second.output()).toContain(`Removed ${torn.length} bytes from the end of ${path.join(dataDir, "categories.db")}`);
	expect(second.output()).toContain(`The bytes are kept in ${copy}.`);
	expect(readFileSync(path.join(dataDir, "categories.db"), "utf8")).not.toContain(torn);
});

test("a damaged line before the end stops the node with exit code 1, naming the file, the line and what to do; the file is left as it was", async () => {
	const dataDir = dataFolder();
	await writeAndKill(dataDir);
	const file = path.join(dataDir, "authors.db");
	const lines = readFileSync(file, "utf8").split("\n");
	const damaged = [lines[0], "#%garbage", ...lines.slice(1)].join("\n");
	writeFileSync(file, damaged);

	const node = startNode({ DATA_DIR: dataDir, STORAGE: "file" });
	nodes.push(node);
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<"running">(resolve => (timer = setTimeout(() => resolve("running"), 15_000)));
	const code = await Promise.race([node.exited, late]).finally(() => clearTimeout(timer));
	expect({ code, output: node.output() }).toEqual({
		code: 1,
		output: expect.stringContaining(`The data file ${file} is damaged at line 2`),
	});
	expect(node.output()).toContain(
		`Restore ${file} from a backup, or repair or remove line 2 (one JSON record per line), then start again.`,
	);
	expect(readFileSync(file, "utf8")).toBe(damaged);
});
