import {
	Cachers,
	type ActionCacheOptions,
	type ActionSchema,
	type Context,
	type Service,
	type ServiceBroker,
	type ServiceSchema,
} from "moleculer";
import { answerKey, answerTag, generationKey, generationStamp, NEXT_GENERATION } from "../lib/cache/cache";
import { DATA_SERVICE_NAMES } from "../lib/catalogue/services";

/**
 * Every service's generation as this broker knows it: a number that grows with each write to the
 * service's records. Cached answers carry the generations of what they are made of in their key,
 * so a write makes every older answer unreachable at once (docs/caching.md).
 */
const generations = new WeakMap<ServiceBroker, Map<string, number>>();

function generationsOf(broker: ServiceBroker): Map<string, number> {
	let known = generations.get(broker);
	if (!known) generations.set(broker, (known = new Map<string, number>()));
	return known;
}

/** Per broker, the services whose news of writes one of its started services hears. */
const heard = new WeakMap<ServiceBroker, Set<string>>();

/**
 * Whether this broker hears of the writes to all of `services`, so that the keys it makes of
 * their answers are current. A node without a catalogue service (`npm run repl`) hears of none,
 * and must not look their answers up in a shared cache.
 */
export const knowsGenerations = (broker: ServiceBroker, services: readonly string[]): boolean =>
	services.every(service => heard.get(broker)?.has(service));

/** Keeps the higher generation: news of writes may arrive out of order from different nodes. */
function learn(broker: ServiceBroker, service: string, generation: number): void {
	const known = generationsOf(broker);
	if (generation > (known.get(service) ?? 0)) known.set(service, generation);
}

/** A cache option whose answers are made of the records of `services`. */
export interface CatalogueCache extends ActionCacheOptions {
	from: readonly string[];
}

/** A cached action as a key is made from it: its name, its rules and where its answers come from. */
type CachedAction = Pick<ActionSchema, "name" | "params" | "cache">;

/**
 * Of `params`, the fields the action's rules name, as sent: with `$$strict: "remove"` these are all
 * the action ever reads, so the ignored `/game/{query}` segment and unknown query fields are left
 * out of the key. Only the rules' field names are used, not the rules themselves: a remote
 * action's rules arrive as JSON, without their functions, patterns or shared parts.
 */
function fieldsRead(action: CachedAction, params: unknown): Record<string, unknown> {
	const rules = action.params as Record<string, unknown> | undefined;
	// Without it, a field the rules do not name would reach the handler but not the key.
	if (rules?.$$strict !== "remove") throw new Error(`${action.name} is cached, so its params must be declared with $$strict: "remove"`);
	const sent = (params ?? {}) as Record<string, unknown>;
	return Object.fromEntries(
		Object.keys(rules)
			.filter(field => !field.startsWith("$$") && Object.hasOwn(sent, field))
			.map(field => [field, sent[field]]),
	);
}

/**
 * The key of an answer of `action` (lib/cache/cache.ts answerKey): the fields it reads and the
 * generations of the services its answer is made of, as this node knows them; null for an
 * action that is not cached. A read that began before a write stores its answer under the old
 * generations, where no later read looks. The local cacher, the caller's lookup and the gateway's
 * ETags all use it.
 */
export function cacheKey(broker: ServiceBroker, action: CachedAction, params: unknown): string | null {
	const services = (action.cache as Partial<CatalogueCache> | undefined)?.from;
	if (!services) return null;
	return answerKey(action.name!, fieldsRead(action, params), generationStamp(generationsOf(broker), services));
}

/**
 * The ETag of the answer `action` gives for `params` as this node would serve it from the cache,
 * without asking for the answer; null when the answer is not cached here (no cacher: the
 * generations do not move). The broker's instance id changes at every start.
 */
export function cachedAnswerTag(broker: ServiceBroker, action: CachedAction, params: unknown): string | null {
	const key = broker.cacher ? cacheKey(broker, action, params) : null;
	return key === null ? null : answerTag(key, broker.instanceID);
}

/** The `cache` of an action whose answer is made of the records of `services`. */
export function cachedFrom(...services: string[]): CatalogueCache {
	return { from: services, keygen: (action, _opts, ctx) => cacheKey(ctx.broker, action, ctx.params)! };
}

const redisOf = (broker: ServiceBroker) => (broker.cacher instanceof Cachers.Redis ? (broker.cacher as Cachers.Redis<RedisClient>) : null);

/** The ioredis calls used here. */
interface RedisClient {
	eval(script: string, keys: 1, key: string, seen: number): Promise<number>;
	mget(keys: string[]): Promise<(string | null)[]>;
}

/** How long a write waits for Redis to hand out its generation before it takes the next one itself. */
const REDIS_WAIT_MS = 1000;

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
	const late = new Promise<never>(
		(_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${REDIS_WAIT_MS} ms`)), REDIS_WAIT_MS)),
	);
	try {
		return Number(await Promise.race([redis.client.eval(NEXT_GENERATION, 1, generationKey(broker.namespace, service), seen), late]));
	} catch (err) {
		broker.logger.warn(
			`Redis did not give ${service} its next cache generation (${(err as Error).message}); this node takes ${seen + 1}.`,
		);
		return seen + 1;
	} finally {
		clearTimeout(timer);
	}
}

/** The events that tell a node of writes to `services`: each carries the write's generation. */
function newsOf(services: Iterable<string>): ServiceSchema["events"] {
	return Object.fromEntries(
		[...services].map(service => [
			`cache.clean.${service}`,
			{
				params: { generation: { type: "number", integer: true, positive: true } },
				handler(this: Service, ctx: Context<{ generation: number }>) {
					learn(this.broker, service, ctx.params.generation);
				},
			},
		]),
	);
}

/** The services whose records the cached answers of a service's `actions` are made of. */
function sourcesOf(actions: ServiceSchema["actions"] = {}): Set<string> {
	return new Set(Object.values(actions).flatMap(action => (action as { cache?: Partial<CatalogueCache> }).cache?.from ?? []));
}

/**
 * The news of writes, for a node that caches. The node learns each generation of the services
 * `services` names, or by default of those its cached answers are made of: a write of a game
 * reaches the gateways and the games nodes, and wakes no authors or categories node. The answers
 * a write made unreachable are left to the cache's own eviction (the memory cache is LRU within
 * its bytes, Redis evicts answers by their TTL and `volatile-lru`): dropping them here cost each
 * write a walk of every key, with Redis a SCAN of the whole keyspace. With Redis, a node starts
 * from the generations stored there, so that a node that starts later agrees with the others.
 */
export function generationNews(services?: readonly string[]): Partial<ServiceSchema> {
	/** The services whose news a service with this schema hears. */
	const heardBy = (schema: ServiceSchema) => services ?? sourcesOf(schema.actions);
	// `merged` is a lifecycle hook of moleculer's that its typings leave out.
	return {
		// After the mixins are merged, before the events are registered: the service's own actions are known.
		merged(schema: ServiceSchema) {
			schema.events = { ...newsOf(heardBy(schema)), ...schema.events };
		},
		async started(this: Service) {
			const redis = redisOf(this.broker);
			if (redis) {
				const keys = DATA_SERVICE_NAMES.map(service => generationKey(this.broker.namespace, service));
				const stored = await redis.client.mget(keys).catch((err: Error) => {
					throw new Error(`${this.name} cannot start without the cache generations in the Redis of REDIS_URL: ${err.message}`);
				});
				DATA_SERVICE_NAMES.forEach((service, i) => learn(this.broker, service, Number(stored[i] ?? 0)));
			}
			if (!heard.has(this.broker)) heard.set(this.broker, new Set());
			for (const service of heardBy(this.schema)) heard.get(this.broker)!.add(service);
		},
	} as Partial<ServiceSchema>;
}

/**
 * For a catalogue service: `clearCache`, which moleculer-db calls after every write, moves the
 * service's generation on, here and then on every node that listens for it.
 */
export const generationsMoveOn: Partial<ServiceSchema> = {
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
};
