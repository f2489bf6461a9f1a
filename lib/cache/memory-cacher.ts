import { LRUCache } from "lru-cache";
import { Cachers } from "moleculer";

export interface MemoryBytesOptions {
	/** Bytes of answers the cache may hold in all, measured as their JSON. */
	maxBytes: number;
	/** The largest answer kept; a bigger one is served but not cached. */
	maxEntryBytes: number;
}

/** An answer's size as the cache counts it: its JSON's bytes and its key's. */
export function answerBytes(answer: unknown, key: string): number {
	return Buffer.byteLength(JSON.stringify(answer) ?? "") + key.length;
}

/**
 * moleculer's MemoryLRU cacher bounded in bytes instead of in answers: it keeps the same
 * lru-cache, built with a total size and a largest entry, which moleculer's options cannot set.
 * Bounded by count, a thousand copies of one large list fit (docs/caching.md).
 */
export class MemoryBytesCacher extends Cachers.MemoryLRU {
	declare cache: LRUCache<string, NonNullable<unknown>>;

	constructor(options: MemoryBytesOptions) {
		super({});
		this.cache = new LRUCache({ maxSize: options.maxBytes, maxEntrySize: options.maxEntryBytes, sizeCalculation: answerBytes });
	}
}
