import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/**
 * Jest's global setup: every temporary file of the run, the test processes' and the servers and catalogues they start, goes
 * under one folder of its own (`TMPDIR`, which the workers and their children inherit), removed by tmp-teardown.ts when the run
 * ends. A file removed on a worker's `exit` would stay: Jest ends its workers without running those listeners.
 */
export default function setup() {
	process.env.CATALOGUE_TEST_TMP = process.env.TMPDIR = mkdtempSync(path.join(tmpdir(), "catalogue-tests-"));
}
