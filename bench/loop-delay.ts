/**
 * Loaded into every catalogue process the benchmark starts (`node --require`), never by the
 * catalogue itself: the longest event-loop delays of the process (perf_hooks'
 * monitorEventLoopDelay), written as JSON to BENCH_LOOP_FILE on SIGUSR2, then counted afresh. The
 * benchmark signals once before a run (to start counting) and once after it (to read the run's).
 */

import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

/** What a process reports: milliseconds. */
export interface LoopDelay {
	max: number;
	p99: number;
}

const file = process.env.BENCH_LOOP_FILE;
if (file) {
	const delays = monitorEventLoopDelay({ resolution: 5 });
	delays.enable();
	process.on("SIGUSR2", () => {
		const report: LoopDelay = { max: delays.max / 1e6, p99: delays.percentile(99) / 1e6 };
		writeFileSync(file, JSON.stringify(report));
		delays.reset();
	});
}
