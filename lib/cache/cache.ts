import { Cachers, type BrokerOptions } from "moleculer";
import type { CatalogueConfig } from "../config/config";
import { MemoryAnswers } from "./memory-cacher";
import { RedisAnswers } from "./redis-cacher";

/**
 * The largest share of the in-memory cache one answer may take: a bigger one is served but not kept.
 * Half, so a big catalogue's `GET /game` is still kept under the default bound (docs/caching.md gives the sizes).
 */
export const MEMORY_CACHE_ENTRY_SHARE = 1 / 2;

/** How long an answer stays in Redis (seconds). Writes make it unreachable long before that. */
const REDIS_CACHE_TTL = 3600;

/**
 * The cachers by name, so broker options name them as plain data (they travel in `$node.options`) and each broker makes its own.
 * moleculer's types have `register` take a cacher; its code takes the class.
 */
const CACHERS = { AnswersInRedis: RedisAnswers, AnswersInMemory: MemoryAnswers };
for (const [name, cacher] of Object.entries(CACHERS)) Cachers.register(name, cacher as unknown as Cachers.Base<object>);

/** A cacher by its name above, as broker options take it. */
const named = (type: keyof typeof CACHERS, options: object) => ({ type, options }) as unknown as BrokerOptions["cacher"];

type CacheConfig = Pick<CatalogueConfig, "mongoUri" | "redisUrl" | "transporter" | "cacheMaxBytes">;

/**
 * Whether answers are cached in this process's memory alone (no Redis, no cluster), so no other process may write its records:
 * SQLite's lock file refuses them (lib/storage/sqlite-database.ts). Not on MongoDB, which cannot refuse a second process.
 */
export const cachesInThisProcess = ({ mongoUri, redisUrl, transporter, cacheMaxBytes }: CacheConfig) =>
	!mongoUri && !redisUrl && !transporter && cacheMaxBytes > 0;

/**
 * The cacher the configuration asks for (docs/caching.md): Redis when REDIS_URL is set; else memory in one process on SQLite
 * (CACHE_MAX_MB); else none, since processes with caches of their own would each need every other's writes before answering.
 */
export function cacherOptions({ mongoUri, redisUrl, transporter, cacheMaxBytes }: CacheConfig): BrokerOptions["cacher"] {
	const maxEntryBytes = Math.floor(cacheMaxBytes * MEMORY_CACHE_ENTRY_SHARE);
	if (redisUrl)
		return named("AnswersInRedis", { redis: redisUrl, ttl: REDIS_CACHE_TTL, nearBytes: cacheMaxBytes, nearEntryBytes: maxEntryBytes });
	if (cachesInThisProcess({ mongoUri, redisUrl, transporter, cacheMaxBytes }))
		return named("AnswersInMemory", { maxBytes: cacheMaxBytes, maxEntryBytes });
	return undefined;
}
