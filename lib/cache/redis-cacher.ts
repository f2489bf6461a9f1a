import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Redis } from "ioredis";
import { LRUCache } from "lru-cache";
import { Cachers, type ServiceBroker } from "moleculer";
import { within } from "../async/within";
import { redisAnswersAgain, redisNotAnswering, redisRefusesEpoch } from "../config/start-failures";
import { hideCredentials } from "../config/uris";
import type { Encoding } from "../http/compression";
import { answerCacheMiddleware, storedBytes, type AnswerCache, type Found, type HttpWish, type StoredAnswer } from "./answers";
import { generationsKey } from "./keys";

export interface RedisAnswersOptions {
	/** REDIS_URL, as ioredis takes it. */
	redis: string;
	/** Seconds an answer stays in Redis. */
	ttl: number;
	/** Bytes of answers this node keeps beside Redis, used while Redis says they are current (CACHE_MAX_MB); 0 keeps none. */
	nearBytes: number;
	/** The largest of them. */
	nearEntryBytes: number;
}

/** How long a command may wait for Redis: a late Redis costs a read its cache and a write its generation, never its answer. */
const REDIS_WAIT_MS = 1000;

/** How often a node tries again to move a generation Redis did not take. */
const SETTLE_EVERY_MS = 1000;

/**
 * Lua: reads the services' generations in the same round trip as the answer, so no node serves an answer a write replaced.
 * Returns key, tag (as lib/cache/keys.ts answerTag) and `not-modified`, `held`, `hit` or `miss`; read-only, so a paused Redis runs it.
 * KEYS[1] the generations hash; ARGV: prefix, n, n services, encoding or '', key held or '', '1' if its form is held, client's tags.
 */
const LOOKUP = `#!lua flags=no-writes
local n = tonumber(ARGV[2])
local fields = { 'epoch' }
for i = 1, n do fields[i + 1] = ARGV[2 + i] end
local stored = redis.call('HMGET', KEYS[1], unpack(fields))
if not stored[1] then return { '', '', 'no-epoch' } end
local generations = {}
for i = 1, n do generations[i] = stored[i + 1] or '0' end
local key = ARGV[1] .. '@' .. stored[1] .. ':' .. table.concat(generations, '.')
local tag = redis.sha1hex(key)
for i = n + 6, #ARGV do
	if ARGV[i] == tag then return { key, tag, 'not-modified' } end
end
local encoding = ARGV[n + 3]
if key == ARGV[n + 4] then
	if encoding == '' or ARGV[n + 5] == '1' then return { key, tag, 'held' } end
	return { key, tag, 'held', false, redis.call('HGET', key, encoding) }
end
if encoding == '' then
	local json = redis.call('HGET', key, 'json')
	if not json then return { key, tag, 'miss' } end
	return { key, tag, 'hit', json }
end
local found = redis.call('HMGET', key, 'json', encoding)
if not found[1] then return { key, tag, 'miss' } end
return { key, tag, 'hit', found[1], found[2] }`;

/**
 * Lua: the epoch every key carries, kept if this Redis run made it, else replaced (a restored snapshot may be older than the records).
 * KEYS[1] the generations hash; ARGV: the server's run id, a random text.
 */
const ADOPT_EPOCH = `
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if epoch and string.sub(epoch, 1, #ARGV[1] + 1) == ARGV[1] .. '.' then return epoch end
epoch = ARGV[1] .. '.' .. ARGV[2]
redis.call('HSET', KEYS[1], 'epoch', epoch)
return epoch`;

/** Lua: one more form of the answer kept under KEYS[1], if it is still kept (its expiry unchanged). ARGV: encoding, bytes. */
const ADD_ENCODING = `
if redis.call('HEXISTS', KEYS[1], 'json') == 0 then return 0 end
return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])`;

/** The ioredis client with the scripts above defined on it (ioredis sends EVALSHA, and the script once when Redis lacks it). */
interface AnswersClient extends Redis {
	catalogueLookupBuffer(key: string, ...args: (string | number)[]): Promise<(Buffer | null)[]>;
	catalogueAdopt(key: string, run: string, random: string): Promise<string>;
	catalogueAddEncoding(key: string, encoding: Encoding, bytes: Buffer): Promise<number>;
}

/**
 * The cache a cluster shares (REDIS_URL): a hash per answer (`json`, then `br`, `gzip`), generations and epoch in one hash beside them.
 * Each lookup reads the generations in the same round trip, so a read's freshness does not rest on the writes' broadcasts.
 */
export class RedisAnswers extends Cachers.Redis<AnswersClient> implements AnswerCache {
	/** Whether this connection has checked the epoch: a Redis restarted from a snapshot may hold an old one. */
	private epochChecked = false;
	/** Counts the connections, so that a check begun on one is not taken for the next's. */
	private connection = 0;
	private checking: Promise<void> | null = null;
	/** The services with a write whose generation Redis has not taken yet: their answers are not looked up here meanwhile. */
	private readonly owed = new Set<string>();
	private settling: NodeJS.Timeout | null = null;
	private generations = "";
	/** The lookups asked in this turn of the event loop, not sent yet, by their arguments (lookup). */
	private readonly unsent = new Map<string, Promise<Found | null>>();
	/** This node's recent answers by name, with their keys: used only when Redis says the key is current, so Redis sends no bytes. */
	private readonly near: LRUCache<string, { key: string; answer: StoredAnswer }> | null;

	/** REDIS_URL without its password, for the log lines. */
	private readonly shownUrl: string;

	constructor(options: RedisAnswersOptions) {
		// ioredis takes the URL as it is; moleculer's types only know its options object.
		super(options as unknown as ConstructorParameters<typeof Cachers.Redis>[0]);
		this.near =
			options.nearBytes > 0
				? new LRUCache({
						maxSize: options.nearBytes,
						maxEntrySize: options.nearEntryBytes,
						sizeCalculation: ({ key, answer }) => storedBytes(answer, key),
					})
				: null;
		this.shownUrl = hideCredentials(options.redis);
	}

	override init(broker: ServiceBroker): void {
		super.init(broker);
		this.sayFailuresOnce(broker);
		this.generations = generationsKey(broker.namespace);
		this.client.defineCommand("catalogueLookup", { numberOfKeys: 1, lua: LOOKUP });
		this.client.defineCommand("catalogueAdopt", { numberOfKeys: 1, lua: ADOPT_EPOCH });
		this.client.defineCommand("catalogueAddEncoding", { numberOfKeys: 1, lua: ADD_ENCODING });
		// While the node starts, `epochAtStart` says a refusal (once, at WARN).
		this.client.on(
			"ready",
			() =>
				void this.checkEpoch().catch((err: Error) =>
					(broker.started ? this.logger.warn : this.logger.info)(`Could not check the cache's epoch: ${err.message}`),
				),
		);
		this.client.on("close", () => {
			this.epochChecked = false;
			this.connection++;
		});
	}

	/**
	 * In place of moleculer's error listener, which logs each of ioredis's reconnection attempts with its stack: one line when
	 * Redis stops answering (info while the node starts: the start timeout says it, naming REDIS_URL), one when it answers again.
	 */
	private sayFailuresOnce(broker: ServiceBroker): void {
		let failing = false;
		this.client.removeAllListeners("error");
		this.client.on("error", (err: Error & { code?: string }) => {
			(this as unknown as { connected: boolean }).connected = false;
			if (failing) return;
			failing = true;
			const line = redisNotAnswering(this.shownUrl, err.code ?? err.message);
			if (broker.started) this.logger.warn(line);
			else this.logger.info(line);
		});
		this.client.on("ready", () => {
			if (failing) this.logger.info(redisAnswersAgain(this.shownUrl));
			failing = false;
		});
	}

	/** Waits, for as long as it takes, until this connection has checked the epoch: the start timeout ends a wait too long. */
	async epochAtStart(): Promise<void> {
		let said: string | undefined;
		for (;;) {
			try {
				return await this.checkEpoch();
			} catch (err) {
				if (this.client.status !== "ready") {
					await new Promise(resolve => this.client.once("ready", resolve));
					continue;
				}
				// Redis answers but refuses (a read-only replica, out of memory): said once per reason, tried again a second later.
				const reason = (err as Error).message;
				if (reason !== said) this.logger.warn(redisRefusesEpoch(this.shownUrl, reason));
				said = reason;
				await sleep(SETTLE_EVERY_MS);
			}
		}
	}

	/** Resolves once this connection has checked the epoch; Redis commands wait meanwhile, and fail after ioredis's reconnection attempts. */
	checkEpoch(): Promise<void> {
		if (this.epochChecked) return Promise.resolve();
		this.checking ??= (async () => {
			const connection = this.connection;
			const run = /run_id:(\w+)/.exec(await this.client.info("server"))?.[1] ?? "";
			await this.client.catalogueAdopt(this.generations, run.slice(0, 12), randomBytes(6).toString("base64url"));
			if (connection === this.connection) this.epochChecked = true;
		})().finally(() => (this.checking = null));
		return this.checking;
	}

	private usable(): boolean {
		return this.client.status === "ready" && this.epochChecked;
	}

	/** Why the node cannot use this Redis yet, for the start timeout's line: it does not answer, or it refuses the epoch. */
	get notUsable(): "unreachable" | "refusing" | null {
		if (this.client.status !== "ready") return "unreachable";
		return this.epochChecked ? null : "refusing";
	}

	/**
	 * Sends one Redis lookup for all same lookups asked in this turn of the event loop. Only unsent lookups are joined,
	 * so any write a client saw answered has moved its generation before the joint lookup leaves.
	 */
	lookup(name: string, from: readonly string[], wish: HttpWish | null): Promise<Found | null> {
		if (!this.usable() || from.some(service => this.owed.has(service))) return Promise.resolve(null);
		const held = this.near?.get(name);
		const encoding = wish?.encoding ?? "";
		const args = [
			(this.prefix ?? "") + name,
			from.length,
			...from,
			encoding,
			held?.key ?? "",
			encoding && held?.answer[encoding] ? "1" : "",
			...(wish?.held ?? []),
		];
		const asked = JSON.stringify(args);
		let found = this.unsent.get(asked);
		if (!found) {
			found = new Promise<Found | null>((resolve, reject) =>
				setImmediate(() => {
					this.unsent.delete(asked);
					this.ask(name, held?.answer, encoding, args).then(resolve, reject);
				}),
			);
			this.unsent.set(asked, found);
		}
		return found;
	}

	private async ask(
		name: string,
		held: StoredAnswer | undefined,
		encoding: Encoding | "",
		args: (string | number)[],
	): Promise<Found | null> {
		const [key, tag, outcome, json, encoded] = await within(
			this.client.catalogueLookupBuffer(this.generations, ...args),
			REDIS_WAIT_MS,
		);
		const found = { key: key!.toString(), tag: tag!.toString() };
		switch (outcome!.toString()) {
			case "no-epoch":
				// The hash is gone (flushed, or evicted by a policy that evicts any key): a new epoch, then lookups again.
				this.epochChecked = false;
				void this.checkEpoch().catch(() => undefined);
				return null;
			case "not-modified":
				return { ...found, notModified: true };
			case "miss":
				return found;
			case "held": {
				const answer = encoded ? { ...held!, [encoding]: encoded } : held!;
				if (encoded) this.keepNear(name, found.key, answer);
				return { ...found, answer };
			}
		}
		const answer: StoredAnswer = { json: json!, ...(encoding && encoded && { [encoding]: encoded }) };
		this.keepNear(name, found.key, answer);
		return { ...found, answer };
	}

	/** Keeps `answer` beside Redis too, as the latest of `name`. */
	private keepNear(name: string, key: string, answer: StoredAnswer): void {
		this.near?.set(name, { key, answer });
	}

	/**
	 * Keeps `answer` in Redis under its key. Bounded like a lookup: until it settles, the answer cache holds the answer for the reads
	 * that join it, and a Redis that holds its writes (paused, out of memory with a blocking policy) would make that last as long as
	 * Redis holds them.
	 */
	async keep(name: string, key: string, answer: StoredAnswer): Promise<void> {
		this.keepNear(name, key, answer);
		const forms = Object.entries(answer).flat();
		const results = await within(
			this.client
				.multi()
				.hset(key, ...forms)
				.expire(key, this.opts.ttl!)
				.exec(),
			REDIS_WAIT_MS,
		);
		const failure = results?.find(([err]) => err)?.[0];
		if (failure) throw failure;
	}

	addEncoding(name: string, key: string, encoding: Encoding, bytes: Buffer): Promise<number> {
		const held = this.near?.peek(name);
		if (held?.key === key && !held.answer[encoding]) this.keepNear(name, key, { ...held.answer, [encoding]: bytes });
		return within(this.client.catalogueAddEncoding(key, encoding, bytes), REDIS_WAIT_MS);
	}

	/** Redis's HINCRBY, so every writer of the cluster draws from one counter; else the service is owed a move. */
	async nextGeneration(service: string): Promise<boolean> {
		if (this.client.status === "ready")
			try {
				await within(this.client.hincrby(this.generations, service, 1), REDIS_WAIT_MS);
				return true;
			} catch (err) {
				this.logger.warn(`Redis did not take ${service}'s next cache generation (${(err as Error).message}); trying again.`);
			}
		this.owe(service);
		return false;
	}

	/** Until Redis takes a move of `service`'s generation, its answers are neither looked up nor kept by this node. */
	owe(service: string): void {
		this.owed.add(service);
		this.settling ??= setInterval(() => void this.settle(), SETTLE_EVERY_MS).unref();
	}

	private async settle(): Promise<void> {
		for (const service of this.owed)
			if (this.client.status === "ready")
				await within(this.client.hincrby(this.generations, service, 1), REDIS_WAIT_MS).then(
					() => this.owed.delete(service),
					() => undefined,
				);
		if (this.owed.size === 0 && this.settling) {
			clearInterval(this.settling);
			this.settling = null;
		}
	}

	/** moleculer's clean, of this node's copies too: what is cleaned is asked of the services again. */
	override clean(match?: string | string[]): Promise<void> {
		this.near?.clear();
		return super.clean(match);
	}

	/** A Redis that does not answer is not waited for on the way out: `quit` would wait out ioredis's retries (SIGTERM at start). */
	override close(): Promise<void> {
		if (this.settling) clearInterval(this.settling);
		if (this.client.status === "ready") return super.close();
		this.client.disconnect();
		return Promise.resolve();
	}

	override middleware() {
		return answerCacheMiddleware(this, message => this.logger.warn(message));
	}
}
