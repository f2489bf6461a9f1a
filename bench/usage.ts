import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { send } from "./http";
import type { Child } from "./processes";
import type { Target } from "./servers";

/**
 * What a target's processes have used so far, as counters: CPU milliseconds of each process
 * (/proc/<pid>/stat, user and system), messages and kilobytes through nats-server (its monitoring
 * endpoint, /varz) and commands and kilobytes through Redis (INFO). The difference over a run,
 * per request, is what the capacity model of docs/performance.md is made of.
 */
export type Counters = Record<string, number>;

/** Clock ticks per second of /proc's CPU times: 100 on Linux. */
const TICKS_PER_S = 100;

/** CPU milliseconds a process has used so far, or null once it has gone. */
function cpuMsOf(pid: number | undefined): number | null {
	try {
		// The fields after the command's name (which may hold spaces), from the 3rd: utime and stime are the 14th and 15th.
		const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
		return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_S) * 1000;
	} catch {
		return null;
	}
}

const cpuMs = (child: Child) => cpuMsOf(child.process.pid);

/** A reader of the target's counters; `close` when done. */
export interface UsageProbe {
	read(): Promise<Counters>;
	close(): void;
}

/** nats-server's counters, from its monitoring port. */
async function natsCounters(monitor: string): Promise<Counters> {
	const answer = await send(monitor, "GET", "/varz");
	const varz = JSON.parse(answer.body.toString()) as Record<string, number>;
	return { "NATS msgs": varz.in_msgs + varz.out_msgs, "NATS KB": (varz.in_bytes + varz.out_bytes) / 1024 };
}

/** Redis's counters, and the CPU of its server process (on this machine). */
async function redisCounters(redis: Redis): Promise<Counters> {
	const info = await redis.info();
	const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, "m").exec(info)?.[1] ?? NaN);
	return {
		"Redis cmds": field("total_commands_processed"),
		"Redis KB": (field("total_net_input_bytes") + field("total_net_output_bytes")) / 1024,
		"cpu redis-server": cpuMsOf(field("process_id")) ?? NaN,
	};
}

/** The counters of `target`: each process's CPU, and NATS's and Redis's when it uses them. */
export function usageProbe(target: Target, redisUrl: string | undefined): UsageProbe {
	const redis = target.natsMonitor && redisUrl ? new Redis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 }) : undefined;
	return {
		async read() {
			const counters: Counters = {};
			for (const child of target.processes) counters[`cpu ${child.name}`] = cpuMs(child) ?? NaN;
			if (target.natsMonitor) Object.assign(counters, await natsCounters(target.natsMonitor));
			if (redis) Object.assign(counters, await redisCounters(redis));
			return counters;
		},
		close: () => redis?.disconnect(),
	};
}

/** Each counter's growth from `before` to `after`, per 1,000 requests. */
export function per1000(before: Counters, after: Counters, requests: number): Counters {
	return Object.fromEntries(Object.keys(after).map(key => [key, ((after[key] - before[key]) / requests) * 1000]));
}
