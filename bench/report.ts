import { writeFileSync } from "node:fs";
import path from "node:path";
import { hideCredentials } from "../lib/config/uris";
import type { BenchConfig } from "./config";
import type { Machine, Pinning } from "./machine";
import { accepts } from "./processes";
import type { Scenario } from "./scenarios";
import { ROOT } from "./servers";
import type { OffOnCost } from "./compare";
import type { FeedResults } from "./feed";
import {
	asMarkdown,
	capacityTable,
	accessCostTable,
	feedCostTable,
	feedDelayTable,
	growthTable,
	mainTable,
	type GrowthResult,
	type ScenarioResult,
} from "./table";

/** The cache the distributed run is given, and the line that says so. */
export interface CacheChoice {
	redisUrl: string | undefined;
	note: string;
}

/**
 * REDIS_URL as given; otherwise the local Redis when one accepts connections; otherwise none, and
 * a cluster without REDIS_URL caches nothing (docs/caching.md).
 */
export async function chooseCache(given: string | undefined): Promise<CacheChoice> {
	if (given) return { redisUrl: given, note: `Redis from REDIS_URL, ${hideCredentials(given)}` };
	if (await accepts(6379))
		return {
			redisUrl: "redis://127.0.0.1:6379",
			note: "Redis at redis://127.0.0.1:6379 (REDIS_URL unset; this one accepts connections)",
		};
	return { redisUrl: undefined, note: "none: REDIS_URL unset and nothing accepts on 127.0.0.1:6379" };
}

/** What the numbers depend on, as `label: value` lines. */
export function settings(machine: Machine, pinning: Pinning, config: BenchConfig, cache: CacheChoice, all: Scenario[]): [string, string][] {
	return [
		["CPU", `${machine.cpu}, ${machine.cores} cores`],
		["Node", machine.node],
		["Date", machine.date],
		["Pinning", pinning.note],
		[
			"Data set",
			`${config.categories} categories, ${config.authors} authors, ${config.games} games, in SQLite (npm start's default), the access log on`,
		],
		["Runs", `${config.durationS} s measured after ${config.warmupS} s of warm-up, ${config.connections} connections (autocannon)`],
		["Embedded cache", "memory (the default: no REDIS_URL)"],
		["Distributed cache", cache.note],
		...all.map((scenario): [string, string] => [scenario.name, scenario.detail]),
	];
}

/** What a run measured beside the main table, each part when it was run. */
export interface Extras {
	feed?: FeedResults;
	access?: OffOnCost[];
	growth?: GrowthResult[];
}

/**
 * Writes bench/results.md (settings, the main table and, when run, the change feed's, the access rules' and the growth tables);
 * returns its path.
 */
export function writeResults(lines: [string, string][], results: ScenarioResult[], { feed, access, growth = [] }: Extras = {}): string {
	const file = path.join(ROOT, "bench/results.md");
	const parts = [
		"# Benchmark results",
		lines.map(([label, value]) => `- ${label}: ${value}`).join("\n"),
		asMarkdown(mainTable(results)),
		"## Capacity: CPU per 1,000 requests, NATS and Redis per request",
		asMarkdown(capacityTable(results)),
		...(feed
			? [
					"## The change feed: writes with it off and on, and the delay to a follower",
					asMarkdown(feedCostTable(feed.costs)),
					asMarkdown(feedDelayTable(feed.delays)),
				]
			: []),
		...(access
			? ["## The broker's access rules: the distributed catalogue with NATS_ACCESS off and on", asMarkdown(accessCostTable(access))]
			: []),
		...(growth.length > 0 ? ["## Growth: `GET /game` over more games", asMarkdown(growthTable(growth))] : []),
	];
	writeFileSync(file, parts.join("\n\n") + "\n");
	return file;
}
