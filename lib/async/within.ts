/**
 * `promise`, or a rejection (`no answer within <ms> ms`) once `ms` have passed: for a server (Redis, NATS)
 * whose client would otherwise wait as long as it reconnects.
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)));
	try {
		return await Promise.race([promise, late]);
	} finally {
		clearTimeout(timer);
	}
}
