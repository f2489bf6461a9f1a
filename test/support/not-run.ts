/** The lines that say loudly that a suite did not run, and what would make it run. */
export function notRunBanner(notRun: string, hint: string): string {
	const line = "!".repeat(72);
	return [line, `!!! ${notRun}`, `!!! ${hint}`, line].join("\n");
}

/**
 * For a suite that needs a tool the machine may lack (Chromium, kubectl), called in its
 * `describe`: true when the tool is there. Otherwise the suite is reported skipped with a banner,
 * or, under CI=true, as one failing test named `name`: a suite that cannot run never passes there.
 */
export function runsWith(available: boolean, { notRun, hint, name }: { notRun: string; hint: string; name: string }): boolean {
	if (available) return true;
	if (process.env.CI === "true")
		test(name, () => {
			throw new Error(`${notRun}; under CI=true it must run.`);
		});
	else {
		console.warn(notRunBanner(notRun, hint));
		test.skip(notRun, () => undefined);
	}
	return false;
}
