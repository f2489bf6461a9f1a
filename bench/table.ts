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
	/** `GET /author` while 4 other clients list every game. */
	beside?: { rps: number; p50: number; p99: number };
	/** The longest event-loop delay of any catalogue process during the step's timed requests (ms). */
	loopMs?: number;
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
			"Page ms",
			"Small reads beside lists p50 / p99 ms",
			"Loop max ms",
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
		beside,
		loopMs,
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
			pageMs === undefined ? "—" : ms(pageMs),
			beside === undefined ? "—" : `${ms(beside.p50)} / ${ms(beside.p99)}`,
			loopMs === undefined ? "—" : ms(loopMs),
			memory.map(({ name, bytes }) => `${name} ${bytes === null ? "gone" : mb(bytes)}`).join(", "),
			error ?? "",
		]);
	}
	return { rows, right: [false, true, true, true, true, true, true, true, true, true, true, true, true, false, false] };
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
