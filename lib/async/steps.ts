import { setImmediate as nextTurn } from "node:timers/promises";

/**
 * `items` in slices of `size`, with a turn of the event loop between two slices: work over a long
 * list (the JSON of 100,000 games, a data file's records) done a slice at a time leaves the loop
 * free to answer other requests between slices.
 */
export async function* inSteps<T>(items: readonly T[], size: number): AsyncGenerator<T[]> {
	for (let from = 0; from < items.length; from += size) {
		if (from > 0) await nextTurn();
		yield items.slice(from, from + size);
	}
}
