import autocannon from "autocannon";
import type { Scenario } from "./scenarios";
import { per1000, type Counters } from "./usage";

/** One scenario against one target. Refused (`failures` set) when any answer was not a 2xx. */
export interface Measurement {
	rps: number;
	/** Latency of the 2xx answers, in milliseconds. */
	p50: number;
	p99: number;
	requests: number;
	failures?: { non2xx: number; errors: number; timeouts: number };
	/** The longest event-loop delay of the target's catalogue processes during the run (ms), and whose. */
	loop?: { maxMs: number; process: string };
	/** What the target's processes used during the run, per 1,000 requests (usage.ts). */
	per1000?: Counters;
}

export interface RunOptions {
	durationS: number;
	/** Requests of the measured run, instead of its duration (a create run that must add no more games than this). */
	amount?: number;
	warmupS: number;
	connections: number;
	/** The target's longest event-loop delay since it was last asked (servers.ts loopDelay). */
	loop?: () => Promise<Measurement["loop"]>;
	/** The target's usage counters (usage.ts). */
	usage?: () => Promise<Counters>;
}

/** The requests of connection `i`, in turn. */
const sequenceOf = (scenario: Pick<Scenario, "method" | "requests">, i: number) =>
	[scenario.requests[i % scenario.requests.length]].flat().map(({ method, path, body }) => ({
		method: method ?? scenario.method,
		path,
		body,
		headers: body === undefined ? {} : { "content-type": "application/json" },
	}));

interface Fired {
	result: autocannon.Result;
	/** Every 2xx latency: autocannon's own histogram keeps whole milliseconds, too coarse for the ceiling. */
	latencies: number[];
}

function fire(
	base: string,
	scenario: Pick<Scenario, "method" | "requests">,
	length: { durationS: number; amount?: number },
	connections: number,
): Promise<Fired> {
	const latencies: number[] = [];
	let client = 0;
	return new Promise((resolve, reject) => {
		const instance = autocannon(
			{
				url: base,
				connections,
				...(length.amount === undefined ? { duration: length.durationS } : { amount: length.amount }),
				// setRequests, not setRequest: that one changes the next request only, not the ones after.
				setupClient: connection => connection.setRequests(sequenceOf(scenario, client++)),
			},
			(err: Error | null, result) => (err ? reject(err) : resolve({ result, latencies })),
		);
		instance.on("response", (_connection, status, _bytes, ms) => {
			if (status >= 200 && status < 300) latencies.push(ms);
		});
	});
}

/** The nearest-rank percentile `p` (0..1) of `sorted`. */
export const percentile = (sorted: Float64Array, p: number) =>
	sorted.length === 0 ? NaN : sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];

/**
 * The rate of a run of a number of requests, from its latencies: autocannon ends such a run at
 * its next whole second, idle until then. Each connection sends its next request when the last is
 * answered, so the rate is the connections over the mean latency (Little's law).
 */
const busyRate = (latencies: number[], connections: number) =>
	latencies.length === 0
		? 0
		: (Math.min(connections, latencies.length) * 1000) / (latencies.reduce((sum, ms) => sum + ms, 0) / latencies.length);

/** A warm-up (its answers checked too, not timed), then the measured run. */
export async function measure(base: string, scenario: Scenario, options: RunOptions): Promise<Measurement> {
	const failures = { non2xx: 0, errors: 0, timeouts: 0 };
	const checked = (fired: Fired) => {
		failures.non2xx += fired.result.non2xx;
		failures.errors += fired.result.errors;
		failures.timeouts += fired.result.timeouts;
		return fired;
	};
	/** The scenario's requests, with its background load (if any) for as long. */
	const run = async (length: { durationS: number; amount?: number }) => {
		const { background } = scenario;
		const [fired] = await Promise.all([
			fire(base, scenario, length, options.connections),
			background && fire(base, background, length, background.connections).then(checked),
		]);
		return checked(fired);
	};
	if (options.warmupS > 0) await run({ durationS: options.warmupS });
	await options.loop?.();
	const before = await options.usage?.();
	const { result, latencies } = await run(options);
	const after = await options.usage?.();
	const loop = await options.loop?.();
	const sorted = Float64Array.from(latencies).sort();
	const refused = failures.non2xx + failures.errors + failures.timeouts > 0 || sorted.length === 0;
	return {
		rps: options.amount === undefined ? result["2xx"] / result.duration : busyRate(latencies, options.connections),
		p50: percentile(sorted, 0.5),
		p99: percentile(sorted, 0.99),
		requests: result["2xx"],
		...(loop && { loop }),
		...(before && after && result["2xx"] > 0 && { per1000: per1000(before, after, result["2xx"]) }),
		...(refused && { failures }),
	};
}
