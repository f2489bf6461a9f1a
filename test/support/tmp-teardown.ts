import { rmSync } from "node:fs";

/** Jest's global teardown: removes the run's temporary folder (tmp-setup.ts). */
export default function teardown() {
	const folder = process.env.CATALOGUE_TEST_TMP;
	if (folder) rmSync(folder, { recursive: true, force: true });
}
