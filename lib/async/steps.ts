import { setImmediate as nextTurn } from "node:timers/promises";

/** `items` in slices of `size`, with a turn of the event loop between slices so a long list does not hold up other requests. */
export async function* inSteps<T>(items: readonly T[], size: number): AsyncGenerator<T[]> {
	for (let from = 0; from < items.length; from += size) {
		if (from > 0) await nextTurn();
		yield items.slice(from, from + size);
	}
}
