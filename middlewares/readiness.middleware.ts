import { createServer, type Server } from "node:http";
import type { Middleware, ServiceBroker } from "moleculer";

/** Ready: the broker has started its services and, in a cluster, is connected to the transporter. */
export function isReady(broker: ServiceBroker): boolean {
	return broker.started && (!broker.transit || broker.transit.connected);
}

/**
 * A readiness probe for container health checks on every node, gateway or not: `GET /` on
 * `port` answers 200 `{ status: "ready" }` once the node is ready, 503 `{ status: "not ready" }`
 * before that, while stopping, and while the transporter connection is lost.
 */
export function readinessProbe(port: number): Middleware {
	let server: Server | undefined;
	return {
		name: "ReadinessProbe",
		starting(broker: ServiceBroker) {
			server = createServer((_request, response) => {
				const ready = isReady(broker);
				response.writeHead(ready ? 200 : 503, { "Content-Type": "application/json" });
				response.end(JSON.stringify({ status: ready ? "ready" : "not ready", nodeID: broker.nodeID }));
			});
			return new Promise<void>((resolve, reject) => {
				server!.once("error", reject);
				server!.listen(port, () => resolve());
			});
		},
		stopped() {
			return new Promise<void>(resolve => (server ? server.close(() => resolve()) : resolve()));
		},
	};
}
