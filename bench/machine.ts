import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";

/** What the numbers were measured on, printed above every table. */
export interface Machine {
	cpu: string;
	cores: number;
	node: string;
	date: string;
}

/**
 * Where the processes run: the servers (every catalogue node, nats-server, the ceiling) share one
 * core and the load generator has another, so the generator never takes CPU from what it measures.
 * `serverCore` is null when that was not possible, and `note` says why.
 */
export interface Pinning {
	serverCore: number | null;
	loadCore: number | null;
	note: string;
}

const TASKSET = ["/usr/bin/taskset", "/bin/taskset"].find(path => existsSync(path));

export function describeMachine(): Machine {
	const cpuinfo = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
	const cpu = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? "unknown CPU";
	return { cpu, cores: availableParallelism(), node: process.version, date: new Date().toISOString() };
}

/** The cores this process may run on ("0-1,4" in /proc/self/status), in order. */
function allowedCores(): number[] {
	const status = existsSync("/proc/self/status") ? readFileSync("/proc/self/status", "utf8") : "";
	const list = /^Cpus_allowed_list:\s*(.+)$/m.exec(status)?.[1] ?? "";
	return list.split(",").flatMap(range => {
		const [from, to = from] = range.split("-").map(Number);
		return Number.isInteger(from) && Number.isInteger(to) ? Array.from({ length: to - from + 1 }, (_, i) => from + i) : [];
	});
}

/**
 * Pins this process (every thread: `-a`, so V8's and libuv's threads too) to the second allowed
 * core; the servers go on the first through `pinned`. Threads started later inherit it.
 */
export function pinLoadGenerator(): Pinning {
	const cores = allowedCores();
	if (!TASKSET)
		return { serverCore: null, loadCore: null, note: "UNPINNED: taskset not found; servers and load generator share every core" };
	if (cores.length < 2) return { serverCore: null, loadCore: null, note: "UNPINNED: only one core; servers and load generator share it" };
	const [serverCore, loadCore] = cores;
	try {
		execFileSync(TASKSET, ["-a", "-pc", String(loadCore), String(process.pid)], { stdio: "ignore" });
	} catch (err) {
		return { serverCore: null, loadCore: null, note: `UNPINNED: taskset failed (${(err as Error).message})` };
	}
	return { serverCore, loadCore, note: `servers on core ${serverCore}, load generator on core ${loadCore} (taskset)` };
}

/** The command line that runs `command` on the servers' core, when there is one. */
export function pinned(pinning: Pinning, command: string, args: string[]): [string, string[]] {
	if (pinning.serverCore === null || !TASKSET) return [command, args];
	return [TASKSET, ["-c", String(pinning.serverCore), command, ...args]];
}
