import type { AddressInfo } from "node:net";
import type { Middleware, ServiceBroker } from "moleculer";
import { NO_CLUSTER, readyLine } from "../lib/config/start-failures";
import { DATA_SERVICE_NAMES } from "../lib/catalogue/services";

/** The gateway's HTTP server (moleculer-web's), where it listens: PORT=0 picks the port as it starts. */
function gatewayPort(broker: ServiceBroker): number | null {
	const gateway = broker.getLocalService("api") as { server?: { address(): AddressInfo | string | null } } | undefined;
	const address = gateway?.server?.address();
	return address && typeof address === "object" ? address.port : null;
}

/** A REPL with no services and no transporter (`npm run repl` without TRANSPORTER): nothing it asks can answer. */
export const aloneWithoutCluster = (broker: ServiceBroker) =>
	!broker.transit && !DATA_SERVICE_NAMES.every(name => broker.getLocalService(name));

/**
 * Ends a node's start-up log with one line saying where its API and docs are, or which services it runs, and where its data is
 * (lib/config/start-failures.ts readyLine); a REPL alone says it has no cluster to join, and how to join one.
 */
export function readyLineOf(storage: string): Middleware {
	return {
		name: "ReadyLine",
		started(broker: ServiceBroker) {
			const services = broker.services.map(service => service.name).filter(name => !name.startsWith("$"));
			if (services.length === 0) {
				if (aloneWithoutCluster(broker)) broker.logger.warn(NO_CLUSTER);
				return Promise.resolve();
			}
			// After moleculer's own "started successfully" line, which follows this hook.
			setImmediate(() => broker.logger.info(readyLine({ port: gatewayPort(broker), services, storage })));
			return Promise.resolve();
		},
	};
}
