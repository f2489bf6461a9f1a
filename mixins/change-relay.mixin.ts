import { setTimeout as sleep } from "node:timers/promises";
import type { ServiceBroker } from "moleculer";
import { outboxStalled } from "../lib/catalogue/errors";
import type { Kind } from "../lib/catalogue/kind";
import { config } from "../lib/config/config";
import { natsConnection } from "../lib/config/transporter";
import { FEED_KINDS, FEED_PAGE, type Change } from "../lib/feed/changes";
import { consumerLags, ensureStream, failureReason, publishChanges, publishReset } from "../lib/feed/jetstream";
import { feedOf } from "../lib/storage/adapter";
import { asMixin, type Row } from "./db.mixin";

/** How often the outbox is read for changes a write did not publish (NATS was away, or the node was killed first). */
const RELAY_EVERY_MS = 1000;

/**
 * The pause before a cycle that writes asked for while one ran: under steady writes each cycle (read the outbox, publish, note the
 * mark) then carries what came in meanwhile, not one change (docs/performance.md, "The change feed").
 */
export const RELAY_GAP_MS = 10;

/** How often each data node reads the lag of the stream's durable consumers, for the metric. */
const LAG_EVERY_MS = 15_000;

/** An outbox whose oldest change waits longer than this has stopped draining: readiness says so. */
const OUTBOX_STALLED_MS = 30_000;

const FEED_METRICS = {
	published: "catalogue.changes.published.total",
	depth: "catalogue.changes.outbox.depth",
	age: "catalogue.changes.outbox.age.seconds",
	lag: "catalogue.changes.consumer.lag",
};

function registerMetrics(broker: ServiceBroker): void {
	if (!broker.metrics.isEnabled() || broker.metrics.getMetric(FEED_METRICS.published)) return;
	const labelNames = ["service"];
	broker.metrics.register({ name: FEED_METRICS.published, type: "counter", labelNames, description: "Changes published to JetStream" });
	broker.metrics.register({ name: FEED_METRICS.depth, type: "gauge", labelNames, description: "Changes not yet published" });
	broker.metrics.register({
		name: FEED_METRICS.age,
		type: "gauge",
		labelNames,
		description: "Age of the oldest change not yet published",
	});
	broker.metrics.register({
		name: FEED_METRICS.lag,
		type: "gauge",
		labelNames: ["consumer"],
		description: "Changes in the JetStream stream that a durable consumer has not acknowledged",
	});
}

export interface ChangeRelayMethods {
	/** Publishes the outbox to the cluster's stream soon: once at a time, and once more if asked meanwhile. */
	relayChanges(): void;
}

/**
 * In a cluster (a NATS transporter), the service's feed is the outbox of the JetStream stream `CATALOGUE_CHANGES`
 * (lib/feed/jetstream.ts): after each recorded write and every second, the changes not yet published are published in order,
 * then noted as published in the store. A crash between the two publishes them again, and JetStream drops them by their id.
 */
/** One service instance's relay: several brokers of one process (tests, an in-process cluster) each have their own. */
interface Relay {
	timer?: NodeJS.Timeout;
	lags?: NodeJS.Timeout;
	running?: Promise<void>;
	again: boolean;
	/** Set when the service stops: no cycle starts after. */
	stopped: boolean;
	/** `set` at the first publish: the stream made or brought to this configuration; `lookedFor` after a failure: made if gone. */
	stream: "set" | "lookedFor" | "made";
	/** Why the last relay failed, until one succeeds; logged once per reason. */
	failure?: string;
	/** When the oldest change not yet published was written; null when none waits. */
	oldestAt: number | null;
}

type RelayMethods = ChangeRelayMethods & {
	relay: Relay;
	relayOnce(): Promise<void>;
	noteOutbox(outbox: Outbox): void;
	noteConsumerLags(): Promise<void>;
};
type Outbox = Awaited<ReturnType<ReturnType<typeof feedOf>["unpublished"]>>;

export function changeRelay(kind: Kind) {
	const labels = { service: kind.service };
	return asMixin<Row, RelayMethods>({
		methods: {
			relayChanges() {
				const { relay } = this;
				// Not before the store is connected: moleculer starts the first-listed mixin, the store, after this one.
				if (!natsConnection(this.broker) || relay.stopped || !this.storeConnected) return;
				if (relay.running) {
					relay.again = true;
					return;
				}
				relay.running = this.relayOnce()
					.then(() => {
						relay.failure = undefined;
					})
					.catch((err: Error) => {
						const reason = failureReason(err);
						// The stream may be gone (deleted, or a NATS started without its store): looked for at the next try, and made
						// again if JetStream has none; one that is there keeps its settings (ensureStream).
						if (relay.stream === "made") relay.stream = "lookedFor";
						if (relay.failure !== reason)
							this.logger.warn(`The ${kind.service} changes are not published to JetStream yet:`, reason);
						relay.failure = reason;
					})
					.finally(() => {
						if (!relay.again) {
							relay.running = undefined;
							return;
						}
						// Still running through the pause: the writes meanwhile only ask for this next cycle.
						relay.running = sleep(RELAY_GAP_MS).then(() => {
							relay.running = undefined;
							relay.again = false;
							this.relayChanges();
						});
					});
			},

			async relayOnce() {
				const { relay } = this;
				const nats = natsConnection(this.broker)!;
				const feed = feedOf(this.adapter);
				for (;;) {
					// Read first: an outbox that cannot be published (no JetStream, NATS away) is seen waiting.
					const outbox = await feed.unpublished(FEED_PAGE);
					this.noteOutbox(outbox);
					if (outbox.changes.length === 0 && outbox.reset === null) return;
					if (relay.stream !== "made") {
						await ensureStream(await nats.jetstreamManager(), config.feedReplicas, relay.stream === "lookedFor");
						relay.stream = "made";
					}
					// A restored backup's feed starts again: its followers are told before any change after it.
					if (outbox.reset !== null) {
						await publishReset(nats, FEED_KINDS[kind.service], outbox.reset, this.broker.namespace);
						await feed.markReset(outbox.reset);
					}
					const { last, stored, failure } = await publishChanges(
						nats,
						outbox.changes as unknown as Change[],
						this.broker.namespace,
					);
					if (last !== undefined) await feed.markPublished(last);
					if (this.broker.metrics.isEnabled()) this.broker.metrics.increment(FEED_METRICS.published, labels, stored);
					if (failure) throw failure;
					// A page not full was the whole outbox: what was written since comes with the next cycle, after its pause.
					if (outbox.changes.length < FEED_PAGE) return;
				}
			},

			/** The lag of every durable consumer of the stream, for the metric: the consumers gone are dropped from it. */
			async noteConsumerLags() {
				const nats = natsConnection(this.broker);
				if (!nats || !this.broker.metrics.isEnabled()) return;
				const lags = await consumerLags(await nats.jetstreamManager());
				this.broker.metrics.getMetric(FEED_METRICS.lag)!.clear();
				for (const { consumer, lag } of lags) this.broker.metrics.set(FEED_METRICS.lag, lag, { consumer });
			},

			/** What waits in the outbox, for readiness and the metrics. */
			noteOutbox({ oldestAt, last, published }: Outbox) {
				this.relay.oldestAt = oldestAt;
				if (!this.broker.metrics.isEnabled()) return;
				this.broker.metrics.set(FEED_METRICS.depth, last - published, labels);
				this.broker.metrics.set(FEED_METRICS.age, oldestAt === null ? 0 : (Date.now() - oldestAt) / 1000, labels);
			},
		},
		hooks: {
			after: {
				// Not ready while the outbox does not drain: followers would not hear of the writes.
				ready(_ctx: unknown, answer: unknown) {
					const { oldestAt, failure } = this.relay;
					if (oldestAt !== null && Date.now() - oldestAt > OUTBOX_STALLED_MS)
						throw outboxStalled(Math.round((Date.now() - oldestAt) / 1000), failure ?? "publishing");
					return answer;
				},
			},
		},
		created() {
			this.relay = { again: false, stopped: false, stream: "set", oldestAt: null };
		},
		started() {
			if (!natsConnection(this.broker) || !config.changeFeed) return;
			registerMetrics(this.broker);
			this.relay.timer = setInterval(() => this.relayChanges(), RELAY_EVERY_MS);
			this.relay.timer.unref();
			this.relay.lags = setInterval(
				() =>
					void this.noteConsumerLags().catch((err: Error) => this.logger.debug("The consumers' lag was not read:", err.message)),
				LAG_EVERY_MS,
			);
			this.relay.lags.unref();
			this.relayChanges();
		},
		async stopped() {
			this.relay.stopped = true;
			clearInterval(this.relay.timer);
			clearInterval(this.relay.lags);
			await this.relay.running;
		},
	});
}
