import type { Middleware, ServiceBroker } from "moleculer";

/** Times this node's NATS client lost its server and connected again (Prometheus: catalogue_nats_reconnects_total). */
export const NATS_RECONNECTS = "catalogue.nats.reconnects.total";

/** What the middleware reads of the NATS client: its stream of status events (`disconnect`, `reconnect`, ...). */
interface NatsStatus {
	status(): AsyncIterable<{ type: string }>;
}

function natsClient(broker: ServiceBroker): NatsStatus | undefined {
	const client = (broker.transit?.tx as { client?: Partial<NatsStatus> } | undefined)?.client;
	return typeof client?.status === "function" ? (client as NatsStatus) : undefined;
}

/**
 * Counts the NATS client's reconnects in moleculer's metrics: the client reconnects by itself, and
 * moleculer neither logs it above debug nor counts it (its `moleculer_transit_connected` stays 1).
 */
export const natsReconnects: Middleware = {
	name: "NatsReconnects",
	started(broker: ServiceBroker) {
		const client = natsClient(broker);
		if (!client || !broker.metrics.isEnabled()) return Promise.resolve();
		broker.metrics.register({ name: NATS_RECONNECTS, type: "counter", unit: "reconnect", description: "NATS reconnects" });
		// The stream ends when the connection closes; a failure of it ends the count, never the node.
		void (async () => {
			for await (const { type } of client.status()) if (type === "reconnect") broker.metrics.increment(NATS_RECONNECTS);
		})().catch((err: Error) => broker.logger.warn(`NATS reconnects are no longer counted: ${err.message}`));
		return Promise.resolve();
	},
};
