import type { Middleware, ServiceBroker } from "moleculer";
import { Events } from "nats";
import { natsConnection } from "../lib/config/transporter";

/** Times this node's NATS client lost its server and connected again (Prometheus: catalogue_nats_reconnects_total). */
export const NATS_RECONNECTS = "catalogue.nats.reconnects.total";

/** Subjects whose refusal this node has logged; past this many, no more are noted (each is one line, once). */
const REFUSALS_LOGGED = 256;

/**
 * Counts the NATS client's reconnects in moleculer's metrics: the client reconnects by itself, and
 * moleculer neither logs it above debug nor counts it (its `moleculer_transit_connected` stays 1).
 * Says once per subject when NATS refuses this node a publish or a subscription (docs/security.md,
 * "The broker"): moleculer only logs it at debug, and a refused call waits for REQUEST_TIMEOUT.
 */
export const natsReconnects: Middleware = {
	name: "NatsReconnects",
	started(broker: ServiceBroker) {
		const client = natsConnection(broker);
		if (!client) return Promise.resolve();
		const counted = broker.metrics.isEnabled();
		if (counted) broker.metrics.register({ name: NATS_RECONNECTS, type: "counter", unit: "reconnect", description: "NATS reconnects" });
		const refused = new Set<string>();
		// The stream ends when the connection closes; a failure of it ends the count, never the node.
		void (async () => {
			for await (const status of client.status()) {
				if (status.type === Events.Reconnect && counted) broker.metrics.increment(NATS_RECONNECTS);
				const denied = status.permissionContext;
				if (!denied || refused.has(denied.subject) || refused.size >= REFUSALS_LOGGED) continue;
				refused.add(denied.subject);
				broker.logger.warn(
					`NATS refused this node (${broker.nodeID}) the ${denied.operation} to ${denied.subject}: its NATS user may not (docs/security.md, "The broker")`,
				);
			}
		})().catch((err: Error) => broker.logger.warn(`NATS reconnects are no longer counted: ${err.message}`));
		return Promise.resolve();
	},
};
