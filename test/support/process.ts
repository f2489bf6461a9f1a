import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import path from "node:path";
import { NODE_FLAGS } from "../../lib/config/node-flags";
import { Api, within } from "./catalogue";

export const root = path.resolve(__dirname, "../..");
const runner = path.join(root, "node_modules/moleculer/bin/moleculer-runner.js");

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer().listen(0, "127.0.0.1", () => {
			const { port } = server.address() as { port: number };
			server.close(() => resolve(port));
		});
		server.on("error", reject);
	});
}

/** `count` different ports nothing listens on right now: each is held until all are found. */
export async function freePorts(count: number): Promise<number[]> {
	const servers = await Promise.all(
		Array.from(
			{ length: count },
			() =>
				new Promise<Server>((resolve, reject) => {
					const server = createServer().listen(0, "127.0.0.1", () => resolve(server));
					server.on("error", reject);
				}),
		),
	);
	const ports = servers.map(server => (server.address() as { port: number }).port);
	await Promise.all(servers.map(server => new Promise(resolve => server.close(resolve))));
	return ports;
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` now. */
function accepts(port: number): Promise<boolean> {
	return new Promise(resolve => {
		const socket = connect(port, "127.0.0.1", () => {
			socket.destroy();
			resolve(true);
		});
		socket.on("error", () => resolve(false));
	});
}

/**
 * Resolves once a server the test started listens on `port`; rejects with `failed`'s reason when
 * the server cannot run or exits first, or after `timeoutMs` with `late()`'s message.
 */
export async function listening(port: number, failed: Promise<never>, timeoutMs: number, late: () => string): Promise<void> {
	failed.catch(() => undefined);
	const deadline = Date.now() + timeoutMs;
	while (!(await Promise.race([accepts(port), failed]))) {
		if (Date.now() > deadline) throw new Error(late());
		await new Promise(resolve => setTimeout(resolve, 50));
	}
}

/** A node in a process of its own, started as `npm start` starts one. */
export interface Node {
	child: ChildProcess;
	output: () => string;
	/** The exit code once the process has ended. */
	exited: Promise<number | null>;
	/** SIGTERM, and the exit code once the process has ended. */
	stop(): Promise<number | null>;
	/** SIGKILL if it still runs, for cleaning up after a failure. */
	kill(): Promise<number | null>;
}

/**
 * Starts moleculer-runner with the built config and SERVICEDIR=dist/services, the way `npm start`
 * does; `env` chooses the node (SERVICES, TRANSPORTER, NAMESPACE, PORT...). With `repl`, the node
 * opens moleculer's REPL (`--repl`) on a standard input the test writes to; `cwd` is where it runs (and reads .env). Returns at once.
 */
export function startNode(env: NodeJS.ProcessEnv, { repl = false, cwd = root } = {}): Node {
	const config = path.join(root, "dist/moleculer.config.js");
	if (!existsSync(config)) throw new Error("dist/ is missing: run `npm run build` (npm test does it first)");
	const child = spawn(process.execPath, [...NODE_FLAGS, runner, "--config", config, ...(repl ? ["--repl"] : [])], {
		cwd,
		env: { ...process.env, LOGLEVEL: "warn", SERVICEDIR: path.join(root, "dist/services"), ...env },
		stdio: [repl ? "pipe" : "ignore", "pipe", "pipe"],
	});
	let output = "";
	child.stdout!.on("data", chunk => (output += chunk));
	child.stderr!.on("data", chunk => (output += chunk));
	// "close", not "exit": what it printed last may still be in the pipe when the process has exited.
	const exited = new Promise<number | null>(resolve => child.once("close", code => resolve(code)));
	const running = () => child.exitCode === null && child.signalCode === null;
	return {
		child,
		output: () => output,
		exited,
		stop() {
			if (running()) child.kill("SIGTERM");
			return exited;
		},
		kill() {
			if (running()) child.kill("SIGKILL");
			return exited;
		},
	};
}

/** How long one check of `waitFor` may take. */
const CHECK_TIMEOUT_MS = 2000;

/**
 * Checks `condition` every 100 ms until it holds. Fails after `timeoutMs`, or as soon as one of
 * `nodes` has exited, with what the nodes printed.
 */
export async function waitFor(what: string, condition: () => Promise<boolean>, nodes: Node[] = [], timeoutMs = 20_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	const printed = () => nodes.map(node => node.output()).join("\n");
	// A check that hangs (a request lost with a node or with NATS) counts as false after a while.
	const check = () => within(CHECK_TIMEOUT_MS, condition(), what).catch(() => false);
	while (!(await check())) {
		const ended = nodes.find(node => node.child.exitCode !== null || node.child.signalCode !== null);
		if (ended)
			throw new Error(`waiting until ${what}: a node exited with ${ended.child.exitCode ?? ended.child.signalCode}:\n${printed()}`);
		if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms:\n${printed()}`);
		await new Promise(resolve => setTimeout(resolve, 100));
	}
}

/** The answer's status is 200. */
export const answers = (api: Api, route: string) => () => api.get(route).then(answer => answer.status === 200);

export interface RunningCatalogue extends Node {
	api: Api;
}

/**
 * Starts the built service the way `npm start` does, and waits until the gateway is ready: every
 * service answers, its store loaded. A gateway that answers one path may still wait for another
 * service's file to load (a large games.db after a restart, on a busy machine).
 */
export async function startProcess(env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<RunningCatalogue> {
	const port = await freePort();
	const node = startNode({ ...env, PORT: String(port) });
	const api = new Api(`http://127.0.0.1:${port}`);
	try {
		await waitFor("the gateway is ready", answers(api, "/health/ready"), [node], timeoutMs);
	} catch (err) {
		await node.kill();
		throw err;
	}
	return { ...node, api };
}
