import { DOMParser, type Document, type Element } from "@xmldom/xmldom";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { growthChart, throughputChart, writeCharts } from "../../bench/charts";
import type { Measurement } from "../../bench/measure";
import type { Scenario } from "../../bench/scenarios";
import { growthTable, type GrowthResult, type ScenarioResult } from "../../bench/table";

// vega's ESM entry awaits an optional `canvas` at its top level, which Jest's CommonJS runtime
// cannot load (the benchmark itself loads it with import()). Its UMD builds, shipped in the same
// packages, are the same code in a form Jest can require.
const modules = path.resolve(__dirname, "../../node_modules");
jest.mock("vega", () => jest.requireActual(path.join(modules, "vega/build/vega.js")));
jest.mock("vega-lite", () => jest.requireActual(path.join(modules, "vega-lite/build/vega-lite.min.js")));

const scenario = (name: string): Scenario => ({ name, method: "GET", requests: [{ path: "/" }], embeddedTarget: 0.2, detail: name });
const run = (rps: number): Measurement => ({ rps, p50: 1, p99: 2, requests: rps * 10 });
const refused: Measurement = { ...run(3), failures: { non2xx: 5, errors: 0, timeouts: 0 } };

/** Three scenarios: all measured; the distributed run refused; the distributed run not made. */
const results: ScenarioResult[] = [
	{
		scenario: scenario("GET /game?title&idCategory"),
		answerBytes: 900,
		runs: { ceiling: run(20_000), embedded: run(5_000), distributed: run(2_500) },
	},
	{ scenario: scenario("PUT /game/{id}"), answerBytes: 200, runs: { ceiling: run(18_000), embedded: run(1_800), distributed: refused } },
	{ scenario: scenario("GET /author"), answerBytes: 4_000, runs: { ceiling: run(25_000), embedded: run(10_000) } },
];

const step = (
	target: GrowthResult["target"],
	games: number,
	meanMs: number,
	coldMs: number,
	createRps: number,
	updateRps: number,
): GrowthResult => ({
	target,
	games,
	meanMs,
	coldMs,
	createRps,
	updateRps,
	memory: [],
});
/** Three steps measured in full, one with the list only, one that failed before measuring anything. */
const growth: GrowthResult[] = [
	step("embedded", 10_000, 3, 180, 900, 1_100),
	step("embedded", 100_000, 25, 1_900, 700, 1_000),
	step("distributed", 10_000, 12, 300, 500, 600),
	{ target: "distributed", games: 100_000, meanMs: 120, coldMs: 3_200, memory: [] },
	{ target: "distributed", games: 0, memory: [], error: "seeding failed: 504" },
];

/** The SVG parsed strictly: any XML error throws. */
function parse(svg: string | undefined): Document {
	expect(svg).toBeDefined();
	const document = new DOMParser({
		onError: (level, message) => {
			if (level !== "warning") throw new Error(`not well-formed: ${message}`);
		},
	}).parseFromString(svg!, "image/svg+xml");
	expect(document.documentElement?.tagName).toBe("svg");
	return document;
}

/** The marks vega drew with this role (`bar`, `point`, `line mark`, `text mark`). */
const marks = (document: Document, role: string): Element[] =>
	Array.from(document.getElementsByTagName("*")).filter(element => element.getAttribute("aria-roledescription") === role);

/** Every piece of text the chart shows. */
const texts = (document: Document) => Array.from(document.getElementsByTagName("text")).map(text => text.textContent ?? "");

describe("the benchmark's charts (bench/charts.ts)", () => {
	test("throughput: a bar per target measured in each scenario, labelled with its rps and share of the ceiling", async () => {
		const document = parse(await throughputChart(results));
		// 3 + 2 (the refused run has no bar) + 2 (no distributed run).
		expect(marks(document, "bar")).toHaveLength(7);
		const shown = texts(document);
		for (const result of results) expect(shown).toContain(result.scenario.name);
		expect(shown).toEqual(
			expect.arrayContaining(["20,000", "5,000 (25%)", "2,500 (13%)", "18,000", "1,800 (10%)", "25,000", "10,000 (40%)"]),
		);
		expect(shown.join("\n")).toContain("Not drawn: distributed PUT /game/{id} FAILED; distributed GET /author not run");
	});

	test("throughput: the bars' lengths are in proportion to their rps", async () => {
		const document = parse(await throughputChart(results));
		// vega-lite describes each bar in its aria-label ("requests per second: 5,000; scenario: ...; run: embedded").
		const widths = new Map(
			marks(document, "bar").map(bar => {
				const label = bar.getAttribute("aria-label") ?? "";
				const width = Number(/h(-?[\d.]+)/.exec(bar.getAttribute("d") ?? "")?.[1]);
				return [label.replace(/^requests per second: [\d,.]+; /, ""), width];
			}),
		);
		const ceiling = widths.get("scenario: GET /author; run: ceiling")!;
		const embedded = widths.get("scenario: GET /author; run: embedded")!;
		expect(ceiling).toBeGreaterThan(0);
		expect(embedded / ceiling).toBeCloseTo(10_000 / 25_000, 2);
	});

	test("growth: a point and a label per measure of each step, a line per target and measure, and the failure said", async () => {
		const document = parse(await growthChart(growth));
		// Three full steps (4 measures each) and one with the two latencies only.
		expect(marks(document, "point")).toHaveLength(14);
		// Latency: embedded and distributed, cached and computed; writes: embedded twice, distributed twice (one point each).
		expect(marks(document, "line mark")).toHaveLength(8);
		const shown = texts(document);
		expect(shown).toEqual(expect.arrayContaining(["3 ms", "1900 ms", "3200 ms", "1,100", "500", "600"]));
		expect(shown).toEqual(
			expect.arrayContaining([
				"embedded",
				"distributed",
				"GET /game, cached",
				"GET /game, computed",
				"PUT /game (create)",
				"PUT /game/{id} (update)",
			]),
		);
		expect(shown.join("\n")).toContain("Failed: distributed: seeding failed: 504");
	});

	test("nothing to draw: no chart, and writeCharts says which and why", async () => {
		const refusedOnly: ScenarioResult[] = [{ scenario: scenario("PUT /game"), answerBytes: 0, runs: { embedded: refused } }];
		await expect(throughputChart(refusedOnly)).resolves.toBeUndefined();
		await expect(growthChart([{ target: "embedded", games: 0, memory: [], error: "did not start" }])).resolves.toBeUndefined();

		const folder = mkdtempSync(path.join(tmpdir(), "bench-charts-"));
		try {
			const lines = await writeCharts(path.join(folder, "images"), results, []);
			expect(lines).toEqual([
				`chart written to ${path.join(folder, "images", "throughput.svg")}`,
				"chart growth.svg not drawn: growth was not run (BENCH_GROWTH empty)",
			]);
			expect(marks(parse(readFileSync(path.join(folder, "images", "throughput.svg"), "utf8")), "bar")).toHaveLength(7);
		} finally {
			rmSync(folder, { recursive: true, force: true });
		}
	});
});

describe("the benchmark's growth table (bench/table.ts)", () => {
	test("the loop column gives the delay while lists were made afresh, then over the step; a dash where none was measured", () => {
		const measured: GrowthResult = { target: "embedded", games: 100_000, memory: [], loopMs: 118, listLoopMs: 74 };
		const { rows } = growthTable([measured, { ...measured, listLoopMs: undefined }]);
		const column = rows[0].indexOf("Loop max ms: lists made afresh / whole step");
		expect(rows.slice(1).map(row => row[column])).toEqual(["74.0 / 118.0", "— / 118.0"]);
	});
});
