import {
	Errors,
	METRIC,
	type ActionCacheOptions,
	type ActionHandler,
	type ActionSchema,
	type Context,
	type Middleware,
	type Service,
} from "moleculer";
import { compress, COMPRESS_FROM_BYTES, type Encoding } from "../http/compression";
import { jsonInSteps } from "./json-in-steps";
import { answerName } from "./keys";

/** An answer as the cache keeps it: the JSON it is sent as, and each compressed form once asked for; a hit is sent as kept. */
export type StoredAnswer = { json: Buffer } & Partial<Record<Encoding, Buffer>>;

/** The bytes an answer takes in a cache: its forms and its key. */
export const storedBytes = (answer: StoredAnswer, key: string) =>
	answer.json.length + (answer.br?.length ?? 0) + (answer.gzip?.length ?? 0) + key.length;

/** What a gateway asks of a cached read: the encoding its client accepts, the tags its client holds (lib/cache/keys.ts heldTags). */
export interface HttpWish {
	encoding: Encoding | null;
	held: string[];
}

/** A lookup's outcome: the answer's key and tag, and the answer when it is kept (with the encoding wished for, if kept). */
export interface Found {
	key: string;
	tag: string;
	/** The client holds the current answer already. */
	notModified?: boolean;
	/** The answer when it is kept: its JSON, unless the encoding wished for was kept (then that form alone may come). */
	answer?: Partial<StoredAnswer>;
}

/** A cacher that keeps answers as sent, under keys stamped with the generations of what they are made of (docs/caching.md). */
export interface AnswerCache {
	/**
	 * The key and tag of the answer `name` (lib/cache/keys.ts answerName) made of `from`'s records, and the answer when kept;
	 * null when the cache cannot say now (Redis unreachable, late or behind a write), and the read goes to the service.
	 */
	lookup(name: string, from: readonly string[], wish: HttpWish | null): Promise<Found | null>;
	/** Keeps `answer`, the answer `name`, under `key`. */
	keep(name: string, key: string, answer: StoredAnswer): Promise<unknown>;
	/** Adds a compressed form to the answer `name` kept under `key`, if it is still kept. */
	addEncoding(name: string, key: string, encoding: Encoding, bytes: Buffer): Promise<unknown>;
	/** Moves `service`'s generation on after a write; false when the move could not be recorded (the write stands). */
	nextGeneration(service: string): Promise<boolean>;
	/** Keeps off the answers made of `service` until its generation has moved on again: a write was not recorded. */
	owe(service: string): void;
}

/** The `cache` option of a catalogue action: its answers are made of the records of `from`. */
export interface CatalogueCache extends ActionCacheOptions {
	from: readonly string[];
}

/** A cached action as a key is made from it: its name, its rules and where its answers come from. */
type CachedAction = Pick<ActionSchema, "name" | "params" | "cache">;

/** A fastest-validator rule as far as the key needs it. */
interface Rule {
	type?: string;
	strict?: unknown;
	props?: Record<string, unknown>;
	items?: unknown;
	convert?: boolean;
}

/** Of `value`, what `rule` lets through: of an object whose rule removes other keys, the keys it names (each read by its own rule); of a list, each item read by the items' rule. */
function readBy(rule: unknown, value: unknown): unknown {
	const { type, strict, props, items, convert } = (rule ?? {}) as Rule;
	// fastest-validator's `convert` makes one item a list of one (`sort`).
	if (type === "array" && convert && value !== undefined && value !== null && !Array.isArray(value)) return [readBy(items, value)];
	if (type === "array" && Array.isArray(value)) return value.map(item => readBy(items, item));
	if (type !== "object" || strict !== "remove" || !props || value === null || typeof value !== "object" || Array.isArray(value))
		return value;
	const sent = value as Record<string, unknown>;
	return Object.fromEntries(
		Object.keys(props)
			.filter(field => Object.hasOwn(sent, field))
			.map(field => [field, readBy(props[field], sent[field])]),
	);
}

/**
 * Of `params`, the fields the action's rules name, and inside them what their own rules name (`pageable`, its `sort`): with
 * `$$strict: "remove"` (and `strict: "remove"` inside) these are all it reads, so other fields stay out of the key. Only the rules'
 * names and shapes are used: a remote action's rules arrive as JSON, without their functions.
 */
export function fieldsRead(action: CachedAction, params: unknown): Record<string, unknown> {
	const rules = action.params as Record<string, unknown> | undefined;
	// Without it, a field the rules do not name would reach the handler but not the key.
	if (rules?.$$strict !== "remove") throw new Error(`${action.name} is cached, so its params must be declared with $$strict: "remove"`);
	const props = Object.fromEntries(Object.entries(rules).filter(([field]) => !field.startsWith("$$")));
	return readBy({ type: "object", strict: "remove", props }, params ?? {}) as Record<string, unknown>;
}

/** The services a cached action's answers are made of; none for an action that is not cached. */
export const sourcesOf = (action: Pick<ActionSchema, "cache">) => (action.cache as Partial<CatalogueCache> | undefined)?.from;

/** A cached read's answer for the gateway: its tag and its bytes in `encoding`; no bytes when the client holds it already (a 304). */
export class HttpAnswer {
	constructor(
		readonly tag: string,
		readonly body: Buffer | null,
		readonly encoding: Encoding | null,
	) {}
}

/**
 * An action's answer given as the JSON it is kept and sent as. The answer cache lets an action know it may answer so (`answersAsJson`):
 * a long list is then made into JSON a slice at a time, without holding all its records (services/games.service.ts).
 */
export class AnswerJson {
	constructor(readonly json: Buffer) {}
}

/**
 * The calls the answer cache runs, in this process, to keep their answers. The very contexts, not a mark in their `locals` or `meta`:
 * moleculer's Retry sends a failed call again with a copy of its context that shares both, and the copy may run without the cache.
 */
const keeping = new WeakSet<Context>();

/** Whether this call's answer may be an AnswerJson: the answer cache runs it, in this process, to keep the answer. */
export const answersAsJson = (ctx: Context): boolean => keeping.has(ctx);

/**
 * An answer made by running its action: as kept (none when the action answered nothing), and as records for the caller that ran it
 * (absent when the action answered its JSON: that caller then gets them parsed from it, as the callers of a kept answer do).
 */
interface Built {
	records?: unknown;
	stored: StoredAnswer | undefined;
}

/** How long failed lookups go unsaid after one was said, while they keep failing. */
const LOOKUP_FAILURE_QUIET_MS = 10_000;

/** What a call's meta carries: the gateway's wish, and moleculer's own `$cache: false`. */
type CacheMeta = { $http?: HttpWish; $cache?: boolean };

/**
 * Compresses an answer once per process even when several requests ask at once, and keeps the form beside it.
 * Forgotten only once the cache took the bytes and the lookups Redis answered meanwhile have run (promise steps only).
 */
function encoder(cache: AnswerCache, warn: (message: string) => void) {
	const making = new Map<string, Promise<Buffer>>();
	return (name: string, key: string, json: Buffer, encoding: Encoding): Promise<Buffer> => {
		const form = `${encoding} ${key}`;
		let made = making.get(form);
		if (!made) {
			made = compress(json, encoding);
			making.set(form, made);
			made.then(bytes => cache.addEncoding(name, key, encoding, bytes))
				.catch((err: Error) => warn(`Could not keep ${form}: ${err.message}`))
				.finally(() => setImmediate(() => making.delete(form)));
		}
		return made;
	};
}

/**
 * `call`, or a RequestTimeoutError at the call's timeout if it has not settled by then. moleculer's timeout settles only the caller's
 * own promise: a call nobody answers (a request NATS dropped, as nobody subscribed to its subject at that moment) stays unsettled,
 * and the reads that joined its making would wait for it forever.
 */
function byTimeout<T>(call: Promise<T>, ctx: Context): Promise<T> {
	const ms = ctx.options.timeout;
	if (!ms || ms <= 0) return call;
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Errors.RequestTimeoutError({ action: ctx.action?.name, nodeID: ctx.nodeID })), ms);
	});
	return Promise.race([call, late]).finally(() => clearTimeout(timer));
}

/**
 * The middleware for a cacher that keeps answers as sent: a cached action is looked up where it is called. A miss runs the action
 * once for all requests on that key and keeps it under the lookup's key, so a read begun before a write is not seen by later reads.
 * The gateway asks through `ctx.meta.$http` and gets an HttpAnswer; other callers get records.
 */
export function answerCacheMiddleware(cache: AnswerCache, warn: (message: string) => void): Middleware {
	const encoded = encoder(cache, warn);
	/** When a failed lookup was last said: a Redis that holds its commands fails every read's lookup, and one line says it. */
	let failureSaid = 0;

	/** The answer in the form the client accepts: kept already, or made now (and kept) when it is worth compressing. */
	async function forHttp(name: string, { key, tag }: Found, answer: Partial<StoredAnswer>, { encoding }: HttpWish): Promise<HttpAnswer> {
		const kept = encoding && answer[encoding];
		if (kept) return new HttpAnswer(tag, kept, encoding);
		const json = answer.json!;
		if (encoding === null || json.length < COMPRESS_FROM_BYTES) return new HttpAnswer(tag, json, null);
		return new HttpAnswer(tag, await encoded(name, key, json, encoding), encoding);
	}

	/** The answers being made, by key: a request for one joins its making instead of making it again (single flight). */
	const building = new Map<string, Promise<Built>>();

	/** Runs the action (asking another node not to look up again) and makes the JSON it is kept and sent as. */
	async function build(this: Service, next: ActionHandler, ctx: Context<unknown, CacheMeta>, remote: boolean): Promise<Built> {
		if (remote) ctx.meta.$cache = false;
		// A remote action's answer crosses NATS as records.
		else keeping.add(ctx);
		let records: unknown;
		try {
			records = await byTimeout(next.call(this, ctx) as Promise<unknown>, ctx);
		} finally {
			// The meta of a call flows back to its caller; this request's other calls may use the cache.
			if (remote) delete ctx.meta.$cache;
		}
		if (records instanceof AnswerJson) return { stored: { json: records.json } };
		const json = await jsonInSteps(records);
		return { records, stored: json && { json } };
	}

	function cached(next: ActionHandler, action: ActionSchema, remote: boolean): ActionHandler {
		const from = sourcesOf(action);
		if (!from) return next;
		const read = async function (this: Service, ctx: Context<unknown, CacheMeta>, wish: HttpWish | undefined): Promise<unknown> {
			if (ctx.meta.$cache === false) {
				if (!remote) {
					delete ctx.meta.$cache;
					return next.call(this, ctx);
				}
				// It crosses NATS to the node that answers; moleculer then merges the call's meta into the caller's, whose later calls
				// would skip the cache too. Kept on a failure, so that moleculer's Retry asks the store again.
				const answer: unknown = await next.call(this, ctx);
				delete ctx.meta.$cache;
				return answer;
			}
			const name = answerName(action.name!, fieldsRead(action, ctx.params));
			const found = await cache.lookup(name, from, wish ?? null).catch((err: Error) => {
				if (Date.now() - failureSaid > LOOKUP_FAILURE_QUIET_MS)
					warn(`The cache did not answer a lookup of ${action.name} (${err.message}): reads go to their services meanwhile.`);
				failureSaid = Date.now();
				return null;
			});
			if (!found) return next.call(this, ctx);
			// moleculer's own cacher counts these; this one looks answers up in its stead.
			ctx.broker.metrics.increment(METRIC.MOLECULER_CACHER_GET_TOTAL);
			if (found.notModified) {
				ctx.cachedResult = true;
				return new HttpAnswer(found.tag, null, null);
			}
			if (found.answer) {
				ctx.cachedResult = true;
				ctx.broker.metrics.increment(METRIC.MOLECULER_CACHER_FOUND_TOTAL);
				return wish ? forHttp(name, found, found.answer, wish) : JSON.parse(found.answer.json!.toString());
			}
			const joined = building.get(found.key);
			if (joined) {
				const { stored } = await joined;
				if (!stored) return undefined;
				return wish ? forHttp(name, found, stored, wish) : JSON.parse(stored.json.toString());
			}
			const built = build.call(this, next, ctx, remote);
			building.set(found.key, built);
			// Forgotten only once the cache has taken it, and the lookups it answered before that have come this far (as encoder's).
			const forget = () => setImmediate(() => building.delete(found.key));
			const made = await built.catch((err: unknown) => {
				// At once: a read that comes after the failure makes the answer again rather than join the failure.
				building.delete(found.key);
				throw err;
			});
			const { stored, records } = made;
			if (!stored) {
				forget();
				return records;
			}
			ctx.broker.metrics.increment(METRIC.MOLECULER_CACHER_SET_TOTAL);
			cache
				.keep(name, found.key, stored)
				.catch((err: Error) => warn(`Could not cache ${action.name}: ${err.message}`))
				.finally(forget);
			if (wish) return forHttp(name, found, stored, wish);
			return "records" in made ? records : JSON.parse(stored.json.toString());
		};
		return async function cachedRead(this: Service, ctx: Context<unknown, CacheMeta>): Promise<unknown> {
			const wish = ctx.meta.$http;
			// Neither crosses NATS nor reaches the calls the action makes.
			delete ctx.meta.$http;
			return read.call(this, ctx, wish).catch((err: unknown) => {
				// moleculer's Retry calls again with a copy of ctx that shares this meta: the retry answers as the gateway asked.
				if (wish) ctx.meta.$http = wish;
				throw err;
			});
		} as ActionHandler;
	}

	return {
		name: "AnswerCache",
		localAction: (next: ActionHandler, action: ActionSchema) => cached(next, action, false),
		remoteAction: (next: ActionHandler, action: ActionSchema) => cached(next, action, true),
	};
}
