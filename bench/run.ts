import { writeCharts } from "./charts";
import { BenchConfigError, readConfig, type BenchConfig } from "./config";
import { compareOffOn } from "./compare";
import { measureFeed } from "./feed";
import { grow } from "./growth";
import { describeError } from "./http";
import { describeMachine, pinLoadGenerator, type Pinning } from "./machine";
import { measure, type RunOptions } from "./measure";
import { describeLookupCosts, lookupCost } from "./lookup";
import { killAll } from "./processes";
import { chooseCache, settings, writeResults, type CacheChoice, type Extras } from "./report";
import { capture, scenarios, type Route, type Scenario } from "./scenarios";
import { seed } from "./seed";
import { loopDelay, startCeiling, startDistributed, startEmbedded, type Target } from "./servers";
import { usageProbe } from "./usage";
import {
	asMarkdown,
	accessCostTable,
	asText,
	capacityTable,
	feedCostTable,
	feedDelayTable,
	growthTable,
	mainTable,
	refusal,
	type GrowthResult,
	type ScenarioResult,
} from "./table";

// `npm run bench`: the ceiling, the embedded catalogue and the distributed one, side by side
// (bench/README.md). Exits 1 when a scenario was refused or a target could not be measured.

const log = (line = "") => console.log(line);

/**
 * What the access rules are measured on: calls through the gateway to games alone (a page), and writes, which add games' calls of
 * authors and categories (docs/performance.md, "The broker's access rules").
 */
const ACCESS_SCENARIOS = ["POST /game (page)", "PUT /game/{id}", "Mixed: 90% reads, 10% updates", "PUT /game"];

/** The size of what the catalogue answers to the scenario's first request. */
function answerBytes(routes: Route[], scenario: Scenario): number {
	const [{ method = scenario.method, path }] = [scenario.requests[0]].flat();
	return routes.find(route => route.method === method && route.path === path)?.answer.body.length ?? 0;
}

/** The scenarios BENCH_ONLY names, or all. */
const chosen = (all: Scenario[], { only }: BenchConfig) =>
	only.length === 0 ? all : all.filter(scenario => only.some(name => scenario.name.includes(name)));

/** Runs every scenario against `target`; `all[i]` is the target's own request for `results[i]`. */
async function measureEach(target: Target, all: Scenario[], results: ScenarioResult[], options: RunOptions, redisUrl?: string) {
	const usage = usageProbe(target, redisUrl);
	try {
		await measureAll(target, all, results, { ...options, loop: () => loopDelay(target), usage: () => usage.read() });
	} finally {
		usage.close();
	}
}

async function measureAll(target: Target, all: Scenario[], results: ScenarioResult[], options: RunOptions) {
	for (const [i, scenario] of all.entries()) {
		const measured = await measure(target.base, scenario, options);
		results[i].runs[target.name] = measured;
		const loop = measured.loop ? `, loop max ${measured.loop.maxMs.toFixed(1)} ms (${measured.loop.process})` : "";
		const numbers = `${Math.round(measured.rps)} rps, p50 ${measured.p50.toFixed(2)} ms, p99 ${measured.p99.toFixed(2)} ms${loop}`;
		log(`  ${target.name.padEnd(11)} ${scenario.name}: ${refusal(measured) ?? numbers}`);
	}
}

/** Starts one target, hands it to `use`, and stops it whatever happens. */
async function using<T>(start: () => Promise<Target>, use: (target: Target) => Promise<T>): Promise<T> {
	const target = await start();
	try {
		return await use(target);
	} finally {
		await target.stop();
	}
}

async function main(): Promise<number> {
	const config = readConfig();
	const machine = describeMachine();
	const pinning = pinLoadGenerator();
	const cache = await chooseCache(config.redisUrl);
	const options: RunOptions = { durationS: config.durationS, warmupS: config.warmupS, connections: config.connections };
	const problems: string[] = [];

	log("embedded: starting, seeding through HTTP");
	const { all, routes, results } = await using(
		() => startEmbedded(pinning, config.profileDir),
		async embedded => {
			const measured = chosen(scenarios(await seed(embedded.base, config, config.seedConcurrency), config.connections), config);
			const answers = await capture(embedded.base, measured);
			const rows: ScenarioResult[] = measured.map(scenario => ({ scenario, answerBytes: answerBytes(answers, scenario), runs: {} }));
			const lines = settings(machine, pinning, config, cache, measured);
			log(lines.map(([label, value]) => `${label}: ${value}`).join("\n"));
			await measureEach(embedded, measured, rows, options);
			return { all: measured, routes: answers, results: rows };
		},
	);

	log("ceiling: starting");
	await using(
		() => startCeiling(pinning, routes),
		ceiling => measureEach(ceiling, all, results, options),
	).catch(err => problems.push(`ceiling: ${describeError(err)}`));

	log("distributed: starting nats-server and four nodes, seeding through HTTP");
	await using(
		() => startDistributed(pinning, cache.redisUrl, config.profileDir),
		async distributed => {
			const own = chosen(scenarios(await seed(distributed.base, config, config.seedConcurrency), config.connections), config);
			const ownRoutes = await capture(distributed.base, own);
			for (const [i, scenario] of own.entries())
				if (answerBytes(ownRoutes, scenario) !== results[i].answerBytes)
					log(
						`  note: distributed ${scenario.name} answers ${answerBytes(ownRoutes, scenario)} B, embedded ${results[i].answerBytes} B`,
					);
			await measureEach(distributed, own, results, options, cache.redisUrl);
		},
	).catch(err => problems.push(`distributed: ${describeError(err)}`));

	const lines = settings(machine, pinning, config, cache, all);
	if (cache.redisUrl) {
		// Beside the distributed reads: what reading the generations in each lookup costs them (docs/caching.md).
		const sizes = ["GET /game", "GET /author"].flatMap(name => {
			const row = results.find(({ scenario }) => scenario.name === name);
			return row ? [{ name, bytes: row.answerBytes }] : [];
		});
		await lookupCost(cache.redisUrl, sizes, Math.min(config.durationS, 5), config.connections).then(
			costs => lines.push(...describeLookupCosts(costs).map((line): [string, string] => ["Redis lookup", line])),
			err => problems.push(`Redis lookup: ${describeError(err)}`),
		);
	}
	log(`\n${lines.map(([label, value]) => `${label}: ${value}`).join("\n")}\n\n${asText(mainTable(results))}\n`);
	log(`${asMarkdown(mainTable(results))}\n`);
	log(`${asText(capacityTable(results))}\n\n${asMarkdown(capacityTable(results))}\n`);
	const extras: Extras = {};
	log(`written to ${writeResults(lines, results, extras)}`);

	if (config.feed) {
		log("\nchange feed: each layout with CHANGE_FEED=off, then on");
		const feed = (extras.feed = await measureFeed(config, pinning, cache.redisUrl, options, log));
		for (const table of [feedCostTable(feed.costs), feedDelayTable(feed.delays)]) log(`\n${asText(table)}\n\n${asMarkdown(table)}\n`);
		problems.push(...feed.errors.map(error => `change feed: ${error}`));
		log(`written to ${writeResults(lines, results, extras)}`);
	}

	if (config.access) {
		log("\nthe broker's access rules: the distributed catalogue with NATS_ACCESS=off, then on");
		const { costs, errors } = await compareOffOn(
			{
				setting: "NATS_ACCESS",
				target: "distributed",
				start: side => startDistributed(pinning, cache.redisUrl, undefined, {}, side === "on"),
				scenarios: seeded => scenarios(seeded, config.connections).filter(({ name }) => ACCESS_SCENARIOS.includes(name)),
			},
			config,
			cache.redisUrl,
			options,
			line => log(`access rules, ${line}`),
		);
		extras.access = costs;
		log(`\n${asText(accessCostTable(costs))}\n\n${asMarkdown(accessCostTable(costs))}\n`);
		problems.push(...errors.map(error => `access rules: ${error}`));
		log(`written to ${writeResults(lines, results, extras)}`);
	}

	const growth = (extras.growth = await measureGrowth(config, pinning, cache));
	if (growth.length > 0) {
		log(`\n${asText(growthTable(growth))}\n\n${asMarkdown(growthTable(growth))}\n`);
		log(`written to ${writeResults(lines, results, extras)}`);
	}
	// The charts of docs/performance.md; a partial run draws what it measured.
	await writeCharts(config.chartsDir, results, growth).then(
		written => written.forEach(line => log(line)),
		err => problems.push(`charts: ${describeError(err)}`),
	);

	for (const problem of problems) log(`FAILED ${problem}`);
	const refused = results.flatMap(({ scenario, runs }) =>
		Object.entries(runs)
			.filter(([, run]) => run.failures)
			.map(([name]) => `${name} ${scenario.name}`),
	);
	if (refused.length > 0) log(`REFUSED (answers other than 2xx): ${refused.join("; ")}`);
	return problems.length > 0 || refused.length > 0 ? 1 : 0;
}

/** Growth of the embedded and the distributed catalogue, each from a fresh start; failures are findings. */
async function measureGrowth(config: BenchConfig, pinning: Pinning, cache: CacheChoice): Promise<GrowthResult[]> {
	if (config.growth.length === 0) return [];
	const growth: GrowthResult[] = [];
	const options = {
		categories: config.categories,
		authors: config.authors,
		steps: config.growth,
		seconds: config.growthS,
		concurrency: config.seedConcurrency,
		connections: config.connections,
	};
	const starts: [Target["name"], () => Promise<Target>][] = [
		["embedded", () => startEmbedded(pinning)],
		["distributed", () => startDistributed(pinning, cache.redisUrl)],
	];
	for (const [name, start] of starts) {
		log(`\ngrowth, ${name}: ${config.growth.map(games => games.toLocaleString("en-US")).join(", ")} games`);
		await using(start, async target => growth.push(...(await grow(target, options, log)))).catch(err => {
			log(`  ${name}: FAILED ${describeError(err)}`);
			growth.push({ target: name, games: 0, memory: [], error: describeError(err) });
		});
	}
	return growth;
}

for (const [signal, code] of [
	["SIGINT", 130],
	["SIGTERM", 143],
] as const)
	process.once(signal, () => {
		log(`\n${signal}: stopping every server`);
		void killAll().finally(() => process.exit(code));
	});

main().then(
	code => killAll().finally(() => process.exit(code)),
	err => {
		console.error(err instanceof BenchConfigError ? err.message : err);
		void killAll().finally(() => process.exit(1));
	},
);
