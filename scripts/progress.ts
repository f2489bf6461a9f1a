import { Presets, SingleBar } from "cli-progress";

/**
 * A progress bar on stderr (stdout may be an export): drawn in place on a terminal, and
 * otherwise a plain line every few seconds, as cli-progress writes them for logs and CI.
 */
export function progressBar(what: string): SingleBar {
	return new SingleBar(
		{
			format: `${what} [{bar}] {percentage}% | {value}/{total} records | {duration_formatted}`,
			stream: process.stderr,
			noTTYOutput: !process.stderr.isTTY,
			notTTYSchedule: 5000,
			hideCursor: true,
		},
		Presets.shades_classic,
	);
}

/** Seconds since `start`, for a summary. */
export const secondsSince = (start: number) => `${((Date.now() - start) / 1000).toFixed(1)} s`;
