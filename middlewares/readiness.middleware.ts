import { createServer, type Server } from "node:http";
import type { Middleware, ServiceBroker } from "moleculer";

/** How long the probe waits for NATS to answer its round trip. */
const RTT_TIMEOUT_MS = 1000;

interface NatsConnection {
	rtt(): Promise<number>;
}

/** The connection under moleculer's NATS transporter, when that is the transporter in use. */
function natsConnection(broker: ServiceBroker): NatsConnection | undefined {
	const client = (broker.transit?.tx as { client?: Partial<NatsConnection> } | undefined)?.client;
	return typeof client?.rtt === "function" ? (client as NatsConnection) : undefined;
}

/** Whether NATS answers a round trip in time; `rtt()` fails at once while the client is disconnected. */
function natsAnswers(connection: NatsConnection): Promise<boolean> {
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<boolean>(resolve => (timer = setTimeout(() => resolve(false), RTT_TIMEOUT_MS)));
	const answered = connection.rtt().then(
		() => true,
		() => false,
	);
	return Promise.race([answered, late]).finally(() => clearTimeout(timer));
}

/**
 * Ready: the broker has started its services and, in a cluster, reaches the transporter. The
 * transporter's own `connected` flag stays set while NATS is lost (the client reconnects in the
 * background), so over NATS the probe asks the server for a round trip.
 */
export async function isReady(broker: ServiceBroker): Promise<boolean> {
	if (!broker.started) return false;
	if (!broker.transit) return true;
	if (!broker.transit.connected) return false;
	const nats = natsConnection(broker);
	return nats ? natsAnswers(nats) : true;
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
			server = createServer(async (_request, response) => {
				const ready = await isReady(broker);
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
