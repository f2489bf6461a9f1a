/**
 * Runs `work` while every turn of the event loop notes what `gauge` reads: how many turns there were (one more after `work` ends,
 * to note its last step), and the most `gauge` grew between two turns.
 */
export async function turnsDuring<T>(
	work: () => Promise<T>,
	gauge: () => number = () => 0,
): Promise<{ result: T; turns: number; most: number }> {
	let turns = 0;
	let most = 0;
	let seen = gauge();
	let turning = true;
	const turn = () => {
		turns++;
		const now = gauge();
		most = Math.max(most, now - seen);
		seen = now;
		if (turning) setImmediate(turn);
	};
	setImmediate(turn);
	try {
		const result = await work();
		await new Promise(resolve => setImmediate(resolve));
		return { result, turns, most };
	} finally {
		turning = false;
	}
}
