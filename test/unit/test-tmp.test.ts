import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import setup from "../support/tmp-setup";
import teardown from "../support/tmp-teardown";

// The run's temporary folder (support/tmp-setup.ts): the test processes and what they start write under it, and it goes at the end.

describe("the test run's temporary folder", () => {
	it("holds this worker's temporary files", () => {
		const folder = process.env.CATALOGUE_TEST_TMP!;
		expect(path.basename(folder)).toMatch(/^catalogue-tests-/);
		expect(tmpdir()).toBe(folder);
		expect(existsSync(folder)).toBe(true);
	});

	it("is removed with all it holds by the teardown", () => {
		const saved = { TMPDIR: process.env.TMPDIR, CATALOGUE_TEST_TMP: process.env.CATALOGUE_TEST_TMP };
		setup();
		const folder = process.env.CATALOGUE_TEST_TMP!;
		try {
			expect(path.dirname(folder)).toBe(saved.CATALOGUE_TEST_TMP);
			mkdirSync(path.join(folder, "nats-jetstream-x", "jetstream"), { recursive: true });
			writeFileSync(path.join(folder, "nats-jetstream-x", "jetstream", "meta.inf"), "stream");
			teardown();
			expect(existsSync(folder)).toBe(false);
		} finally {
			rmSync(folder, { recursive: true, force: true });
			for (const [variable, value] of Object.entries(saved))
				if (value === undefined) delete process.env[variable];
				else process.env[variable] = value;
		}
	});
});
