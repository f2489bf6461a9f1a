import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DataFileInUse, lockDataFile } from "../../lib/storage/data-file-lock";

let dir: string;
let file: string;
beforeEach(() => {
	dir = mkdtempSync(path.join(tmpdir(), "data-file-lock-"));
	file = path.join(dir, "games.db");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** What /proc says of when `pid` started: the lock's second word. */
const startOf = (pid: number) => {
	const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
	return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
};

describe("one process at a time per data file (lib/storage/data-file-lock.ts)", () => {
	test("taken: <file>.lock names this process; shared by the brokers of this process; gone once each has given it back", () => {
		const first = lockDataFile(file);
		expect(readFileSync(`${file}.lock`, "utf8")).toBe(`${process.pid} ${startOf(process.pid)}`);
		const second = lockDataFile(file);
		first();
		expect(existsSync(`${file}.lock`)).toBe(true);
		second();
		expect(existsSync(`${file}.lock`)).toBe(false);
	});

	test("refused while another living process holds it, naming that process", async () => {
		const other = spawn("sleep", ["30"]);
		try {
			await new Promise(resolve => other.once("spawn", resolve));
			writeFileSync(`${file}.lock`, `${other.pid} ${startOf(other.pid!)}`);
			expect(() => lockDataFile(file)).toThrow(DataFileInUse);
			expect(() => lockDataFile(file)).toThrow(`${file} is in use by process ${other.pid}`);
			expect(readFileSync(`${file}.lock`, "utf8")).toBe(`${other.pid} ${startOf(other.pid!)}`);
		} finally {
			other.kill("SIGKILL");
		}
	});

	test("taken over from a process killed with kill -9, and from a pid that another process reuses (its start time differs)", async () => {
		const killed = spawn("sleep", ["30"]);
		await new Promise(resolve => killed.once("spawn", resolve));
		const text = `${killed.pid} ${startOf(killed.pid!)}`;
		killed.kill("SIGKILL");
		await new Promise(resolve => killed.once("exit", resolve));
		writeFileSync(`${file}.lock`, text);
		lockDataFile(file)();

		// This very pid, started at another time: a process that has gone, whose pid is now ours.
		writeFileSync(`${file}.lock`, `${process.pid} 1`);
		const release = lockDataFile(file);
		expect(readFileSync(`${file}.lock`, "utf8")).toBe(`${process.pid} ${startOf(process.pid)}`);
		release();
	});

	test("processes racing for a lock left by a process that is gone: exactly one takes it", async () => {
		const built = path.join(__dirname, "../../dist/lib/storage/data-file-lock.js");
		if (!existsSync(built)) throw new Error("dist/ is missing: run `npm run build` (npm test does it first)");
		writeFileSync(`${file}.lock`, "999999999 1");
		const racer = `const { lockDataFile } = require(${JSON.stringify(built)});
			setTimeout(() => {
				try { lockDataFile(${JSON.stringify(file)}); console.log("took it"); setTimeout(() => undefined, 1500); }
				catch (err) { console.log(err.constructor.name); }
			}, 300 - (Date.now() % 300));`;
		const outcomes = await Promise.all(
			Array.from({ length: 6 }, () => {
				const child = spawn(process.execPath, ["-e", racer]);
				let output = "";
				let errors = "";
				child.stdout.on("data", chunk => (output += chunk));
				child.stderr.on("data", chunk => (errors += chunk));
				// "close", not "exit": the output may still be in the pipe when the process has exited.
				// A racer that printed nothing shows how it ended instead.
				return new Promise<string>(resolve =>
					child.once("close", (code, signal) => resolve(output.trim() || `exit ${code ?? signal}: ${errors.trim()}`)),
				);
			}),
		);
		expect(outcomes.filter(outcome => outcome === "took it")).toHaveLength(1);
		expect(outcomes.filter(outcome => outcome !== "took it")).toEqual(Array(5).fill("DataFileInUse"));
	});

	test("a data folder that does not exist yet is made, as NeDB would make it", () => {
		const nested = path.join(dir, "new", "games.db");
		lockDataFile(nested)();
		expect(existsSync(path.dirname(nested))).toBe(true);
	});
});
