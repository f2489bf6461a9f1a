import { Cachers, type ActionCacheOptions, type Context, type Service, type ServiceBroker, type ServiceSchema } from "moleculer";
import { generationKey, generationStamp, NEXT_GENERATION } from "../lib/cache";

/**
 * Every service's generation as this broker knows it: a number that grows with each write to the
 * service's records. Cached answers carry the generations of what they are made of in their key,
 * so a write makes every older answer unreachable at once (README, "Caching").
 */
const generations = new WeakMap<ServiceBroker, Map<string, number>>();

function generationsOf(broker: ServiceBroker): Map<string, number> {
	let known = generations.get(broker);
	if (!known) generations.set(broker, (known = new Map()));
	return known;
}

/** Keeps the higher generation: news of writes may arrive out of order from different nodes. */
function learn(broker: ServiceBroker, service: string, generation: number): boolean {
	const known = generationsOf(broker);
	if (generation < (known.get(service) ?? 0)) return false;
	known.set(service, generation);
	return true;
}

/** A cache option whose answers are made of the records of `services`. */
export interface CatalogueCache extends ActionCacheOptions {
	from: readonly string[];
}

/**
 * The `cache` of an action whose answer is made of the records of `services`: moleculer's key (the
 * action and its params) with their generations added. A read that began before a write stores
 * its answer under the old generations, where no later read looks.
 */
export function cachedFrom(...services: string[]): CatalogueCache {
	return {
		from: services,
		keygen(action, opts, ctx) {
			const base = ctx.broker.cacher!.defaultKeygen(action as unknown as string, opts, ctx);
			return `${base}@${generationStamp(generationsOf(ctx.broker), services)}`;
		},
	};
}

const redisOf = (broker: ServiceBroker) => (broker.cacher instanceof Cachers.Redis ? (broker.cacher as Cachers.Redis<RedisClient>) : null);

/** The ioredis calls used here. */
interface RedisClient {
	eval(script: string, keys: 1, key: string, seen: number): Promise<number>;
	mget(keys: string[]): Promise<(string | null)[]>;
}

/** The services whose records some cached answer of `service` is made of. */
function sources(service: Service): Set<string> {
	const actions = Object.values(service.schema.actions ?? {}) as { cache?: Partial<CatalogueCache> }[];
	return new Set(actions.flatMap(action => action.cache?.from ?? []));
}

/**
 * Generations for a catalogue service: `clearCache`, which moleculer-db calls after every write,
 * moves the service's generation on and tells every node; each node then drops the answers the
 * write made unreachable. With Redis, generations live there too, so that a node that starts
 * later, or a replica, agrees with the others.
 */
export const cacheGenerations: Partial<ServiceSchema> = {
	events: {
		"cache.clean.*": {
			params: { generation: { type: "number", integer: true, positive: true } },
			async handler(this: Service, ctx: Context<{ generation: number }>) {
				const written = String(ctx.eventName).slice("cache.clean.".length);
				if (!learn(this.broker, written, ctx.params.generation) || !sources(this).has(written)) return;
				await this.broker.cacher?.clean(`${this.name}.**`);
			},
		},
	},
	methods: {
		/** After a write: the service's next generation, known here before the write answers. */
		async clearCache(this: Service): Promise<void> {
			if (!this.broker.cacher) return;
			const seen = generationsOf(this.broker).get(this.name) ?? 0;
			const redis = redisOf(this.broker);
			const generation = redis ? Number(await redis.client.eval(NEXT_GENERATION, 1, generationKey(this.broker.namespace, this.name), seen)) : seen + 1;
			learn(this.broker, this.name, generation);
			await this.broker.broadcast(`cache.clean.${this.name}`, { generation });
		},
	},
	/** With Redis, starts from the generations the cluster has reached. */
	async started(this: Service) {
		const redis = redisOf(this.broker);
		const services = [...sources(this)];
		if (!redis || services.length === 0) return;
		const stored = await redis.client.mget(services.map(service => generationKey(this.broker.namespace, service)));
		services.forEach((service, i) => learn(this.broker, service, Number(stored[i] ?? 0)));
	},
};
