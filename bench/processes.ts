import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";
import { pinned, type Pinning } from "./machine";

/** A server process the benchmark started: a catalogue node, nats-server or the ceiling. */
export interface Child {
	name: string;
	process: ChildProcess;
	/** The last part of what it printed, for the message when it fails. */
	output(): string;
	running(): boolean;
	/**
	 * Resolves once it has exited and its folder (if it was given one) is removed: SIGKILL, since its
	 * data is thrown away; SIGTERM first when it writes a CPU profile on exit.
	 */
	kill(): Promise<void>;
}

/** Every child still running, so that an error or Ctrl-C leaves none behind. */
const children = new Set<Child>();
const OUTPUT_KEPT = 16_384;

/** Starts `command` pinned as `pinning` says; `folder`, its data, goes with it when it is killed. */
export function startChild(
	name: string,
	pinning: Pinning,
	command: string,
	args: string[],
	env: NodeJS.ProcessEnv = {},
	folder?: string,
): Child {
	// taskset execs the command, so the pid is the server's own (for its RSS) either way.
	const [file, argv] = pinned(pinning, command, args);
	const spawned = spawn(file, argv, { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
	let output = "";
	const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-OUTPUT_KEPT));
	spawned.stdout?.on("data", keep);
	spawned.stderr?.on("data", keep);
	spawned.on("error", err => keep(Buffer.from(`cannot run ${command}: ${err.message}\n`)));
	const exited = new Promise<void>(resolve => spawned.once("close", () => resolve()));
	const running = () => spawned.exitCode === null && spawned.signalCode === null && spawned.pid !== undefined;
	const child: Child = {
		name,
		process: spawned,
		output: () => output,
		running,
		async kill() {
			if (running() && args.includes("--cpu-prof")) {
				spawned.kill("SIGTERM");
				await Promise.race([exited, new Promise(resolve => setTimeout(resolve, 15_000))]);
			}
			if (running()) spawned.kill("SIGKILL");
			if (spawned.pid !== undefined) await exited;
			if (folder) rmSync(folder, { recursive: true, force: true });
			children.delete(child);
		},
	};
	children.add(child);
	return child;
}

export async function killAll(): Promise<void> {
	await Promise.all([...children].map(child => child.kill()));
}

// The last resort, when the benchmark exits by any path: no server outlives it.
process.on("exit", () => {
	for (const child of children) if (child.running()) child.process.kill("SIGKILL");
});

/** A loopback port nothing listens on right now. */
export function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer().listen(0, "127.0.0.1", () => {
			const { port } = server.address() as AddressInfo;
			server.close(() => resolve(port));
		});
		server.on("error", reject);
	});
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` within `timeoutMs`. */
export function accepts(port: number, timeoutMs = 1000): Promise<boolean> {
	return new Promise(resolve => {
		const socket = connect(port, "127.0.0.1");
		const done = (accepted: boolean) => {
			socket.destroy();
			resolve(accepted);
		};
		socket.setTimeout(timeoutMs, () => done(false));
		socket.once("connect", () => done(true));
		socket.once("error", () => done(false));
	});
}

/**
 * Polls `ready` every 100 ms until it holds. Fails after `timeoutMs`, or at once when one of
 * `watched` has exited, with what they printed.
 */
export async function waitUntil(what: string, ready: () => Promise<boolean>, watched: Child[], timeoutMs = 30_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	const printed = () => watched.map(child => `--- ${child.name}:\n${child.output()}`).join("\n");
	while (!(await ready().catch(() => false))) {
		const ended = watched.find(child => !child.running());
		if (ended)
			throw new Error(
				`waiting until ${what}: ${ended.name} exited (${ended.process.exitCode ?? ended.process.signalCode})\n${printed()}`,
			);
		if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs / 1000} s\n${printed()}`);
		await new Promise(resolve => setTimeout(resolve, 100));
	}
}

/** The resident memory of a process in bytes (VmRSS in /proc), or null once it has gone. */
export function residentBytes(child: Child): number | null {
	try {
		const status = readFileSync(`/proc/${child.process.pid}/status`, "utf8");
		const kb = /^VmRSS:\s*(\d+)\s*kB$/m.exec(status)?.[1];
		return kb === undefined ? null : Number(kb) * 1024;
	} catch {
		return null;
	}
}
