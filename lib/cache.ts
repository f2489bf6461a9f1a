import type { BrokerOptions } from "moleculer";
import type { CatalogueConfig } from "./config";

/**
 * How many answers the in-memory cache keeps, least recently used dropped first: every distinct
 * title filter is an answer of its own, so clients must not be able to grow it without bound.
 */
export const MEMORY_CACHE_ANSWERS = 1000;

/** How long an answer stays in Redis (seconds). Writes make it unreachable long before that. */
export const REDIS_CACHE_TTL = 3600;

/**
 * The cacher the configuration asks for (README, "Caching"): Redis, shared by every node, when
 * REDIS_URL is set; else memory in one process; else none, since nodes with caches of their own
 * would each need every write's news before answering from them.
 */
export function cacherOptions({ redisUrl, transporter }: Pick<CatalogueConfig, "redisUrl" | "transporter">): BrokerOptions["cacher"] {
	// ioredis takes the URL as it is; moleculer's types only know its options object.
	if (redisUrl) return { type: "Redis", options: { redis: redisUrl as unknown as Record<string, never>, ttl: REDIS_CACHE_TTL } };
	if (!transporter) return { type: "MemoryLRU", options: { max: MEMORY_CACHE_ANSWERS } };
	return undefined;
}

/** The services whose records are cached, each with a generation (README, "Caching"). */
export const CACHED_SERVICES = ["authors", "categories", "games"] as const;

/**
 * The Redis key holding a service's generation. Outside the cacher's prefix on purpose: cleaning
 * the cache must never reset a generation, or an old number could name new answers.
 */
export const generationKey = (namespace: string, service: string) => `catalogue-generation:${namespace}:${service}`;

/**
 * Lua for Redis: the next generation, past `ARGV[1]` (the highest the writer has seen) even when
 * Redis lost its counter (a restart without persistence), so generations never go back.
 */
export const NEXT_GENERATION = `
local next = redis.call("INCR", KEYS[1])
local seen = tonumber(ARGV[1])
if next <= seen then
	next = seen + 1
	redis.call("SET", KEYS[1], next)
end
return next`;

/** The part of a cached answer's key that changes whenever a record it is made of changes. */
export function generationStamp(generations: ReadonlyMap<string, number>, services: readonly string[]): string {
	return services.map(service => generations.get(service) ?? 0).join(".");
}
