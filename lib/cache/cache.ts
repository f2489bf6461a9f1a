import { Cachers, type BrokerOptions } from "moleculer";
import type { CatalogueConfig } from "../config/config";
import { MemoryAnswers } from "./memory-cacher";
import { RedisAnswers } from "./redis-cacher";

/**
 * The largest share of the in-memory cache one answer may take: a bigger one is served but not
 * kept, so no single list can push every other answer out. Half, so that the full `GET /game` of
 * a big catalogue, with its compressed forms, is still kept under the default bound rather than
 * made again for every client that asks (docs/caching.md gives the sizes).
 */
export const MEMORY_CACHE_ENTRY_SHARE = 1 / 2;

/** How long an answer stays in Redis (seconds). Writes make it unreachable long before that. */
const REDIS_CACHE_TTL = 3600;

/**
 * The cachers below by name, so that broker options name them as plain data (they travel to any
 * node that asks for `$node.options`) and every broker makes a cacher of its own. moleculer's
 * types have `register` take a cacher; its code takes the class, of which `resolve` makes one.
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
 * The cacher the configuration asks for (docs/caching.md): Redis, shared by every node, when
 * REDIS_URL is set; else memory in one process, bounded in bytes (CACHE_MAX_MB); else none, since
 * nodes with caches of their own would each need every write's news before answering from them.
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
