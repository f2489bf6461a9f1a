import { createHash, hash } from "node:crypto";
import { LRUCache } from "lru-cache";
import stringify from "safe-stable-stringify";

// The names, keys and tags of cached answers, and the Redis key of the generations (docs/caching.md).

/** Params whose canonical JSON is longer than this are named in a key by its SHA-256 instead. */
export const KEY_JSON_LENGTH = 120;

/**
 * What an answer is the answer to: the action and the fields it reads as canonical JSON (keys sorted). Longer JSON becomes `#` and
 * its digest, which no JSON starts with, so no filter text can make two sets of fields read as one; short params skip the hashing.
 */
export function answerName(action: string, params: unknown): string {
	const json = stringify(params) ?? "";
	const fields = json.length <= KEY_JSON_LENGTH ? json : `#${hash("sha256", json, "base64url")}`;
	return `${action}:${fields}`;
}

/**
 * The part of a cached answer's key that changes whenever a record it is made of changes: the
 * cache's epoch, then the generation of each service in `services`, in their order.
 */
export function generationStamp(epoch: string, generations: readonly (number | string)[]): string {
	return `${epoch}:${generations.join(".")}`;
}

/** The key of the answer `name` (answerName) made of the generations `stamp` (generationStamp). */
export const answerKey = (prefix: string, name: string, stamp: string) => `${prefix}${name}@${stamp}`;

/** The tags handed out lately, so that a read asked again costs no hashing. */
const recentTags = new LRUCache<string, string>({ max: 10_000 });

/** The opaque part of the weak ETag of the answer under `key`: its SHA-1 in hex, as Redis's scripts compute it (`redis.sha1hex`) too. */
export function answerTag(key: string): string {
	let tag = recentTags.get(key);
	if (tag === undefined) recentTags.set(key, (tag = createHash("sha1").update(key).digest("hex")));
	return tag;
}

/** A tag as the ETag header carries it. */
export const etagOf = (tag: string) => `W/"${tag}"`;

/**
 * The opaque tags an `If-None-Match` header names, as `fresh` compares them (weakly: `W/` is
 * dropped); none under `Cache-Control: no-cache`, which asks for the whole answer. Not `*`: it
 * matches any answer there is, which a lookup cannot tell before the action has checked its
 * params (a refused read would be a 304), so the gateway's own check of the 200 answers it.
 */
export function heldTags(ifNoneMatch: string | undefined, cacheControl: string | undefined): string[] {
	if (!ifNoneMatch || (cacheControl && /(?:^|,)\s*no-cache\s*(?:,|$)/.test(cacheControl))) return [];
	return ifNoneMatch
		.split(",")
		.map(tag =>
			tag
				.trim()
				.replace(/^W\//, "")
				.replace(/^"(.*)"$/, "$1"),
		)
		.filter(tag => tag !== "" && tag !== "*");
}

/**
 * The Redis hash of the cache's epoch and every service's generation, outside the cacher's prefix so cleaning never resets one.
 * No expiry, so `volatile-lru` never evicts it; should it go anyway, the new epoch makes every older key unreachable.
 */
export const generationsKey = (namespace: string) => `catalogue-generations:${namespace}`;
