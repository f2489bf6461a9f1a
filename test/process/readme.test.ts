import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Api } from "../support/catalogue";
import { startNats, type NatsServer } from "../support/nats";
import { freePort, root, waitFor, type Node } from "../support/process";

/**
 * A newcomer follows the README: `npm start`, then the distributed block as it is written. Neither prints a warning, an
 * error or a stack trace. `npm install` is .ci/run's first step, on a fresh clone, which checks its warnings itself.
 */

const README = readFileSync(path.join(root, "README.md"), "utf8");

/** What a newcomer should not see: a level above info, a stack frame, npm's warnings. */
const UNEXPLAINED = /^.*(\b(WARN|ERROR|FATAL)\b|^\s+at |npm warn|npm error).*$/gm;

/** Runs `script` with bash in its own process group from the repository, as a newcomer's terminal would. */
function shell(script: string, env: NodeJS.ProcessEnv): Node {
	const child: ChildProcess = spawn("bash", ["-c", script], {
		cwd: root,
		env: { ...process.env, ...env },
		detached: true,
		stdio: ["ignore", "pipe", "pipe"],
	});
	let output = "";
	child.stdout!.on("data", chunk => (output += chunk));
	child.stderr!.on("data", chunk => (output += chunk));
	const exited = new Promise<number | null>(resolve => child.once("close", code => resolve(code)));
	const group = (signal: NodeJS.Signals) => {
		try {
			process.kill(-child.pid!, signal);
		} catch {
			// the group has ended
		}
	};
	return {
		child,
		output: () => output,
		exited,
		stop: async () => {
			group("SIGTERM");
			const code = await exited;
			group("SIGKILL");
			return code;
		},
		kill: async () => {
			group("SIGKILL");
			return exited;
		},
	};
}

/** The fenced `sh` block that follows `heading` in the README. */
function blockAfter(heading: string): string {
	const from = README.indexOf(heading);
	if (from < 0) throw new Error(`the README has no "${heading}"`);
	const block = /```sh\n([\s\S]*?)```/.exec(README.slice(from));
	if (!block) throw new Error(`the README has no sh block after "${heading}"`);
	return block[1];
}

/** `text` with `from` replaced by `to`, failing when the README no longer says `from`. */
function replaced(text: string, from: string | RegExp, to: string): string {
	if (!(typeof from === "string" ? text.includes(from) : from.test(text))) throw new Error(`the README's block no longer has ${from}`);
	return text.replace(from, to);
}

let folder: string;
const started: Node[] = [];
let nats: NatsServer | undefined;

beforeAll(async () => {
	folder = await mkdtemp(path.join(tmpdir(), "readme-"));
});
afterAll(async () => {
	await Promise.all(started.map(node => node.kill()));
	await nats?.stop();
	await rm(folder, { recursive: true, force: true });
});

test("`npm start`'s build skips a built tree: it is not type-checked again", async () => {
	const build = shell("npm run -s build -- --verbose", {});
	started.push(build);
	expect(await build.exited).toBe(0);
	expect(build.output()).toMatch(/Project 'tsconfig.build.json' is up to date/);
});

/** `npm start` as the README says, with its data in `folder/dataDir`, once its gateway is ready. */
async function npmStart(dataDir: string): Promise<{ node: Node; api: Api }> {
	const port = await freePort();
	const node = shell("npm start", { PORT: String(port), DATA_DIR: path.join(folder, dataDir), LOGLEVEL: undefined });
	started.push(node);
	const api = new Api(`http://127.0.0.1:${port}`);
	await waitFor("the gateway is ready", () => api.get("/health/ready").then(answer => answer.status === 200), [node], 60_000);
	return { node, api };
}

test("`npm start` as the README says: ready, the docs page served, a record stored, a clean stop, nothing but info", async () => {
	const { node, api } = await npmStart("embedded");
	expect((await fetch(`${api.url}/docs`)).status).toBe(200);
	expect((await api.put("/category", { name: "Puzzle" })).status).toBe(200);
	await node.stop();
	expect(node.output()).toContain("ServiceBroker is stopped. Good bye.");
	expect(node.output().match(UNEXPLAINED)).toBeNull();
	expect(node.output()).toContain("Service 'api' started.");
}, 90_000);

test("`npm start` stopped by a SIGTERM to npm alone (`kill %1`, a process manager): the catalogue stops with it, cleanly", async () => {
	const { node, api } = await npmStart("npm-signal");
	// bash runs its one command in its own process: the child is npm, and only npm is signalled.
	process.kill(node.child.pid!, "SIGTERM");
	await node.exited;
	await waitFor("the catalogue has stopped", async () => node.output().includes("ServiceBroker is stopped. Good bye."), [], 10_000);
	await expect(fetch(`${api.url}/health/live`)).rejects.toThrow();
}, 90_000);

test("the README's distributed block as written, without MongoDB: a game with its references across nodes, nothing but info", async () => {
	nats = await startNats();
	const port = await freePort();
	let script = blockAfter("**Distributed**");
	// .ci/run installed on the fresh clone; the test's own nats-server runs nats.conf on a port of its own.
	script = replaced(script, /^npm install && npm run build\n/m, "npm run -s build\n");
	script = replaced(script, /^nats-server -c nats.conf &.*\n/m, "");
	script = replaced(script, "nats://127.0.0.1:4222", nats.url);
	expect(script).not.toContain("MONGO_URI");
	const node = shell(script, { PORT: String(port), DATA_DIR: path.join(folder, "distributed"), LOGLEVEL: undefined });
	started.push(node);
	const api = new Api(`http://127.0.0.1:${port}`);
	await waitFor("the gateway is ready", () => api.get("/health/ready").then(answer => answer.status === 200), [node], 60_000);
	const category = await api.create("/category", "category", { name: "Strategy" });
	const author = await api.create("/author", "author", { name: "Ada", nationality: "British" });
	const game = await api.put("/game", { title: "Go", age: 8, category: { id: category.id }, author: { id: author.id } });
	expect(game.status).toBe(200);
	// The authors node asked the games node before refusing.
	expect(await api.delete(`/author/${author.id}`)).toMatchObject({
		status: 400,
		body: { msg: "There are games related to this author" },
	});
	await node.stop();
	expect(node.output().match(/ServiceBroker is stopped. Good bye./g)).toHaveLength(4);
	expect(node.output().match(UNEXPLAINED)).toBeNull();
	for (const service of ["authors", "categories", "games", "api"]) expect(node.output()).toContain(`Service '${service}' started.`);
}, 120_000);
