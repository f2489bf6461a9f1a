import autocannon from "autocannon";
import type { Scenario } from "./scenarios";

/** One scenario against one target. Refused (`failures` set) when any answer was not a 2xx. */
export interface Measurement {
	rps: number;
	/** Latency of the 2xx answers, in milliseconds. */
	p50: number;
	p99: number;
	requests: number;
	failures?: { non2xx: number; errors: number; timeouts: number };
}

export interface RunOptions {
	durationS: number;
	warmupS: number;
	connections: number;
}

interface Fired {
	result: autocannon.Result;
	/** Every 2xx latency: autocannon's own histogram keeps whole milliseconds, too coarse for the ceiling. */
	latencies: number[];
}

function fire(base: string, scenario: Scenario, durationS: number, connections: number): Promise<Fired> {
	const latencies: number[] = [];
	let client = 0;
	return new Promise((resolve, reject) => {
		const instance = autocannon(
			{
				url: base,
				connections,
				duration: durationS,
				setupClient: connection => {
					const { path, body } = scenario.requests[client++ % scenario.requests.length];
					const headers = body === undefined ? {} : { "content-type": "application/json" };
					// setRequests, not setRequest: that one changes the next request only, not the ones after.
					connection.setRequests([{ method: scenario.method, path, body, headers }]);
				},
			},
			(err: Error | null, result) => (err ? reject(err) : resolve({ result, latencies })),
		);
		instance.on("response", (_connection, status, _bytes, ms) => {
			if (status >= 200 && status < 300) latencies.push(ms);
		});
	});
}

/** The nearest-rank percentile `p` (0..1) of `sorted`. */
const percentile = (sorted: Float64Array, p: number) => (sorted.length === 0 ? NaN : sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]);

/** A warm-up (its answers checked too, not timed), then the measured run. */
export async function measure(base: string, scenario: Scenario, options: RunOptions): Promise<Measurement> {
	const failures = { non2xx: 0, errors: 0, timeouts: 0 };
	const checked = (fired: Fired) => {
		failures.non2xx += fired.result.non2xx;
		failures.errors += fired.result.errors;
		failures.timeouts += fired.result.timeouts;
		return fired;
	};
	if (options.warmupS > 0) checked(await fire(base, scenario, options.warmupS, options.connections));
	const { result, latencies } = checked(await fire(base, scenario, options.durationS, options.connections));
	const sorted = Float64Array.from(latencies).sort();
	const refused = failures.non2xx + failures.errors + failures.timeouts > 0 || sorted.length === 0;
	return {
		rps: result["2xx"] / result.duration,
		p50: percentile(sorted, 0.5),
		p99: percentile(sorted, 0.99),
		requests: result["2xx"],
		...(refused && { failures }),
	};
}
