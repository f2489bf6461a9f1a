import type { Context, Middleware, Service } from "moleculer";
import { withoutSecrets } from "../lib/config/uris";

/**
 * `$node.options` answers this node's broker options to anyone who can call it (any node on NATS,
 * the REPL): the transporter's and Redis's URLs with their passwords among them. Its answer
 * leaves with every credential hidden (lib/config/uris.ts).
 */
export const noSecretsInOptions: Middleware = {
	name: "NoSecretsInOptions",
	localAction(next, action) {
		if (action.name !== "$node.options") return next;
		return async function (this: Service, ctx: Context) {
			return withoutSecrets(await next.call(this, ctx));
		};
	},
};
