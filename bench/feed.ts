import { connect, DeliverPolicy } from "nats";
import { CHANGES_STREAM } from "../lib/feed/jetstream";
import { compareOffOn, type OffOnCost, type Side } from "./compare";
import type { BenchConfig } from "./config";
import type { Pinning } from "./machine";
import { measure, percentile, type RunOptions } from "./measure";
import { createScenario, updateScenario, unchanged, type Scenario } from "./scenarios";
import type { Game, Seeded } from "./seed";
import { startDistributed, startEmbedded, type Target } from "./servers";

// What the change feed costs the writes, and how long a follower waits for a write's change (docs/performance.md, "The change
// feed"): each layout started eight times with CHANGE_FEED off and on in turn (compare.ts).

/** The delays from a write's answer to its change at one follower: p50 and p99 of those that arrived, in ms. */
export interface FeedDelay {
	target: Target["name"];
	follower: string;
	/** Whether the update scenario's connections were writing meanwhile. */
	loaded: boolean;
	sent: number;
	arrived: number;
	p50: number;
	p99: number;
}

export interface FeedResults {
	costs: OffOnCost[];
	delays: FeedDelay[];
	errors: string[];
}

/** The feed-on share of the feed-off writes the issue asks for, in both layouts. */
export const FEED_TARGET = 0.8;

/** Writes timed for the delay, one every PROBE_EVERY_MS, each with an X-Request-ID the change carries. */
const PROBES = 200;
const PROBE_EVERY_MS = 50;
/** How long a change may take to reach a follower before it counts as not arrived. */
const ARRIVAL_GRACE_MS = 3000;

/** How long a follower may take to start following, and a probe's write to be answered. */
const FOLLOWER_READY_MS = 10_000;
const WRITE_TIMEOUT_MS = 10_000;

/** Someone following the changes: when each change of a probe arrived, by its request id. */
interface Follower {
	name: string;
	arrivals: Map<string, number>;
	close(): Promise<void>;
}

/** GET /changes through the gateway, as a front end follows it. */
async function sseFollower(base: string): Promise<Follower> {
	const arrivals = new Map<string, number>();
	const abort = new AbortController();
	const response = await fetch(`${base}/changes?kinds=game`, { headers: { Accept: "text/event-stream" }, signal: abort.signal });
	if (response.status !== 200 || !response.body) throw new Error(`GET /changes answered ${response.status}`);
	let ready!: () => void;
	const isReady = new Promise<void>(resolve => (ready = resolve));
	const reading = (async () => {
		const decoder = new TextDecoder();
		let text = "";
		for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
			const at = performance.now();
			text += decoder.decode(chunk, { stream: true });
			const events = text.split("\n\n");
			text = events.pop()!;
			for (const event of events) {
				if (/^event: ready$/m.test(event)) ready();
				const data = /^data: (.*)$/m.exec(event)?.[1];
				const requestId = data && (JSON.parse(data) as { requestId?: string }).requestId;
				if (requestId) arrivals.set(requestId, at);
			}
		}
	})().catch(() => undefined);
	const late = setTimeout(() => abort.abort(), FOLLOWER_READY_MS);
	await Promise.race([
		isReady,
		reading.then(() => Promise.reject(new Error(`GET /changes sent no ready event within ${FOLLOWER_READY_MS} ms`))),
	]);
	clearTimeout(late);
	return {
		name: "GET /changes (SSE)",
		arrivals,
		async close() {
			abort.abort();
			await reading;
		},
	};
}

/** An ordered JetStream consumer of the games' changes, as another service in the cluster follows them. */
async function jetStreamFollower(natsUrl: string): Promise<Follower> {
	const arrivals = new Map<string, number>();
	const connection = await connect({ servers: natsUrl });
	// From now: delivered from the stream's start, it would first go through the scenarios' changes, and the first probes'
	// changes would wait behind them.
	const consumer = await connection
		.jetstream()
		.consumers.get(CHANGES_STREAM, { filterSubjects: "catalogue.changes.game.>", deliver_policy: DeliverPolicy.New });
	const messages = await consumer.consume();
	const reading = (async () => {
		for await (const message of messages) {
			const { requestId } = message.json<{ requestId?: string }>();
			if (requestId) arrivals.set(requestId, performance.now());
		}
	})().catch(() => undefined);
	return {
		name: "JetStream consumer",
		arrivals,
		async close() {
			await messages.close();
			await reading;
			await connection.close();
		},
	};
}

/** PROBES updates of `game`, one every PROBE_EVERY_MS, while `beside` runs (if given): when each was answered, by request id. */
async function probe(base: string, game: Game, label: string, beside?: () => Promise<unknown>): Promise<Map<string, number>> {
	const answered = new Map<string, number>();
	const body = unchanged(game);
	const load = beside?.();
	for (let i = 0; i < PROBES; i++) {
		const due = performance.now() + PROBE_EVERY_MS;
		const requestId = `${label}-${i}`;
		const response = await fetch(`${base}/game/${game.id}`, {
			method: "PUT",
			headers: { "Content-Type": "application/json", "X-Request-ID": requestId },
			body,
			signal: AbortSignal.timeout(WRITE_TIMEOUT_MS),
		});
		await response.arrayBuffer();
		if (response.status === 200) answered.set(requestId, performance.now());
		await new Promise(resolve => setTimeout(resolve, Math.max(0, due - performance.now())));
	}
	await load;
	return answered;
}

/** The delays of `answered` at each follower, once every change has arrived or ARRIVAL_GRACE_MS has passed. */
async function delays(target: Target, followers: Follower[], answered: Map<string, number>, loaded: boolean): Promise<FeedDelay[]> {
	const deadline = performance.now() + ARRIVAL_GRACE_MS;
	while (performance.now() < deadline && followers.some(({ arrivals }) => [...answered.keys()].some(id => !arrivals.has(id))))
		await new Promise(resolve => setTimeout(resolve, 50));
	return followers.map(({ name, arrivals }) => {
		const each = Float64Array.from([...answered].filter(([id]) => arrivals.has(id)).map(([id, at]) => arrivals.get(id)! - at)).sort();
		return {
			target: target.name,
			follower: name,
			loaded,
			sent: PROBES,
			arrived: each.length,
			p50: percentile(each, 0.5),
			p99: percentile(each, 0.99),
		};
	});
}

/** The delays at the target's followers: writes alone, then beside the update scenario's connections. */
async function measureDelays(target: Target, game: Game, update: Scenario, options: RunOptions): Promise<FeedDelay[]> {
	const followers = [await sseFollower(target.base), ...(target.natsUrl ? [await jetStreamFollower(target.natsUrl)] : [])];
	try {
		const alone = await delays(target, followers, await probe(target.base, game, "bench-alone"), false);
		const durationS = Math.ceil((PROBES * PROBE_EVERY_MS) / 1000);
		const beside = () => measure(target.base, update, { ...options, durationS, warmupS: 0 });
		const loaded = await delays(target, followers, await probe(target.base, game, "bench-loaded", beside), true);
		return [...alone, ...loaded];
	} finally {
		await Promise.all(followers.map(follower => follower.close()));
	}
}

/** Each layout with the feed off and then on: the update and create scenarios, and with the feed on the delays. */
export async function measureFeed(
	config: BenchConfig,
	pinning: Pinning,
	redisUrl: string | undefined,
	options: RunOptions,
	log: (line: string) => void,
): Promise<FeedResults> {
	const results: FeedResults = { costs: [], delays: [], errors: [] };
	const layouts: [Target["name"], (feed: Side) => Promise<Target>][] = [
		["embedded", feed => startEmbedded(pinning, undefined, { CHANGE_FEED: feed })],
		["distributed", feed => startDistributed(pinning, redisUrl, undefined, { CHANGE_FEED: feed })],
	];
	// The update scenario's connections each update a game of their own; the probe writes the next one.
	const update = (seeded: Seeded) => updateScenario(seeded.games.slice(0, config.connections));
	for (const [name, start] of layouts) {
		const { costs, errors } = await compareOffOn(
			{
				setting: "CHANGE_FEED",
				target: name,
				start,
				scenarios: seeded => [update(seeded), createScenario(seeded, config.connections)],
				async after(target, seeded, feed, first) {
					if (feed !== "on" || !first) return;
					const probed = seeded.games[Math.min(config.connections, seeded.games.length - 1)];
					const measured = await measureDelays(target, probed, update(seeded), options);
					for (const { follower, loaded, arrived, p50, p99 } of measured)
						log(
							`  ${follower}${loaded ? " beside writes" : ""}: ${arrived}/${PROBES} arrived, p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`,
						);
					results.delays.push(...measured);
				},
			},
			config,
			redisUrl,
			options,
			line => log(`change feed, ${line}`),
		);
		results.costs.push(...costs);
		results.errors.push(...errors);
	}
	return results;
}
