import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Redis } from "ioredis";
import { ServiceBroker } from "moleculer";
import { cacherOptions } from "../lib/cache/cache";
import type { RedisAnswers } from "../lib/cache/redis-cacher";

/**
 * What reading the generations costs a distributed read (docs/caching.md), from this process,
 * `connections` at a time (each of a different answer, so none joins another), against the Redis
 * of the distributed run: the gateway's lookup (one script that reads the generations, makes the
 * key and answers) when the node holds the current answer already (Redis sends no bytes of it: a
 * hit, as a busy gateway sees it) and when it does not (Redis sends the kept JSON), against a
 * plain GET of the same bytes: what a cache that trusted the writes' broadcasts would cost.
 */
export interface LookupCost {
	/** The answer looked up: a scenario's, by its size. */
	name: string;
	bytes: number;
	held: Rate;
	sent: Rate;
	get: Rate;
}

interface Rate {
	perSecond: number;
	/** Mean time of one, in microseconds. */
	meanUs: number;
}

/** `op` run `connections` at a time for `seconds`, each loop with its number. */
async function rate(op: (loop: number) => Promise<unknown>, seconds: number, connections: number): Promise<Rate> {
	let done = 0;
	let busy = 0;
	const until = performance.now() + seconds * 1000;
	const loop = async (index: number) => {
		while (performance.now() < until) {
			const started = performance.now();
			await op(index);
			busy += performance.now() - started;
			done++;
		}
	};
	await Promise.all(Array.from({ length: connections }, (_, index) => loop(index)));
	return { perSecond: done / seconds, meanUs: (busy / done) * 1000 };
}

/** A node of its own with the shared cache; `cacheMaxBytes` 0 keeps no answer beside Redis. */
async function node(redisUrl: string, namespace: string, cacheMaxBytes: number): Promise<ServiceBroker> {
	const broker = new ServiceBroker({
		logger: false,
		namespace,
		cacher: cacherOptions({ mongoUri: null, redisUrl, transporter: null, cacheMaxBytes }),
	});
	await broker.start();
	await (broker.cacher as RedisAnswers).checkEpoch();
	return broker;
}

export async function lookupCost(
	redisUrl: string,
	answers: { name: string; bytes: number }[],
	seconds: number,
	connections: number,
): Promise<LookupCost[]> {
	const namespace = `bench-lookup-${randomUUID()}`;
	const nodes = [await node(redisUrl, namespace, 64 * 1024 * 1024), await node(redisUrl, namespace, 0)];
	const [holding, sending] = nodes.map(broker => broker.cacher as RedisAnswers);
	const client = holding.client as unknown as Redis;
	const keys: string[] = [];
	try {
		const costs: LookupCost[] = [];
		for (const { name, bytes } of answers) {
			const from = ["games", "authors", "categories"];
			// An answer per loop, each kept: the same lookup asked at once by several is sent once
			// (lib/cache/redis-cacher.ts), and this measures what one lookup costs Redis.
			const names = Array.from({ length: connections }, (_, index) => `${name}#${index}`);
			const json = Buffer.alloc(bytes, "x");
			for (const each of names) {
				const { key } = (await holding.lookup(each, from, null))!;
				await holding.keep(each, key, { json });
				keys.push(key);
			}
			const lookup = (cacher: RedisAnswers) => (index: number) => cacher.lookup(names[index], from, { encoding: null, held: [] });
			const plain = `${keys.at(-1)}:plain`;
			await client.set(plain, json, "EX", 600);
			keys.push(plain);
			const held = await rate(lookup(holding), seconds, connections);
			const sent = await rate(lookup(sending), seconds, connections);
			const get = await rate(() => client.getBuffer(plain), seconds, connections);
			costs.push({ name, bytes, held, sent, get });
		}
		return costs;
	} finally {
		if (keys.length > 0) await client.del(keys);
		await Promise.all(nodes.map(broker => broker.stop()));
	}
}

const described = ({ perSecond, meanUs }: Rate) => `${Math.round(perSecond).toLocaleString("en-US")}/s, ${meanUs.toFixed(0)} µs`;

/** One line per answer: the three rates. */
export const describeLookupCosts = (costs: LookupCost[]) =>
	costs.map(
		({ name, bytes, held, sent, get }) =>
			`${name} (${bytes.toLocaleString("en-US")} B): lookup with the answer held ${described(held)}; ` +
			`with the answer sent ${described(sent)}; a plain GET of it ${described(get)}`,
	);
