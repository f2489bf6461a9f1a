import type { OffOnCost } from "./compare";
import { FEED_TARGET, type FeedDelay } from "./feed";
import type { Measurement } from "./measure";
import { DISTRIBUTED_TARGET, type Scenario } from "./scenarios";

export const TARGETS = ["ceiling", "embedded", "distributed"] as const;
export type TargetName = (typeof TARGETS)[number];

/** One scenario's measurements; a target missing from `runs` was not measured (it did not start). */
export interface ScenarioResult {
	scenario: Scenario;
	answerBytes: number;
	runs: Partial<Record<TargetName, Measurement>>;
}

/** A table as rows of cells, the first row its header; `right` marks the columns of numbers. */
export interface Table {
	rows: string[][];
	right: boolean[];
}

/** A number as the tables and charts print it: whole, with thousands separators. */
export const wholeNumber = (value: number) => Math.round(value).toLocaleString("en-US");
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const share = (value: number) => `${(value * 100).toFixed(1)}%`;

export const refusal = ({ failures }: Measurement) =>
	failures && `FAILED: ${failures.non2xx} non-2xx, ${failures.errors} socket errors (${failures.timeouts} timeouts)`;

/** PASS or MISS against the target; nothing to say when either side is missing or refused. */
function verdict(measured: Measurement | undefined, against: Measurement | undefined, target: number) {
	if (!measured) return { ratio: "", result: "not run" };
	const refused = refusal(measured);
	if (refused) return { ratio: "", result: refused };
	if (!against || against.failures) return { ratio: "", result: "n/a" };
	const ratio = measured.rps / against.rps;
	return { ratio: share(ratio), result: ratio >= target ? "PASS" : "MISS" };
}

export function mainTable(results: ScenarioResult[]): Table {
	const rows = [
		["Scenario", "Answer", "Run", "rps", "p50 ms", "p99 ms", "p99/p50", "loop max ms", "of ceiling", "of embedded", "Target", "Result"],
	];
	for (const { scenario, answerBytes, runs } of results) {
		const { ceiling, embedded, distributed } = runs;
		for (const name of TARGETS) {
			const measured = runs[name];
			const numbers =
				measured && !measured.failures
					? [
							wholeNumber(measured.rps),
							ms(measured.p50),
							ms(measured.p99),
							`${(measured.p99 / measured.p50).toFixed(1)}x`,
							measured.loop ? ms(measured.loop.maxMs) : "",
						]
					: ["—", "—", "—", "—", "—"];
			const first = name === "ceiling" ? [scenario.name, `${answerBytes.toLocaleString("en-US")} B`] : ["", ""];
			if (name === "ceiling") {
				rows.push([...first, name, ...numbers, "", "", "", measured ? (refusal(measured) ?? "") : "not run"]);
			} else if (name === "embedded") {
				const { ratio, result } = verdict(embedded, ceiling, scenario.embeddedTarget);
				rows.push([...first, name, ...numbers, ratio, "", `≥ ${share(scenario.embeddedTarget)} of ceiling`, result]);
			} else {
				const ofCeiling = verdict(distributed, ceiling, 0).ratio;
				const target = scenario.distributedTarget ?? DISTRIBUTED_TARGET;
				const { ratio, result } = verdict(distributed, embedded, target);
				rows.push([...first, name, ...numbers, ofCeiling, ratio, `≥ ${share(target)} of embedded`, result]);
			}
		}
	}
	return { rows, right: [false, true, false, true, true, true, true, true, true, true, false, false] };
}

/** One growth step of one target: `GET /game` over many games, and the memory of every process. */
export interface GrowthResult {
	target: TargetName;
	games: number;
	answerBytes?: number;
	requests?: number;
	/** Mean latency of a list answered from the cache, and of one computed afresh. */
	meanMs?: number;
	coldMs?: number;
	/** Requests per second of the create and the update run at this size. */
	createRps?: number;
	updateRps?: number;
	/** Mean latency of a game page (the 100th of 20) computed afresh. */
	pageMs?: number;
	/** The same for the last game page, and the first author page. */
	lastPageMs?: number;
	authorPageMs?: number;
	/** The embedded target: ms from a start on the step's data until it answered, and on no games. */
	restartMs?: number;
	emptyRestartMs?: number;
	/** `GET /author` while 4 other clients list every game. */
	beside?: { rps: number; p50: number; p99: number };
	/** The longest event-loop delay of any catalogue process during the step's timed requests (ms). */
	loopMs?: number;
	/** The same while the lists computed afresh (each after a write) were made and sent. */
	listLoopMs?: number;
	memory: { name: string; bytes: number | null }[];
	/** What went wrong instead of (or after some of) the measurement: a finding, not a crash. */
	error?: string;
}

const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;

export function growthTable(results: GrowthResult[]): Table {
	const rows = [
		[
			"Run",
			"Games",
			"Answer",
			"Requests",
			"Cached ms",
			"per MB",
			"Computed ms",
			"per MB",
			"Create rps",
			"Update rps",
			"Page ms: 100th / last game, author",
			"Small reads beside lists p50 / p99 ms",
			"Loop max ms: lists made afresh / whole step",
			"Restart ms (no games)",
			"RSS per process",
			"Note",
		],
	];
	for (const {
		target,
		games,
		answerBytes,
		requests,
		meanMs,
		coldMs,
		createRps,
		updateRps,
		pageMs,
		lastPageMs,
		authorPageMs,
		restartMs,
		emptyRestartMs,
		beside,
		loopMs,
		listLoopMs,
		memory,
		error,
	} of results) {
		const perMb = (mean: number | undefined) =>
			mean === undefined || !answerBytes ? "—" : (mean / (answerBytes / 1_048_576)).toFixed(1);
		rows.push([
			target,
			games.toLocaleString("en-US"),
			answerBytes === undefined ? "—" : mb(answerBytes),
			requests === undefined ? "—" : String(requests),
			meanMs === undefined ? "—" : meanMs.toFixed(0),
			perMb(meanMs),
			coldMs === undefined ? "—" : coldMs.toFixed(0),
			perMb(coldMs),
			createRps === undefined ? "—" : wholeNumber(createRps),
			updateRps === undefined ? "—" : wholeNumber(updateRps),
			pageMs === undefined ? "—" : [pageMs, lastPageMs, authorPageMs].map(time => (time === undefined ? "—" : ms(time))).join(" / "),
			beside === undefined ? "—" : `${ms(beside.p50)} / ${ms(beside.p99)}`,
			`${listLoopMs === undefined ? "—" : ms(listLoopMs)} / ${loopMs === undefined ? "—" : ms(loopMs)}`,
			restartMs === undefined ? "—" : `${restartMs.toFixed(0)} (${emptyRestartMs?.toFixed(0) ?? "—"})`,
			memory.map(({ name, bytes }) => `${name} ${bytes === null ? "gone" : mb(bytes)}`).join(", "),
			error ?? "",
		]);
	}
	return { rows, right: [false, true, true, true, true, true, true, true, true, true, true, true, true, true, false, false] };
}

export function asText({ rows, right }: Table): string {
	const widths = rows[0].map((_, column) => Math.max(...rows.map(row => row[column].length)));
	const line = (row: string[]) =>
		row
			.map((cell, column) => (right[column] ? cell.padStart(widths[column]) : cell.padEnd(widths[column])))
			.join("  ")
			.trimEnd();
	return [line(rows[0]), widths.map(width => "-".repeat(width)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

export function asMarkdown({ rows, right }: Table): string {
	const line = (row: string[]) => `| ${row.map(cell => cell.replaceAll("|", "\\|")).join(" | ")} |`;
	const rule = `|${right.map(isRight => (isRight ? " ---: " : " --- ")).join("|")}|`;
	return [line(rows[0]), rule, ...rows.slice(1).map(line)].join("\n");
}

/** The processes whose CPU the capacity table shows, in order; the embedded process in the first column. */
const CPU_COLUMNS = ["api", "authors", "categories", "games", "nats-server", "redis-server"];

/**
 * The capacity model's inputs (docs/performance.md): per scenario and run, the CPU milliseconds
 * each process spent per 1,000 requests, the rate one core would give if it did nothing else
 * (1,000 ms of CPU a second over the milliseconds of the processes pinned to it: all but Redis),
 * the rate measured, and what crossed NATS and Redis per request.
 */
export function capacityTable(results: ScenarioResult[]): Table {
	const rows = [
		[
			"Scenario",
			"Run",
			...CPU_COLUMNS.map(name => `${name === "api" ? "api / embedded" : name} CPU ms per 1,000`),
			"one core predicts rps",
			"measured rps",
			"NATS msgs in+out per request",
			"NATS KB in+out per request",
			"Redis cmds per request",
			"Redis KB in+out per request",
		],
	];
	const fixed = (value: number | undefined, digits: number) => (value === undefined || Number.isNaN(value) ? "" : value.toFixed(digits));
	for (const { scenario, runs } of results)
		for (const name of ["embedded", "distributed"] as const) {
			const measured = runs[name];
			const used = measured?.per1000;
			if (!measured || !used || measured.failures) continue;
			const cpu = (process: string) => used[`cpu ${process === "api" && name === "embedded" ? "embedded" : process}`];
			const pinned = CPU_COLUMNS.filter(process => process !== "redis-server")
				.map(cpu)
				.filter(cpuMs => cpuMs !== undefined && !Number.isNaN(cpuMs))
				.reduce((sum, cpuMs) => sum + cpuMs, 0);
			rows.push([
				scenario.name,
				name,
				...CPU_COLUMNS.map(process => fixed(cpu(process), 0)),
				pinned > 0 ? wholeNumber(1e6 / pinned) : "",
				wholeNumber(measured.rps),
				fixed(used["NATS msgs"] && used["NATS msgs"] / 1000, 1),
				fixed(used["NATS KB"] && used["NATS KB"] / 1000, 2),
				fixed(used["Redis cmds"] && used["Redis cmds"] / 1000, 2),
				fixed(used["Redis KB"] && used["Redis KB"] / 1000, 2),
			]);
		}
	return { rows, right: [false, false, ...CPU_COLUMNS.map(() => true), true, true, true, true, true, true] };
}

/**
 * A setting's cost (compare.ts): the median rate of each side's starts, each start's rate, and the on side's share of the off side's
 * rate, against `target` when there is one. A side with a refused run is not compared.
 */
function offOnTable(costs: OffOnCost[], setting: string, target?: number): Table {
	const rows = [
		[
			"Run",
			"Scenario",
			`${setting} off rps`,
			`${setting} on rps`,
			"each start",
			"on / off",
			"CPU ms per 1,000 requests, off / on",
			"off / on CPU",
			"Target",
			"Result",
		],
	];
	for (const { target: run, scenario, off, on } of costs) {
		const valid = (runs: Measurement[]) => runs.length > 0 && !runs.some(measured => measured.failures);
		const [offRps, onRps] = [off, on].map(runs => (valid(runs) ? median(runs.map(measured => measured.rps)) : undefined));
		const [offCpu, onCpu] = [off, on].map(runs => (valid(runs) ? median(runs.map(cpuPer1000)) : undefined));
		const refused = [...off, ...on].map(refusal).find(Boolean);
		const compared = offRps !== undefined && onRps !== undefined;
		const result = target === undefined ? "measured" : onRps! / offRps! >= target ? "PASS" : "MISS";
		rows.push([
			run,
			scenario,
			offRps === undefined ? "—" : wholeNumber(offRps),
			onRps === undefined ? "—" : wholeNumber(onRps),
			[...off.map(measured => `off ${wholeNumber(measured.rps)}`), ...on.map(measured => `on ${wholeNumber(measured.rps)}`)].join(
				", ",
			),
			compared ? share(onRps / offRps) : "",
			offCpu && onCpu ? `${wholeNumber(offCpu)} / ${wholeNumber(onCpu)}` : "",
			offCpu && onCpu ? share(offCpu / onCpu) : "",
			target === undefined ? "none" : `≥ ${share(target)} of off`,
			compared ? result : (refused ?? "not run"),
		]);
	}
	return { rows, right: [false, false, true, true, false, true, true, true, false, false] };
}

/** The writes with the change feed off and on (feed.ts), against FEED_TARGET. */
export const feedCostTable = (costs: OffOnCost[]) => offOnTable(costs, "feed", FEED_TARGET);

/** The distributed catalogue with the broker's access rules off and on: measured, with no target of its own (docs/performance.md). */
export const accessCostTable = (costs: OffOnCost[]) => offOnTable(costs, "rules");

/** The middle value (the mean of the middle two of an even count). */
function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	const middle = sorted.length / 2;
	return Number.isInteger(middle) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[Math.floor(middle)];
}

/** CPU ms of all the target's processes (the catalogue's, nats-server's, redis-server's) per 1,000 requests of a run; 0 unknown. */
const cpuPer1000 = (run: Measurement) =>
	Object.entries(run.per1000 ?? {})
		.filter(([key, value]) => key.startsWith("cpu ") && Number.isFinite(value))
		.reduce((sum, [, value]) => sum + value, 0);

/** From a write's answer to its change at a follower (feed.ts); negative when the change came before the answer's last byte. */
export function feedDelayTable(delays: FeedDelay[]): Table {
	const rows = [["Run", "Follower", "Writes", "Arrived", "p50 ms", "p99 ms"]];
	for (const { target, follower, loaded, sent, arrived, p50, p99 } of delays)
		rows.push([
			target,
			follower,
			loaded ? "beside the update scenario" : "alone, one every 50 ms",
			`${arrived} of ${sent}`,
			Number.isNaN(p50) ? "—" : ms(p50),
			Number.isNaN(p99) ? "—" : ms(p99),
		]);
	return { rows, right: [false, false, false, true, true, true] };
}
