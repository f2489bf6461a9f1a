import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, root } from "../support/process";

// `npm run dev` in a copy of the project's sources (its own dist/, node_modules linked), so the
// edits the test makes never touch the repository: the copy's built dist/scripts/dev.js, started as
// the npm script starts it, with its REPL on a pipe the test writes to.

const TIMEOUT_MS = 120_000;

interface Dev {
	child: ChildProcess;
	output: () => string;
	exited: Promise<number | null>;
}

/** A copy of what tsconfig.build.json compiles, built once, with the repository's node_modules. */
function copyProject(): string {
	const copy = mkdtempSync(path.join(tmpdir(), "catalogue-dev-"));
	const { include } = JSON.parse(readFileSync(path.join(root, "tsconfig.build.json"), "utf8")) as { include: string[] };
	for (const entry of [...include, "package.json", "tsconfig.json", "tsconfig.build.json"])
		cpSync(path.join(root, entry), path.join(copy, entry), { recursive: true });
	symlinkSync(path.join(root, "node_modules"), path.join(copy, "node_modules"), "dir");
	const built = spawnSync(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"], {
		cwd: copy,
		encoding: "utf8",
		timeout: 60_000,
	});
	if (built.status !== 0) throw new Error(`the copy does not build:\n${built.stdout}${built.stderr}`);
	return copy;
}

/** `npm run dev` after its build: node dist/scripts/dev.js, in a process group of its own. */
function startDev(copy: string, port: number): Dev {
	const child = spawn(process.execPath, ["dist/scripts/dev.js"], {
		cwd: copy,
		// Info, for the hot reload's lines; memory storage, so nothing is written beside the copy.
		env: { ...process.env, PORT: String(port), STORAGE: "memory", LOGLEVEL: "info" },
		stdio: ["pipe", "pipe", "pipe"],
		detached: true,
	});
	let output = "";
	child.stdout.on("data", chunk => (output += chunk));
	child.stderr.on("data", chunk => (output += chunk));
	const exited = new Promise<number | null>(resolve => child.once("exit", code => resolve(code)));
	return { child, output: () => output, exited };
}

/** Whether any process of the group `pid` leads is still alive. */
function groupAlive(pid: number): boolean {
	try {
		process.kill(-pid, 0);
		return true;
	} catch {
		return false;
	}
}

/** Polls `check` every 100 ms until it returns something; fails after `timeoutMs` or when dev exits. */
async function until<T>(what: string, dev: Dev, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const found = await Promise.resolve(check()).catch(() => undefined);
		if (found !== undefined) return found;
		if (dev.child.exitCode !== null)
			throw new Error(`waiting until ${what}: npm run dev exited with ${dev.child.exitCode}:\n${dev.output()}`);
		if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms:\n${dev.output()}`);
		await new Promise(resolve => setTimeout(resolve, 100));
	}
}

describe("npm run dev: rebuild on change, hot reload, the REPL", () => {
	let copy: string;
	let dev: Dev | undefined;

	beforeAll(() => {
		copy = copyProject();
	}, TIMEOUT_MS);

	afterAll(() => {
		if (dev?.child.pid && groupAlive(dev.child.pid)) process.kill(-dev.child.pid, "SIGKILL");
		for (const stream of [dev?.child.stdin, dev?.child.stdout, dev?.child.stderr]) stream?.destroy();
		rmSync(copy, { recursive: true, force: true });
	});

	test(
		"a changed service is rebuilt and served by the same process; a type error is reported; quit stops everything",
		async () => {
			const port = await freePort();
			dev = startDev(copy, port);
			const created = async () => {
				const answer = await fetch(`http://127.0.0.1:${port}/author`, {
					method: "PUT",
					headers: { "content-type": "application/json" },
					body: JSON.stringify({ name: "Uwe Rosenberg", nationality: "German" }),
				});
				return answer.status === 200 ? ((await answer.json()) as { author: Record<string, unknown> }).author : undefined;
			};
			expect(await until("the gateway creates an author", dev, created)).toHaveProperty("nationality", "German");
			// tsc's first pass in watch mode over: from here on, a change is a rebuild of its own.
			await until("the watcher ready", dev, () => (/\[dev\] built .*; watching the sources/.test(dev!.output()) ? true : undefined));

			// The authors service stops showing nationality: its built file changes, and only it is reloaded.
			const service = path.join(copy, "services/authors.service.ts");
			const source = readFileSync(service, "utf8");
			const fields = "fields: fieldNames(AUTHOR)";
			expect(source).toContain(fields);
			writeFileSync(service, source.replace(fields, 'fields: fieldNames(AUTHOR).filter(field => field !== "nationality")'));

			await until("dev rebuilt", dev, () =>
				/\[dev\] rebuilt (.+, )?dist\/services\/authors\.service\.js(, .+)? in \d+ ms\n/.test(dev!.output()) ? true : undefined,
			);
			await until("the authors service reloaded", dev, () =>
				dev!.output().includes("Hot reload 'authors' service") ? true : undefined,
			);
			const author = await until("an author is created without nationality", dev, async () => {
				const answer = await created();
				return answer && !("nationality" in answer) ? answer : undefined;
			});
			expect(author).toEqual({ id: expect.any(String), name: "Uwe Rosenberg" });
			// One process and one broker all along: the hot reload, not a restart.
			expect(dev.child.exitCode).toBeNull();
			expect(dev.output().match(/Moleculer v[\d.]+ is starting/g)).toHaveLength(1);

			// A type error is printed with the rebuild (tsc emits anyway, as `npm run build` does).
			writeFileSync(service, `${readFileSync(service, "utf8")}\nexport const notANumber: number = "dev test";\n`);
			await until("the type error reported", dev, () =>
				/\[dev\] rebuilt .* in \d+ ms, with errors:\n.*error TS2322/.test(dev!.output()) ? true : undefined,
			);

			// The REPL has the terminal's input: quit stops the services, and dev with them.
			dev.child.stdin!.write("quit\n");
			let timer: NodeJS.Timeout | undefined;
			const late = new Promise(resolve => (timer = setTimeout(resolve, 20_000, "still running after quit")));
			expect(await Promise.race([dev.exited, late]).finally(() => clearTimeout(timer))).toBe(0);
			// Nothing of its process group is left: the runner has exited, no build runs on.
			const deadline = Date.now() + 5_000;
			while (groupAlive(dev.child.pid!) && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 100));
			expect(groupAlive(dev.child.pid!)).toBe(false);
		},
		TIMEOUT_MS,
	);
});
