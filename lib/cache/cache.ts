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

/** Whether answers are cached in this process's memory alone (no Redis, no cluster), so no other process may write its records. */
export const cachesInThisProcess = ({
	redisUrl,
	transporter,
	cacheMaxBytes,
}: Pick<CatalogueConfig, "redisUrl" | "transporter" | "cacheMaxBytes">) => !redisUrl && !transporter && cacheMaxBytes > 0;

/**
 * The cacher the configuration asks for (docs/caching.md): Redis when REDIS_URL is set; else memory in one process (CACHE_MAX_MB);
 * else none, since nodes with caches of their own would each need every write's news before answering.
 */
export function cacherOptions({
	redisUrl,
	transporter,
	cacheMaxBytes,
}: Pick<CatalogueConfig, "redisUrl" | "transporter" | "cacheMaxBytes">): BrokerOptions["cacher"] {
	const maxEntryBytes = Math.floor(cacheMaxBytes * MEMORY_CACHE_ENTRY_SHARE);
	if (redisUrl)
		return named("AnswersInRedis", { redis: redisUrl, ttl: REDIS_CACHE_TTL, nearBytes: cacheMaxBytes, nearEntryBytes: maxEntryBytes });
	if (cachesInThisProcess({ redisUrl, transporter, cacheMaxBytes }))
		return named("AnswersInMemory", { maxBytes: cacheMaxBytes, maxEntryBytes });
	return undefined;
}
