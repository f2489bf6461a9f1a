import { hash } from "node:crypto";
import type { BrokerOptions } from "moleculer";
import { LRUCache } from "lru-cache";
import stringify from "safe-stable-stringify";
import type { CatalogueConfig } from "../config/config";
import { MemoryBytesCacher } from "./memory-cacher";

/**
 * The largest share of the in-memory cache one answer may take: a bigger one is served but not
 * kept, so no single list (22 MB of JSON at 100,000 games) can push every other answer out.
 */
export const MEMORY_CACHE_ENTRY_SHARE = 1 / 8;

/** How long an answer stays in Redis (seconds). Writes make it unreachable long before that. */
const REDIS_CACHE_TTL = 3600;

/**
 * The cacher the configuration asks for (docs/caching.md): Redis, shared by every node, when
 * REDIS_URL is set; else memory in one process, bounded in bytes (CACHE_MAX_MB); else none, since nodes with caches of their own
 * would each need every write's news before answering from them.
 */
export function cacherOptions({
	redisUrl,
	transporter,
	cacheMaxBytes,
}: Pick<CatalogueConfig, "redisUrl" | "transporter" | "cacheMaxBytes">): BrokerOptions["cacher"] {
	// ioredis takes the URL as it is; moleculer's types only know its options object.
	if (redisUrl) return { type: "Redis", options: { redis: redisUrl as unknown as Record<string, never>, ttl: REDIS_CACHE_TTL } };
	// A cacher of its own for every call: a broker's cacher belongs to that broker.
	if (!transporter && cacheMaxBytes > 0)
		return new MemoryBytesCacher({ maxBytes: cacheMaxBytes, maxEntryBytes: Math.floor(cacheMaxBytes * MEMORY_CACHE_ENTRY_SHARE) });
	return undefined;
}

/** Params whose canonical JSON is longer than this are named in a key by its SHA-256 instead. */
export const KEY_JSON_LENGTH = 120;

/**
 * The key of a cached answer: the action, the fields it reads as canonical JSON (keys sorted) and
 * the generation stamp. Longer JSON is replaced by `#` and its digest, which no JSON starts
 * with, so no filter text can make two different sets of fields read as one. Short params, the
 * usual case, cost no hashing: a digest per read took a tenth of the embedded reads.
 */
export function answerKey(action: string, params: unknown, stamp: string): string {
	const json = stringify(params) ?? "";
	const fields = json.length <= KEY_JSON_LENGTH ? json : `#${hash("sha256", json, "base64url")}`;
	return `${action}:${fields}@${stamp}`;
}

/** The tags handed out lately, so that a read asked again costs no hashing. */
const recentTags = new LRUCache<string, string>({ max: 10_000 });

/**
 * The weak ETag of the answer cached under `key`, as this process hands it out: opaque, since the
 * key holds the params and the generations. `epoch` (new at every start) keeps a tag from before
 * a restart from matching: in-memory generations start again at 0, so the same key may then name
 * other records.
 */
export function answerTag(key: string, epoch: string): string {
	const named = `${epoch}\n${key}`;
	let tag = recentTags.get(named);
	if (tag === undefined) recentTags.set(named, (tag = `W/"${hash("sha256", named, "base64url").slice(0, 27)}"`));
	return tag;
}

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
