import path from "node:path";

/** What the benchmark reads from the environment, checked once before anything starts. */
export interface BenchConfig {
	/** The main data set: categories, authors and games seeded through the HTTP API. */
	categories: number;
	authors: number;
	games: number;
	/** Seconds of each measured run, and of the warm-up before it. */
	durationS: number;
	warmupS: number;
	/** Connections the load generator keeps open during a run. */
	connections: number;
	/** The game counts the growth runs reach, ascending; empty skips them. */
	growth: number[];
	/** Seconds of `GET /game` requests, one at a time, at each growth step. */
	growthS: number;
	/** Requests in flight while games are seeded for a growth step. */
	seedConcurrency: number;
	/** `REDIS_URL` as given; the distributed run probes for a local Redis when it is unset. */
	redisUrl: string | undefined;
	/** Only the scenarios whose names contain one of these (`BENCH_ONLY`, comma-separated); all when empty. */
	only: string[];
	/** A folder for a CPU profile of every catalogue process (`BENCH_PROFILE`); none when unset. */
	profileDir: string | undefined;
	/** Where the two charts are written (`BENCH_CHARTS`; default docs/images, which docs/performance.md shows). */
	chartsDir: string;
	/** Whether the change feed's cost and delay are measured (`BENCH_FEED`, `on` or `off`, default on). */
	feed: boolean;
	/** Whether the broker's access rules' cost is measured (`BENCH_ACCESS`, `on` or `off`, default on). */
	access: boolean;
}

export class BenchConfigError extends Error {}

function whole(name: string, fallback: number, min: number, max: number): number {
	const value = process.env[name];
	if (value === undefined || value.trim() === "") return fallback;
	const number = Number(value);
	if (!Number.isInteger(number) || number < min || number > max)
		throw new BenchConfigError(`${name} must be a whole number from ${min} to ${max}; got "${value}"`);
	return number;
}

/** "1000,10000,100000" to [1000, 10000, 100000]; "" to none. */
function growthSteps(value: string | undefined): number[] {
	const items = (value ?? "1000,10000,100000")
		.split(",")
		.map(item => item.trim())
		.filter(Boolean);
	const steps = items.map(item => {
		const number = Number(item);
		if (!Number.isInteger(number) || number < 1 || number > 10_000_000)
			throw new BenchConfigError(`BENCH_GROWTH must list game counts from 1 to 10000000, comma-separated; got "${value}"`);
		return number;
	});
	return [...new Set(steps)].sort((a, b) => a - b);
}

function onOrOff(name: string): boolean {
	const value = process.env[name] || "on";
	if (value !== "on" && value !== "off") throw new BenchConfigError(`${name} must be on or off; got "${value}"`);
	return value === "on";
}

export function readConfig(): BenchConfig {
	return {
		categories: whole("BENCH_CATEGORIES", 10, 1, 1000),
		authors: whole("BENCH_AUTHORS", 50, 1, 1000),
		games: whole("BENCH_GAMES", 200, 1, 100_000),
		durationS: whole("BENCH_DURATION", 10, 1, 600),
		warmupS: whole("BENCH_WARMUP", 2, 0, 60),
		connections: whole("BENCH_CONNECTIONS", 10, 1, 1000),
		growth: growthSteps(process.env.BENCH_GROWTH),
		growthS: whole("BENCH_GROWTH_DURATION", 5, 1, 600),
		seedConcurrency: whole("BENCH_SEED_CONCURRENCY", 24, 1, 128),
		redisUrl: process.env.REDIS_URL || undefined,
		only: (process.env.BENCH_ONLY ?? "")
			.split(",")
			.map(name => name.trim())
			.filter(Boolean),
		profileDir: process.env.BENCH_PROFILE ? path.resolve(process.env.BENCH_PROFILE) : undefined,
		// dist/bench/config.js: the repository is two folders up.
		chartsDir: path.resolve(process.env.BENCH_CHARTS || path.join(__dirname, "../../docs/images")),
		feed: onOrOff("BENCH_FEED"),
		access: onOrOff("BENCH_ACCESS"),
	};
}
