import type { ActionSchema, Context, Middleware, Service } from "moleculer";
import { cacheKey, knowsGenerations, type CatalogueCache } from "../mixins/cache.mixin";

/**
 * A cached read of another node is looked up in this node's cacher (the Redis every node shares)
 * before the call crosses NATS, so a hit costs the caller one Redis read and no other node any
 * work. On a miss the call asks the other node not to use its own cache: that node may not have
 * heard of a write this one has, and its answer is stored here under the generations known here
 * (docs/caching.md). A node cut off from NATS hears of no write; it stops answering from the
 * cache when it stops seeing the other nodes (moleculer's heartbeat timeout), since only their
 * actions pass through here. A node that does not hear of the writes an answer is made of (no
 * catalogue service, as `npm run repl` starts one) does not look it up: its key would carry
 * generations the node never learned.
 */
export const remoteReadsCache: Middleware = {
	name: "RemoteReadsCache",
	remoteAction(next, action: ActionSchema) {
		const from = (action.cache as Partial<CatalogueCache> | undefined)?.from;
		if (!from) return next;
		return async function cachedRemoteCall(this: Service, ctx: Context<unknown, { $cache?: boolean }>): Promise<unknown> {
			const { cacher } = ctx.broker;
			if (!cacher || cacher.connected === false || ctx.meta.$cache === false || !knowsGenerations(ctx.broker, from))
				return next.call(this, ctx);
			const key = cacheKey(ctx.broker, action, ctx.params)!;
			// Redis lost in the middle of a read: the read goes to the node, as without a cache.
			const cached: unknown = await cacher.get(key).catch(() => undefined);
			if (cached != null) {
				ctx.cachedResult = true;
				return cached;
			}
			ctx.meta.$cache = false;
			try {
				const answer: unknown = await next.call(this, ctx);
				cacher.set(key, answer).catch((err: Error) => ctx.broker.logger.warn(`Could not cache ${action.name}: ${err.message}`));
				return answer;
			} finally {
				// The meta of a call flows back to its caller; this request's other calls may use the cache.
				delete ctx.meta.$cache;
			}
		};
	},
};
