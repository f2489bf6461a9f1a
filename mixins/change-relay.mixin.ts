import type { ServiceBroker } from "moleculer";
import { outboxStalled } from "../lib/catalogue/errors";
import type { Kind } from "../lib/catalogue/kind";
import { natsConnection } from "../lib/config/transporter";
import { FEED_PAGE, type Change } from "../lib/feed/changes";
import { ensureStream, publishChanges } from "../lib/feed/jetstream";
import { markPublished, unpublished } from "../lib/storage/adapter";
import { asMixin, type Row } from "./db.mixin";

/** How often the outbox is read for changes a write did not publish (NATS was away, or the node was killed first). */
const RELAY_EVERY_MS = 1000;

/** An outbox whose oldest change waits longer than this has stopped draining: readiness says so. */
const OUTBOX_STALLED_MS = 30_000;

const FEED_METRICS = {
	published: "catalogue.changes.published.total",
	depth: "catalogue.changes.outbox.depth",
	age: "catalogue.changes.outbox.age.seconds",
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
export function changeRelay(kind: Kind) {
	const labels = { service: kind.service };
	let timer: NodeJS.Timeout | undefined;
	let running: Promise<void> | undefined;
	let again = false;
	let streamMade = false;
	/** Why the last relay failed, until one succeeds; logged once per reason. */
	let failure: string | undefined;
	let oldestAt: number | null = null;
	return asMixin<Row, ChangeRelayMethods & { relayOnce(): Promise<void> }>({
		methods: {
			relayChanges() {
				if (!natsConnection(this.broker)) return;
				if (running) {
					again = true;
					return;
				}
				running = this.relayOnce()
					.then(() => {
						failure = undefined;
					})
					.catch((err: Error) => {
						if (failure !== err.message)
							this.logger.warn(`The ${kind.service} changes are not published to JetStream yet:`, err.message);
						failure = err.message;
					})
					.finally(() => {
						running = undefined;
						if (again) {
							again = false;
							this.relayChanges();
						}
					});
			},

			async relayOnce() {
				const nats = natsConnection(this.broker)!;
				if (!streamMade) {
					await ensureStream(await nats.jetstreamManager());
					streamMade = true;
				}
				for (;;) {
					const outbox = await unpublished(this.adapter, FEED_PAGE);
					oldestAt = outbox.oldestAt;
					if (this.broker.metrics.isEnabled()) {
						this.broker.metrics.set(FEED_METRICS.depth, outbox.last - outbox.published, labels);
						this.broker.metrics.set(FEED_METRICS.age, oldestAt === null ? 0 : (Date.now() - oldestAt) / 1000, labels);
					}
					const last = await publishChanges(nats, outbox.changes as unknown as Change[]);
					if (last !== undefined) {
						await markPublished(this.adapter, last);
						if (this.broker.metrics.isEnabled())
							this.broker.metrics.increment(FEED_METRICS.published, labels, outbox.changes.length);
					}
					if (outbox.changes.length < FEED_PAGE) {
						oldestAt = null;
						if (this.broker.metrics.isEnabled()) {
							this.broker.metrics.set(FEED_METRICS.depth, outbox.last - (last ?? outbox.published), labels);
							this.broker.metrics.set(FEED_METRICS.age, 0, labels);
						}
						return;
					}
				}
			},
		},
		hooks: {
			after: {
				// Not ready while the outbox does not drain: followers would not hear of the writes.
				ready(_ctx: unknown, answer: unknown) {
					if (oldestAt !== null && Date.now() - oldestAt > OUTBOX_STALLED_MS)
						throw outboxStalled(Math.round((Date.now() - oldestAt) / 1000), failure ?? "publishing");
					return answer;
				},
			},
		},
		started() {
			if (!natsConnection(this.broker)) return;
			registerMetrics(this.broker);
			timer = setInterval(() => this.relayChanges(), RELAY_EVERY_MS);
			timer.unref();
			this.relayChanges();
		},
		async stopped() {
			clearInterval(timer);
			await running;
		},
	});
}
