import { windowStart } from "../../lib/http/rate-limit";

/**
 * Waits, when less than `roomMs` is left of the current rate-limit window, for the next one: the
 * windows follow the clock (lib/http/rate-limit.ts), so a test that counts to a client's limit
 * must not run across the end of one.
 */
export async function roomInWindow(windowMs: number, roomMs: number): Promise<void> {
	const left = windowStart(Date.now(), windowMs) + windowMs - Date.now();
	if (left < roomMs) await new Promise(resolve => setTimeout(resolve, left + 10));
}
