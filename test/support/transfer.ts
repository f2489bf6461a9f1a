import { spawn } from "node:child_process";
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { once } from "node:events";
import path from "node:path";
import { newId } from "../../lib/catalogue/ids";
import { headerLine } from "../../lib/transfer/format";
import { root } from "./process";

/** What one run of a built tool printed, how it exited, and the most memory its process held. */
export interface ToolRun {
	code: number | null;
	signal: NodeJS.Signals | null;
	output: string;
	/** VmHWM, the peak resident memory, in MB, as last read from /proc while it ran. */
	peakMb: number;
}

export interface ToolOptions {
	env: NodeJS.ProcessEnv;
	timeoutMs?: number;
	/** Called with the process once started: a test may kill it. */
	started?: (pid: number) => void;
}

/** The peak resident memory of a running process, in MB, or 0 once it is gone. */
function peakMb(pid: number): number {
	try {
		const status = readFileSync(`/proc/${pid}/status`, "utf8");
		return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
	} catch {
		return 0;
	}
}

/** Runs `node dist/scripts/<tool>.js args` (what `npm run <tool> -- args` runs once built) with `env`. */
export function runTool(
	tool: "export" | "import" | "backup",
	args: string[],
	{ env, timeoutMs = 120_000, started }: ToolOptions,
): Promise<ToolRun> {
	const script = path.join(root, `dist/scripts/${tool}.js`);
	if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` (npm test does it first)`);
	const child = spawn(process.execPath, [script, ...args], {
		cwd: root,
		env: { ...process.env, ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let output = "";
	child.stdout.on("data", chunk => (output += chunk));
	child.stderr.on("data", chunk => (output += chunk));
	let peak = 0;
	const sampling = setInterval(() => (peak = Math.max(peak, peakMb(child.pid!))), 50);
	const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
	started?.(child.pid!);
	return new Promise(resolve =>
		// "close", not "exit": the summary may still be in the pipe when the process has exited.
		child.once("close", (code, signal) => {
			clearInterval(sampling);
			clearTimeout(timer);
			resolve({ code, signal, output, peakMb: peak });
		}),
	);
}

export interface SyntheticCatalogue {
	categories: number;
	authors: number;
	games: number;
}

/**
 * Writes an export file of a made-up catalogue, as `npm run export` writes one (ids in order,
 * each game referring to records of the file), without holding it in memory.
 */
export async function writeSyntheticExport(file: string, { categories, authors, games }: SyntheticCatalogue): Promise<void> {
	const out = createWriteStream(file);
	const write = async (line: string) => {
		if (!out.write(`${line}\n`)) await once(out, "drain");
	};
	const categoryIds = Array.from({ length: categories }, () => newId());
	const authorIds = Array.from({ length: authors }, () => newId());
	await write(headerLine({ categories, authors, games }, new Date()));
	for (const [i, id] of categoryIds.entries()) await write(JSON.stringify({ kind: "category", id, name: `Category ${i} «ç»` }));
	for (const [i, id] of authorIds.entries())
		await write(JSON.stringify({ kind: "author", id, name: `Author "${i}" ✓`, nationality: i % 2 ? "Française" : "日本" }));
	for (let i = 0; i < games; i++)
		await write(
			JSON.stringify({
				kind: "game",
				id: newId(),
				title: `Game ${i} 🎲`,
				age: i % 100,
				category: categoryIds[i % categories],
				author: authorIds[(i * 7) % authors],
			}),
		);
	out.end();
	await once(out, "close");
}

/** An export file's records, without the header (whose `exportedAt` differs between two exports). */
export const recordsOf = (file: string) => readFileSync(file, "utf8").split("\n").slice(1).join("\n");
