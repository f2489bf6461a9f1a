import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { runsWith } from "./not-run";

/** Debian's chromium (`apt-get install chromium`; .ci/run installs it), or CHROMIUM_PATH. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

// Without the background-networking flags Chromium calls Google's servers, which this closed
// network refuses, and logs errors. playwright-core gives it a fresh temporary profile itself.
const CHROMIUM_ARGS = [
	"--headless",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
];

/** Whether Chromium is here for `suite`'s tests; without it the suite says so loudly, and fails under CI=true. */
export const chromiumRuns = (suite: string, name: string) =>
	runsWith(existsSync(CHROMIUM), {
		notRun: `${suite} NOT RUN: no Chromium at ${CHROMIUM}`,
		hint: "Install it (Debian: apt-get install chromium) or set CHROMIUM_PATH.",
		name,
	});

export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 20_000 });
