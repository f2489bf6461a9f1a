import { createServer, type Server } from "node:http";
import type { Middleware, ServiceBroker } from "moleculer";
import type { NatsConnection } from "nats";
import { portRefused } from "../lib/config/start-failures";
import { texts } from "../lib/catalogue/errors";
import { within } from "../lib/async/within";
import { needs } from "../lib/catalogue/services";
import { natsConnection } from "../lib/config/transporter";
import { healthAnswer, isHealthPath, waitingOn, type HealthPath, type Readiness } from "../lib/http/health";
import { isRead } from "../lib/http/methods";

/** How long the probe waits for NATS to answer its round trip, and for each service it needs. */
const RTT_TIMEOUT_MS = 1000;

/** Whether NATS answers a round trip in time; `rtt()` fails at once while the client is disconnected. */
function natsAnswers(connection: Pick<NatsConnection, "rtt">): Promise<boolean> {
	return within(connection.rtt(), RTT_TIMEOUT_MS).then(
		() => true,
		() => false,
	);
}

/**
 * Ready: the broker has started its services and, in a cluster, reaches the transporter. The
 * transporter's own `connected` flag stays set while NATS is lost (the client reconnects in the
 * background), so over NATS the probe asks the server for a round trip.
 */
async function isReady(broker: ServiceBroker): Promise<boolean> {
	if (!broker.started) return false;
	if (!broker.transit) return true;
	if (!broker.transit.connected) return false;
	const nats = natsConnection(broker);
	return nats ? natsAnswers(nats) : true;
}

/** Whether some node, this one or another, offers `action` now. */
function discovered(broker: ServiceBroker, action: string): boolean {
	const registry = broker.registry as unknown as { getActionEndpoints(name: string): { hasAvailable(): boolean } | undefined };
	return registry.getActionEndpoints(action)?.hasAvailable() ?? false;
}

/**
 * Ready: the node is (isReady above), and every catalogue service its own services need answers
 * its `ready` action (mixins/db.mixin.ts), here or on another node: a round trip that also reads
 * that service's store, and fails while that store refuses writes. A node's own services are
 * among those it needs.
 */
async function readiness(broker: ServiceBroker): Promise<Readiness> {
	if (!(await isReady(broker))) return { ready: false, waitingFor: ["node"] };
	const needed = new Set(broker.services.flatMap(service => needs(service.name)));
	const answers = await Promise.all(
		[...needed].sort().map(name =>
			// A service not discovered yet is waited for without a call, which moleculer would log as a warning at every start.
			!discovered(broker, `${name}.ready`)
				? Promise.resolve(name)
				: broker.call(`${name}.ready`, {}, { timeout: RTT_TIMEOUT_MS, retries: 0 }).then(
						() => null,
						(err: unknown) => waitingOn(name, err),
					),
		),
	);
	// What a service of this node says it waits for itself (the gateway: its sign-in's keys).
	const own = broker.services.flatMap(service => (service as Partial<{ notReadyFor(): string[] }>).notReadyFor?.() ?? []);
	const waitingFor = [...answers.filter(name => name !== null), ...own];
	return { ready: waitingFor.length === 0, waitingFor };
}

/** This node's answer to a health path (lib/http/health.ts), on HEALTH_PORT as on the gateway. */
export const brokerHealth = (broker: ServiceBroker, path: HealthPath) =>
	healthAnswer(path, broker.nodeID, () => readiness(broker).catch((): Readiness => ({ ready: false, waitingFor: ["node"] })));

/**
 * Health paths for container health checks on every node, gateway or not, on `port`:
 * `GET /health/live` answers 200 `{ status: "live" }` while the process answers, and
 * `GET /health/ready` 200 `{ status: "ready" }` once the node is ready (readiness above), 503
 * `{ status: "not ready", msg, waitingFor }` before that, while stopping, while the transporter
 * connection is lost, while a service it needs or its store does not answer, and while that
 * store refuses writes.
 */
export function readinessProbe(port: number): Middleware {
	let server: Server | undefined;
	return {
		name: "ReadinessProbe",
		starting(broker: ServiceBroker) {
			server = createServer((request, response) => {
				const answer = ({ status, body }: { status: number; body: object }) => {
					response.writeHead(status, { "Content-Type": "application/json" });
					response.end(JSON.stringify(body));
				};
				const path = isRead(request.method) ? request.url : undefined;
				if (!isHealthPath(path)) return answer({ status: 404, body: { msg: texts.notFound, nodeID: broker.nodeID } });
				void brokerHealth(broker, path).then(answer);
			});
			return new Promise<void>((resolve, reject) => {
				server!.once("error", (err: NodeJS.ErrnoException) => {
					if (err.syscall !== "listen") return reject(err);
					broker.logger.fatal(portRefused("HEALTH_PORT", port, err));
					process.exit(1);
				});
				server!.listen(port, () => resolve());
			});
		},
		stopped() {
			return new Promise<void>(resolve => (server ? server.close(() => resolve()) : resolve()));
		},
	};
}
