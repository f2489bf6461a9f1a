import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Redis } from "ioredis";
import { ServiceBroker } from "moleculer";
import { cacherOptions } from "../lib/cache/cache";
import type { RedisAnswers } from "../lib/cache/redis-cacher";

/**
 * What reading the generations costs a distributed read (docs/caching.md): the gateway's lookup
 * (one script that reads the generations, makes the key and answers the kept JSON) against a
 * plain GET of the same bytes, what a cache that trusted the writes' broadcasts would send.
 * Both from this process, `connections` at a time, against the Redis of the distributed run.
 */
export interface LookupCost {
	/** The answer looked up: a scenario's, by its size. */
	name: string;
	bytes: number;
	lookup: Rate;
	get: Rate;
}

interface Rate {
	perSecond: number;
	/** Mean time of one, in microseconds. */
	meanUs: number;
}

/** `op` run `connections` at a time for `seconds`. */
async function rate(op: () => Promise<unknown>, seconds: number, connections: number): Promise<Rate> {
	let done = 0;
	let busy = 0;
	const until = performance.now() + seconds * 1000;
	const loop = async () => {
		while (performance.now() < until) {
			const started = performance.now();
			await op();
			busy += performance.now() - started;
			done++;
		}
	};
	await Promise.all(Array.from({ length: connections }, loop));
	return { perSecond: done / seconds, meanUs: (busy / done) * 1000 };
}

export async function lookupCost(
	redisUrl: string,
	answers: { name: string; bytes: number }[],
	seconds: number,
	connections: number,
): Promise<LookupCost[]> {
	const broker = new ServiceBroker({
		logger: false,
		namespace: `bench-lookup-${randomUUID()}`,
		cacher: cacherOptions({ redisUrl, transporter: null, cacheMaxBytes: 0 }),
	});
	await broker.start();
	const cacher = broker.cacher as RedisAnswers;
	const client = cacher.client as unknown as Redis;
	const keys: string[] = [];
	try {
		await cacher.checkEpoch();
		const costs: LookupCost[] = [];
		for (const { name, bytes } of answers) {
			const json = Buffer.alloc(bytes, "x");
			const from = ["games", "authors", "categories"];
			const { key } = (await cacher.lookup(name, from, null))!;
			await cacher.keep(key, { json });
			const plain = `${key}:plain`;
			await client.set(plain, json, "EX", 600);
			keys.push(key, plain);
			const lookup = await rate(() => cacher.lookup(name, from, { encoding: null, held: [] }), seconds, connections);
			const get = await rate(() => client.getBuffer(plain), seconds, connections);
			costs.push({ name, bytes, lookup, get });
		}
		return costs;
	} finally {
		if (keys.length > 0) await client.del(keys);
		await broker.stop();
	}
}

/** One line per answer: both rates and what the lookup costs over the GET. */
export const describeLookupCosts = (costs: LookupCost[]) =>
	costs.map(
		({ name, bytes, lookup, get }) =>
			`${name} (${bytes.toLocaleString("en-US")} B): lookup ${Math.round(lookup.perSecond).toLocaleString("en-US")}/s, ` +
			`${lookup.meanUs.toFixed(0)} µs; plain GET ${Math.round(get.perSecond).toLocaleString("en-US")}/s, ${get.meanUs.toFixed(0)} µs: ` +
			`the lookup takes ${((lookup.meanUs / get.meanUs - 1) * 100).toFixed(0)}% longer (${(lookup.meanUs - get.meanUs).toFixed(0)} µs)`,
	);
