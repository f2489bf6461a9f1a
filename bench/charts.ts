import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { TopLevelSpec } from "vega-lite";
import { TARGETS, wholeNumber, type GrowthResult, type ScenarioResult, type TargetName } from "./table";

// The two charts of docs/performance.md, drawn by vega-lite (compiled to a vega spec) and rendered
// to SVG by vega's headless view: no canvas, no browser.

/** One colour per target, the same in both charts. */
const COLOURS: Record<TargetName, string> = { ceiling: "#9e9e9e", embedded: "#1f77b4", distributed: "#ff7f0e" };
const colour = (targets: readonly TargetName[]) => ({ domain: [...targets], range: targets.map(name => COLOURS[name]) });

const CONFIG = {
	font: "sans-serif",
	background: "white",
	view: { stroke: null },
	axis: { labelFontSize: 11, titleFontSize: 12 },
	legend: { orient: "top", labelLimit: 300 },
} as const;

/** A bar of the throughput chart: one target's requests per second in one scenario. */
interface Bar {
	scenario: string;
	run: TargetName;
	rps: number;
	label: string;
}

/** The bars of every target measured without a refusal; a refused or missing run has none. */
function throughputBars(results: ScenarioResult[]): Bar[] {
	return results.flatMap(({ scenario, runs }) =>
		TARGETS.flatMap(run => {
			const measured = runs[run];
			if (!measured || measured.failures) return [];
			const ceiling = runs.ceiling && !runs.ceiling.failures ? runs.ceiling.rps : undefined;
			const share = run !== "ceiling" && ceiling ? ` (${((measured.rps / ceiling) * 100).toFixed(0)}%)` : "";
			return [{ scenario: scenario.name, run, rps: measured.rps, label: `${wholeNumber(measured.rps)}${share}` }];
		}),
	);
}

/** What the chart leaves out, for its subtitle: the runs that were refused or not made. */
function missing(results: ScenarioResult[]): string[] {
	return results.flatMap(({ scenario, runs }) =>
		TARGETS.flatMap(run =>
			!runs[run] ? [`${run} ${scenario.name} not run`] : runs[run].failures ? [`${run} ${scenario.name} FAILED`] : [],
		),
	);
}

function throughputSpec(results: ScenarioResult[]): TopLevelSpec {
	const left = missing(results);
	return {
		$schema: "https://vega.github.io/schema/vega-lite/v6.json",
		title: {
			text: "Requests per second, per scenario",
			subtitle: [
				"2xx answers only; in brackets, the share of the bare node:http ceiling",
				...(left.length > 0 ? [`Not drawn: ${left.join("; ")}`] : []),
			],
			anchor: "start",
		},
		config: CONFIG,
		width: 520,
		height: { step: 18 },
		data: { values: throughputBars(results) },
		encoding: {
			y: {
				field: "scenario",
				type: "nominal",
				sort: results.map(({ scenario }) => scenario.name),
				title: null,
				axis: { labelLimit: 300 },
			},
			yOffset: { field: "run", type: "nominal", sort: [...TARGETS] },
			x: { field: "rps", type: "quantitative", title: "requests per second", axis: { format: ",d" } },
			color: { field: "run", type: "nominal", title: null, scale: colour(TARGETS), sort: [...TARGETS] },
		},
		layer: [
			{ mark: { type: "bar", height: { band: 1 } } },
			{
				mark: { type: "text", align: "left", dx: 3, fontSize: 10 },
				encoding: { text: { field: "label" }, color: { value: "#333" } },
			},
		],
	};
}

/** A point of the growth chart: one measure of one target at one catalogue size. */
interface GrowthPoint {
	panel: "latency" | "throughput";
	series: string;
	run: TargetName;
	games: number;
	value: number;
	label: string;
}

const LATENCY = [
	["meanMs", "GET /game, cached"],
	["coldMs", "GET /game, computed"],
] as const;
const WRITES = [
	["createRps", "PUT /game (create)"],
	["updateRps", "PUT /game/{id} (update)"],
] as const;

/** Each panel's measures of a growth step, and how a point of it is labelled. */
const PANELS = [
	{ panel: "latency", measures: LATENCY, label: (value: number) => `${value.toFixed(0)} ms` },
	{ panel: "throughput", measures: WRITES, label: wholeNumber },
] as const;

/** Every measure a growth step has; a step that failed before measuring gives none. */
function growthPoints(growth: GrowthResult[]): GrowthPoint[] {
	return growth.flatMap(step =>
		PANELS.flatMap(({ panel, measures, label }) =>
			measures.flatMap(([key, series]) => {
				const value = step[key];
				return value === undefined ? [] : [{ panel, series, run: step.target, games: step.games, value, label: label(value) }];
			}),
		),
	);
}

/**
 * One panel: a line per target and measure over the catalogue sizes, each point labelled. The
 * latencies are on a log scale: a cached list answers in milliseconds, a computed one in seconds.
 */
function growthPanel(
	panel: GrowthPoint["panel"],
	title: string,
	axis: string,
	targets: TargetName[],
	series: readonly string[],
	logTicks?: number[],
) {
	return {
		title,
		width: 300,
		height: 240,
		transform: [{ filter: { field: "panel", equal: panel } }],
		encoding: {
			x: { field: "games", type: "ordinal" as const, title: "games in the catalogue", axis: { format: ",d", labelAngle: 0 } },
			y: {
				field: "value",
				type: "quantitative" as const,
				title: axis,
				axis: { format: ",~r", ...(logTicks && { values: logTicks }) },
				scale: logTicks ? { type: "log" as const } : { zero: true },
			},
			color: { field: "run", type: "nominal" as const, title: null, scale: colour(targets), sort: targets },
			detail: { field: "series", type: "nominal" as const },
		},
		layer: [
			{
				mark: { type: "line" as const },
				encoding: { strokeDash: { field: "series", type: "nominal" as const, title: null, sort: [...series] } },
			},
			{
				mark: { type: "point" as const, filled: true, size: 40 },
				encoding: { shape: { field: "series", type: "nominal" as const, title: null, sort: [...series] } },
			},
			{
				mark: { type: "text" as const, align: "left" as const, dx: 6, dy: -6, fontSize: 10 },
				encoding: { text: { field: "label", type: "nominal" as const } },
			},
		],
	};
}

/** The powers of ten from below the smallest value to above the largest: the log axis's ticks. */
function decades(values: number[]): number[] {
	const low = Math.floor(Math.log10(Math.min(...values)));
	const high = Math.ceil(Math.log10(Math.max(...values)));
	return Array.from({ length: high - low + 1 }, (_, i) => 10 ** (low + i));
}

function growthSpec(growth: GrowthResult[]): TopLevelSpec {
	const points = growthPoints(growth);
	const targets = TARGETS.filter(name => growth.some(step => step.target === name));
	const failed = growth
		.filter(step => step.error)
		.map(step => `${step.target}${step.games > 0 ? ` at ${wholeNumber(step.games)} games` : ""}: ${step.error}`);
	return {
		$schema: "https://vega.github.io/schema/vega-lite/v6.json",
		title: {
			text: "Cost against the catalogue's size",
			subtitle: [
				"The whole game list's mean latency, and the writes per second, at each size",
				...failed.map(line => `Failed: ${line.slice(0, 120)}`),
			],
			anchor: "start",
		},
		config: CONFIG,
		data: { values: points },
		hconcat: [
			growthPanel(
				"latency",
				"GET /game: mean latency",
				"ms per request (log scale)",
				targets,
				LATENCY.map(([, name]) => name),
				decades(points.filter(point => point.panel === "latency").map(point => point.value)),
			),
			growthPanel(
				"throughput",
				"Writes per second",
				"requests per second",
				targets,
				WRITES.map(([, name]) => name),
			),
		],
		resolve: { scale: { y: "independent", strokeDash: "independent", shape: "independent" } },
	};
}

/** A vega-lite spec rendered to SVG text. vega is ESM with a top-level await: import(), not require. */
async function render(spec: TopLevelSpec): Promise<string> {
	const [vega, vegaLite] = await Promise.all([import("vega"), import("vega-lite")]);
	const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: "none" });
	try {
		return await view.toSVG();
	} finally {
		view.finalize();
	}
}

/** The throughput chart (docs/images/throughput.svg); undefined when no scenario was measured. */
export async function throughputChart(results: ScenarioResult[]): Promise<string | undefined> {
	return throughputBars(results).length === 0 ? undefined : render(throughputSpec(results));
}

/** The growth chart (docs/images/growth.svg); undefined when no growth step was measured. */
export async function growthChart(growth: GrowthResult[]): Promise<string | undefined> {
	return growthPoints(growth).length === 0 ? undefined : render(growthSpec(growth));
}

/** Writes both charts into `folder` (made if missing); one line per chart, saying where or why not. */
export async function writeCharts(folder: string, results: ScenarioResult[], growth: GrowthResult[]): Promise<string[]> {
	const charts: [string, string | undefined, string][] = [
		["throughput.svg", await throughputChart(results), "no scenario was measured"],
		[
			"growth.svg",
			await growthChart(growth),
			growth.length === 0 ? "growth was not run (BENCH_GROWTH empty)" : "no growth step was measured",
		],
	];
	return charts.map(([name, svg, why]) => {
		if (svg === undefined) return `chart ${name} not drawn: ${why}`;
		mkdirSync(folder, { recursive: true });
		const file = path.join(folder, name);
		writeFileSync(file, svg);
		return `chart written to ${file}`;
	});
}
