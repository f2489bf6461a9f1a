import type { Middleware, Service, ServiceBroker } from "moleculer";

export interface StartTimeoutOptions {
	/** How long start-up may take. */
	timeoutMs: number;
	/** Where the transporter is, for the message (credentials already hidden). */
	transporter: string | null;
	/** Where the records are, for the message. */
	storage: string;
}

/**
 * Ends the process with exit code 1 and a message saying what could not be reached when the
 * broker has not started within `timeoutMs`: moleculer retries the transporter, and moleculer-db
 * its storage, for ever, so an unreachable NATS or MongoDB would otherwise hang the node silently.
 */
export function startTimeout({ timeoutMs, transporter, storage }: StartTimeoutOptions): Middleware {
	// Each broker's own, as one configuration may start several brokers in one process (the tests, a tool beside a node).
	const timers = new WeakMap<ServiceBroker, NodeJS.Timeout>();
	const waitingFor = new WeakMap<ServiceBroker, Set<string>>();
	const seconds = timeoutMs / 1000;

	function reason(broker: ServiceBroker): string {
		if (broker.transit && !broker.transit.connected)
			return `Could not connect to the transporter at ${transporter} within ${seconds} s; giving up.`;
		const services = [...(waitingFor.get(broker) ?? [])].join(", ");
		return `Could not start within ${seconds} s: ${services} could not reach the storage (${storage}); giving up.`;
	}

	return {
		name: "StartTimeout",
		async starting(broker: ServiceBroker) {
			const timer = setTimeout(() => {
				broker.logger.fatal(reason(broker));
				process.exit(1);
			}, timeoutMs);
			timer.unref();
			timers.set(broker, timer);
		},
		async serviceStarting(service: Service) {
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
