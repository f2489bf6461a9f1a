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

/** How long a write waits for Redis to hand out its generation before it takes the next one itself. */
export const REDIS_WAIT_MS = 1000;

/**
 * The next generation of `service`: Redis's when it answers in time, so every writer draws from
 * one counter; else one past the highest this node has seen. A write that is stored is never
 * failed or held up by its cache.
 */
async function nextGeneration(broker: ServiceBroker, service: string): Promise<number> {
	const seen = generationsOf(broker).get(service) ?? 0;
	const redis = redisOf(broker);
	if (!redis?.connected) return seen + 1;
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${REDIS_WAIT_MS} ms`)), REDIS_WAIT_MS)));
	try {
		return Number(await Promise.race([redis.client.eval(NEXT_GENERATION, 1, generationKey(broker.namespace, service), seen), late]));
	} catch (err) {
		broker.logger.warn(`Redis did not give ${service} its next cache generation (${(err as Error).message}); this node takes ${seen + 1}.`);
		return seen + 1;
	} finally {
		clearTimeout(timer);
	}
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
			handler(this: Service, ctx: Context<{ generation: number }>) {
				const written = String(ctx.eventName).slice("cache.clean.".length);
				if (!learn(this.broker, written, ctx.params.generation) || !sources(this).has(written)) return;
				// Only to free room, so the write does not wait for it, nor for a Redis that is away.
				const { cacher } = this.broker;
				if (cacher && cacher.connected !== false)
					cacher.clean(`${this.name}.**`).catch((err: Error) => this.logger.warn(`Could not drop ${this.name}'s old answers: ${err.message}`));
			},
		},
	},
	methods: {
		/** After a write: the service's next generation, known here before the write answers. */
		async clearCache(this: Service): Promise<void> {
			if (!this.broker.cacher) return;
			const generation = await nextGeneration(this.broker, this.name);
			learn(this.broker, this.name, generation);
			await this.broker.broadcast(`cache.clean.${this.name}`, { generation }).catch((err: Error) => {
				this.logger.warn(`Could not tell the other nodes of ${this.name} generation ${generation}: ${err.message}`);
			});
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
