/** The seed CI uses, so that a red build replays as it failed. */
const CI_SEED = 20_240_607;

/** FUZZ_SEED when given; under CI a fixed seed; else a new one each time (printed, to replay). */
export function fuzzSeed(): number {
	if (process.env.FUZZ_SEED) {
		const given = Number(process.env.FUZZ_SEED);
		if (!Number.isSafeInteger(given)) throw new Error(`FUZZ_SEED must be an integer; got "${process.env.FUZZ_SEED}"`);
		return given;
	}
	return process.env.CI ? CI_SEED : Math.floor(Math.random() * 0x7fffffff);
}

/** FUZZ_RUNS when given, else `runs`: how many cases a property tries. */
export function fuzzRuns(runs: number): number {
	const given = Number(process.env.FUZZ_RUNS || runs);
	if (!Number.isInteger(given) || given < 1) throw new Error(`FUZZ_RUNS must be a positive whole number; got "${process.env.FUZZ_RUNS}"`);
	return given;
}
