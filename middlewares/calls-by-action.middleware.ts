import { ServiceBroker, type CallingOptions, type Middleware } from "moleculer";

/** What moleculer-web calls: the endpoint it chose for an alias (a node's action), where other callers give the action's name. */
type Endpoint = { local: boolean; action: { name: string } };
type Call = (target: string | Endpoint, params?: unknown, opts?: CallingOptions) => Promise<unknown>;

/**
 * In a cluster, where NATS balances the calls (`disableBalancer`, moleculer.config.ts), a call of another node's service goes on
 * its action's subject, which NATS allows or denies per action (docs/security.md, "The broker"), and a call of this node's own
 * services stays in the node, as without NATS. moleculer alone would send the endpoint moleculer-web picked for an alias to that
 * node's own subject, which says nothing of the action, and send a node's calls of its own services through NATS and back.
 */
export const callsByAction: Middleware = {
	name: "CallsByAction",
	created(broker: ServiceBroker) {
		if (!broker.options.disableBalancer || !broker.transit) return;
		const overNats = broker.call.bind(broker) as Call;
		// moleculer's own balanced call, which prefers a local endpoint.
		const balanced = ServiceBroker.prototype.call.bind(broker) as Call;
		const call: Call = (target, params, opts) => {
			if (opts?.nodeID) return overNats(target, params, opts);
			const name = typeof target === "string" ? target : target.action.name;
			const local = typeof target === "string" ? broker.getLocalService(name.slice(0, name.lastIndexOf("."))) : target.local;
			return local ? balanced(name, params, opts) : overNats(name, params, opts);
		};
		broker.call = call;
	},
};
