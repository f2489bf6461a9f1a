import type { ActionHandler, ActionSchema, Context, Middleware, Service } from "moleculer";
import { DATA_SERVICE_NAMES } from "../lib/catalogue/services";
import type { SignedIn } from "../lib/sign-in/sign-in";

/** The actions that change a data service's records through the gateway. */
const WRITES = new Set(["create", "update", "remove"]);

type WriteContext = Context<{ id?: unknown }, { user?: SignedIn | null }>;

/** The id a write names or, for a create, the one it answers with (`{ category: { id } }`). */
function recordId(ctx: WriteContext, answer: unknown): unknown {
	if (ctx.params?.id !== undefined) return ctx.params.id;
	const [record] = Object.values((answer ?? {}) as Record<string, { id?: unknown } | undefined>);
	return record?.id;
}

/**
 * Who changed what, said where the change is made: each write a signed-in sender made (the
 * gateway's `ctx.meta.user`, which crosses NATS with the call) is logged on the data service's own
 * node with the sender and the record's id, beside the gateway's access log line.
 */
export const writeAudit: Middleware = {
	name: "WriteAudit",
	localAction(next: ActionHandler, action: ActionSchema) {
		const { rawName, service } = action as ActionSchema & { rawName?: string; service?: Service };
		if (!service || !WRITES.has(rawName ?? "") || !(DATA_SERVICE_NAMES as readonly string[]).includes(service.name)) return next;
		return async function (this: Service, ctx: WriteContext) {
			const answer: unknown = await next.call(this, ctx);
			const user = ctx.meta.user;
			if (user)
				service.logger.info(
					{ requestId: ctx.requestID ?? undefined, user: user.sub, via: user.via, id: recordId(ctx, answer) },
					`${String(action.name)} by ${user.sub}`,
				);
			return answer;
		} as ActionHandler;
	},
};
