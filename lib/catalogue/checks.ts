/**
 * Runs independent checks at once and, when any fails, throws the failure that comes first in
 * the order given, so the answer does not depend on which check happened to finish first.
 */
export async function firstFailure(checks: Promise<unknown>[]): Promise<void> {
	const results = await Promise.allSettled(checks);
	const failed = results.find(result => result.status === "rejected");
	if (failed) throw failed.reason;
}
