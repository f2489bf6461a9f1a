import type { Logger, Middleware, Service, ServiceBroker } from "moleculer";
import { redisRefused, redisUnreachable, storageUnreachable, transporterUnreachable } from "../lib/config/start-failures";

export interface StartTimeoutOptions {
	/** How long start-up may take. */
	timeoutMs: number;
	/** Where the transporter is, for the message (credentials already hidden). */
	transporter: string | null;
	/** Where the shared cache is (REDIS_URL, credentials already hidden), for the message. */
	redis: string | null;
	/** Where the records are, for the message. */
	storage: string;
}

/**
 * Ends the process with exit code 1 and a message saying what could not be reached when the
 * broker has not started within `timeoutMs`: moleculer retries the transporter, and moleculer-db
 * its storage, for ever, so an unreachable NATS or MongoDB would otherwise hang the node silently.
 */
export function startTimeout({ timeoutMs, transporter, redis, storage }: StartTimeoutOptions): Middleware {
	// Each broker's own, as one configuration may start several brokers in one process (the tests, a tool beside a node).
	const timers = new WeakMap<ServiceBroker, NodeJS.Timeout>();
	const waitingFor = new WeakMap<ServiceBroker, Set<string>>();
	const seconds = timeoutMs / 1000;

	function reason(broker: ServiceBroker): string {
		if (broker.transit && !broker.transit.connected) return transporterUnreachable(transporter ?? "", seconds);
		const cache = (broker.cacher as { notUsable?: "unreachable" | "refusing" | null } | undefined)?.notUsable;
		if (redis && cache === "unreachable") return redisUnreachable(redis, seconds);
		if (redis && cache === "refusing") return redisRefused(redis, seconds);
		const services = [...(waitingFor.get(broker) ?? [])].join(", ");
		return storageUnreachable(services, storage, seconds);
	}

	return {
		name: "StartTimeout",
		created(broker: ServiceBroker) {
			if (broker.transit) quietWhileStarting(broker, [broker.transit.logger, broker.transit.tx.logger]);
		},
		async starting(broker: ServiceBroker) {
			const timer = setTimeout(() => {
				broker.logger.fatal(reason(broker));
				process.exit(1);
			}, timeoutMs);
			timer.unref();
			timers.set(broker, timer);
		},
		async serviceStarting(service: Service) {
			// moleculer-db says each failed attempt to reach the store (MongoDB) as an error and a warning, every second.
			quietWhileStarting(service.broker, [service.logger], STORE_RETRIES);
			if (!waitingFor.has(service.broker)) waitingFor.set(service.broker, new Set());
			waitingFor.get(service.broker)!.add(service.name);
		},
		async serviceStarted(service: Service) {
			waitingFor.get(service.broker)?.delete(service.name);
		},
		async started(broker: ServiceBroker) {
			clearTimeout(timers.get(broker));
		},
		async stopping(broker: ServiceBroker) {
			clearTimeout(timers.get(broker));
		},
	};
}

/** What moleculer-db says of each failed attempt to connect a service's store (its `started`). */
const STORE_RETRIES = ["Connection error!", "Reconnecting..."];

/**
 * moleculer says each failed attempt to reach the transporter at start as an error and a warning, and moleculer-db each attempt to
 * reach the store (`only` those lines of a service's logger): these are info until the broker has started, as the start timeout says
 * the failure once, naming TRANSPORTER or the storage. Once started, they are what they were.
 */
function quietWhileStarting(broker: ServiceBroker, loggers: Logger[], only?: string[]): void {
	for (const logger of loggers)
		for (const level of ["error", "warn"] as const) {
			const said = logger[level].bind(logger);
			logger[level] = (...args: unknown[]) =>
				broker.started || (only && !only.includes(String(args[0]))) ? said(...args) : logger.info(...args);
		}
}
