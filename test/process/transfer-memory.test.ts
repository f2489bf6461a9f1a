import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startCluster, type Cluster } from "../support/cluster";
import { recordsOf, runTool, writeSyntheticExport } from "../support/transfer";

/**
 * docs/performance.md, "Export and import": with 100,000 games (a file of 18 MB), the importing and
 * the exporting process each run with V8's heap of long-lived objects capped at 40 MB, which the
 * records of the file would overflow (a process that ran out would end with code 134), and peak
 * less than ABOVE_BASELINE_MB of resident memory above the same tool exporting an empty catalogue in
 * the same run. Each holds a batch of records, and the ids of the file (import's check) or of its
 * categories and authors (export).
 */
const SMALL_HEAP = { NODE_OPTIONS: "--max-old-space-size=40" };
const ABOVE_BASELINE_MB = 128;
const CATALOGUE = { categories: 100, authors: 1000, games: 100_000 };

let cluster: Cluster;
let dir: string;

beforeAll(async () => {
	dir = await mkdtemp(path.join(tmpdir(), "catalogue-transfer-memory-"));
	cluster = await startCluster();
}, 60_000);

afterAll(async () => {
	await cluster?.stop();
	await rm(dir, { recursive: true, force: true });
});

test(`importing and exporting 100,000 games through the cluster, each process within a 40 MB heap and less than ${ABOVE_BASELINE_MB} MB above an empty export; the export is the file imported`, async () => {
	const file = path.join(dir, "100k.jsonl");
	await writeSyntheticExport(file, CATALOGUE);
	const member = cluster.env("");
	const empty = await runTool("export", [path.join(dir, "empty.jsonl")], { env: member });
	expect(empty.code).toBe(0);

	const imported = await runTool("import", [file], { env: { ...member, ...SMALL_HEAP }, timeoutMs: 600_000 });
	expect(imported.output).toMatch(/Read 101100: 101100 created, 0 unchanged, 0 updated, 0 refused/);
	expect(imported.code).toBe(0);

	const exported = path.join(dir, "exported.jsonl");
	const exportRun = await runTool("export", [exported], { env: { ...member, ...SMALL_HEAP }, timeoutMs: 600_000 });
	expect(exportRun.code).toBe(0);
	expect(recordsOf(exported)).toBe(recordsOf(file));

	const mb = (run: { peakMb: number }) => `${run.peakMb.toFixed(0)} MB`;
	const said = (run: { output: string }) => /(Read|Exported) .*/.exec(run.output)?.[0];
	console.log(
		`transfer-memory: peak resident memory: empty export ${mb(empty)}, import ${mb(imported)}, export ${mb(exportRun)}\n${said(imported)}\n${said(exportRun)}`,
	);
	expect(empty.peakMb).toBeGreaterThan(0);
	expect(imported.peakMb - empty.peakMb).toBeLessThan(ABOVE_BASELINE_MB);
	expect(exportRun.peakMb - empty.peakMb).toBeLessThan(ABOVE_BASELINE_MB);
}, 900_000);
