import { LRUCache } from "lru-cache";
import { Cachers } from "moleculer";
import type { Encoding } from "../http/compression";
import { answerCacheMiddleware, storedBytes, type AnswerCache, type Found, type HttpWish, type StoredAnswer } from "./answers";
import { answerKey, answerTag, generationStamp } from "./keys";

export interface MemoryBytesOptions {
	/** Bytes of answers the cache may hold in all: their JSON, their compressed forms and their keys. */
	maxBytes: number;
	/** The largest answer kept; a bigger one is served but not cached. */
	maxEntryBytes: number;
}

/**
 * The cache of one process (the embedded layout): moleculer's MemoryLRU with its lru-cache bounded in bytes, not in answers,
 * holding answers as sent and the services' generations, which this process moves: every write passes through it.
 */
export class MemoryAnswers extends Cachers.MemoryLRU implements AnswerCache {
	declare cache: LRUCache<string, StoredAnswer>;
	private readonly generations = new Map<string, number>();
	private readonly maxEntryBytes: number;
	/**
	 * Of each answer kept, its name; of each name, its last key. Keeping an answer drops the one kept before under the same name
	 * (a write made it unreachable), so the cache does not fill with stale lists; both forget what the cache drops.
	 */
	private readonly nameOf = new Map<string, string>();
	private readonly lastKey = new Map<string, string>();

	constructor(options: MemoryBytesOptions) {
		super({});
		this.maxEntryBytes = options.maxEntryBytes;
		this.cache = new LRUCache({
			maxSize: options.maxBytes,
			maxEntrySize: options.maxEntryBytes,
			sizeCalculation: storedBytes,
			// "set": the same key kept again (with a compressed form), not dropped.
			dispose: (_answer, key, reason) => reason !== "set" && this.forget(key),
		});
	}

	private forget(key: string): void {
		const name = this.nameOf.get(key);
		this.nameOf.delete(key);
		if (name !== undefined && this.lastKey.get(name) === key) this.lastKey.delete(name);
	}

	/** The stamp's epoch is the process's instance id, new at every start: generations start again at 0 and must not name old tags. */
	lookup(name: string, from: readonly string[], wish: HttpWish | null): Promise<Found> {
		const stamp = generationStamp(
			this.broker.instanceID,
			from.map(service => this.generations.get(service) ?? 0),
		);
		const key = answerKey(this.prefix ?? "", name, stamp);
		const tag = answerTag(key);
		if (wish?.held.includes(tag)) return Promise.resolve({ key, tag, notModified: true });
		return Promise.resolve({ key, tag, answer: this.cache.get(key) });
	}

	keep(name: string, key: string, answer: StoredAnswer): Promise<void> {
		const before = this.lastKey.get(name);
		if (before !== undefined && before !== key) this.cache.delete(before);
		// lru-cache does not keep an answer over its share: nothing to remember then.
		if (this.cache.set(key, answer).has(key)) {
			this.nameOf.set(key, name);
			this.lastKey.set(name, key);
		}
		return Promise.resolve();
	}

	/** Kept only while the answer with it stays within its share: lru-cache would drop an entry grown past it. */
	addEncoding(_name: string, key: string, encoding: Encoding, bytes: Buffer): Promise<void> {
		const answer = this.cache.peek(key);
		if (answer && !answer[encoding] && storedBytes({ ...answer, [encoding]: bytes }, key) <= this.maxEntryBytes)
			this.cache.set(key, { ...answer, [encoding]: bytes });
		return Promise.resolve();
	}

	nextGeneration(service: string): Promise<boolean> {
		this.generations.set(service, (this.generations.get(service) ?? 0) + 1);
		return Promise.resolve(true);
	}

	/** Never: every write of this process moves its generation here. */
	owe(): void {}

	override middleware() {
		return answerCacheMiddleware(this, message => this.logger.warn(message));
	}
}
