import type { Server } from "node:http";
import type { Middleware, ServiceBroker } from "moleculer";

/** How often connections whose requests have been answered are closed while draining. */
const SWEEP_MS = 50;

/**
 * Stops `server` taking requests and resolves once the requests it has are answered: no new
 * connections (a client is refused at connect, so it knows nothing was done), `Connection: close`
 * on every answer still to come, and each connection closed as soon as it has no request in
 * flight. After `timeoutMs` the connections left are cut.
 */
export function drain(server: Server, timeoutMs: number): Promise<void> {
	return new Promise(resolve => {
		server.on("request", (_request, response) => {
			if (!response.headersSent) response.setHeader("Connection", "close");
		});
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
		async stopping(broker: ServiceBroker) {
			const gateway = broker.getLocalService("api") as unknown as { server?: Server } | undefined;
			if (gateway?.server?.listening) await drain(gateway.server, timeoutMs);
		},
	};
}
