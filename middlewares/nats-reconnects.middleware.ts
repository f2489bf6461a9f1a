import type { Middleware, ServiceBroker } from "moleculer";
import { Events } from "nats";
import { natsConnection } from "../lib/config/transporter";

/** Times this node's NATS client lost its server and connected again (Prometheus: catalogue_nats_reconnects_total). */
export const NATS_RECONNECTS = "catalogue.nats.reconnects.total";

/**
 * Counts the NATS client's reconnects in moleculer's metrics: the client reconnects by itself, and
 * moleculer neither logs it above debug nor counts it (its `moleculer_transit_connected` stays 1).
 */
export const natsReconnects: Middleware = {
	name: "NatsReconnects",
	started(broker: ServiceBroker) {
		const client = natsConnection(broker);
		if (!client || !broker.metrics.isEnabled()) return Promise.resolve();
		broker.metrics.register({ name: NATS_RECONNECTS, type: "counter", unit: "reconnect", description: "NATS reconnects" });
		// The stream ends when the connection closes; a failure of it ends the count, never the node.
		void (async () => {
			for await (const { type } of client.status()) if (type === Events.Reconnect) broker.metrics.increment(NATS_RECONNECTS);
		})().catch((err: Error) => broker.logger.warn(`NATS reconnects are no longer counted: ${err.message}`));
		return Promise.resolve();
	},
};
