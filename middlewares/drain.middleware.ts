import type { Server, ServerResponse } from "node:http";
import type { Middleware, Service, ServiceBroker } from "moleculer";

/** How often connections whose requests have been answered are closed while draining. */
const SWEEP_MS = 50;

const answering = new WeakMap<Server, Set<ServerResponse>>();

/** From now on, keeps the answers `server` is writing, so that a drain can end their connections. */
export function trackAnswers(server: Server): void {
	const inProgress = new Set<ServerResponse>();
	answering.set(server, inProgress);
	server.on("request", (_request, response) => {
		inProgress.add(response);
		response.once("close", () => inProgress.delete(response));
	});
}

function closeAfterAnswer(response: ServerResponse): void {
	if (!response.headersSent) response.setHeader("Connection", "close");
}

/**
 * Stops `server` taking requests and resolves once the requests it has are answered: no new
 * connections (a client is refused at connect, so it knows nothing was done), `Connection: close`
 * on every answer still to come (those in progress when `trackAnswers` was called before), and
 * each connection closed as soon as it has no request in flight. After `timeoutMs` the
 * connections left are cut.
 */
export function drain(server: Server, timeoutMs: number): Promise<void> {
	return new Promise(resolve => {
		answering.get(server)?.forEach(closeAfterAnswer);
		server.on("request", (_request, response) => closeAfterAnswer(response));
		const sweep = setInterval(() => server.closeIdleConnections(), SWEEP_MS);
		const cut = setTimeout(() => server.closeAllConnections(), timeoutMs);
		server.close(() => {
			clearInterval(sweep);
			clearTimeout(cut);
			resolve();
		});
		server.closeIdleConnections();
	});
}

/**
 * Graceful stop of a node that runs the gateway: on SIGTERM (broker.stop), once the node has told
 * the cluster it takes no more calls, the gateway drains before any service stops, so every
 * request it accepted is answered while the cluster is still reachable.
 */
export function drainGateway(timeoutMs: number): Middleware {
	return {
		name: "DrainGateway",
		async serviceStarting(service: Service) {
			const { server } = service as unknown as { server?: Server };
			if (service.name === "api" && server) trackAnswers(server);
		},
		async stopping(broker: ServiceBroker) {
			const gateway = broker.getLocalService("api") as unknown as { server?: Server; endStreams?: () => void } | undefined;
			// An answer that never ends (GET /changes) ends first: its client resumes from another gateway.
			gateway?.endStreams?.();
			if (gateway?.server?.listening) await drain(gateway.server, timeoutMs);
		},
	};
}
