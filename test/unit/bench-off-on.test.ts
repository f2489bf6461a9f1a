import type { OffOnCost } from "../../bench/compare";
import type { Measurement } from "../../bench/measure";
import { accessCostTable, feedCostTable } from "../../bench/table";

// How bench/compare.ts's runs of a setting off and on are reported (docs/performance.md, "The change feed" and "The broker's access
// rules"): the median of each side's starts, the on side's share of the off side, and the verdict against the target, if any.

const run = (rps: number, cpuMs = 0): Measurement => ({ rps, p50: 1, p99: 2, requests: rps * 10, per1000: { "cpu api": cpuMs } });
const refused: Measurement = { ...run(3), failures: { non2xx: 5, errors: 0, timeouts: 0 } };

const cost = (off: Measurement[], on: Measurement[]): OffOnCost => ({ target: "distributed", scenario: "PUT /game", off, on });
const row = (table: { rows: string[][] }, index = 1) =>
	Object.fromEntries(table.rows[0].map((header, i) => [header, table.rows[index][i]]));

test("each side is the median of its starts, so one start far off the others does not move it", () => {
	const table = accessCostTable([cost([run(1000), run(1100), run(100), run(1050)], [run(900), run(950), run(5000), run(925)])]);
	expect(row(table)).toMatchObject({ "rules off rps": "1,025", "rules on rps": "938", "on / off": "91.5%" });
	expect(row(table)["each start"]).toBe("off 1,000, off 1,100, off 100, off 1,050, on 900, on 950, on 5,000, on 925");
});

test("the access rules have no target: their share is measured, not judged", () => {
	expect(row(accessCostTable([cost([run(1000)], [run(500)])]))).toMatchObject({ Target: "none", Result: "measured" });
});

test("the change feed is judged against its target of 80% of the writes without it", () => {
	expect(row(feedCostTable([cost([run(1000)], [run(800)])]))).toMatchObject({ Target: "≥ 80.0% of off", Result: "PASS" });
	expect(row(feedCostTable([cost([run(1000)], [run(799)])]))).toMatchObject({ Result: "MISS" });
});

test("a side with a refused run is not compared, and the refusal is the result", () => {
	const table = accessCostTable([cost([run(1000), refused], [run(900)])]);
	expect(row(table)).toMatchObject({ "rules off rps": "—", "on / off": "", Result: expect.stringMatching(/^FAILED: 5 non-2xx/) });
});

test("the CPU of all processes per 1,000 requests, each side's median, and off's share of on", () => {
	const table = accessCostTable([cost([run(1000, 40), run(1000, 60)], [run(900, 100)])]);
	expect(row(table)).toMatchObject({ "CPU ms per 1,000 requests, off / on": "50 / 100", "off / on CPU": "50.0%" });
});
