import type { Context, Service, ServiceSchema } from "moleculer";
import DbService, { type DbServiceSettings } from "moleculer-db";
import type { ClaimStore } from "../lib/integrity/write-claims";
import { inSteps } from "../lib/async/steps";
import { config } from "../lib/config/config";
import { errorHooks, notFound, writesRefused } from "../lib/catalogue/errors";
import { actionParams, storeIndexes, type Kind } from "../lib/catalogue/kind";
import { newId } from "../lib/catalogue/ids";
import { createAdapter, findInSteps, prepareStore, refusedWrites, updateOne } from "../lib/storage/adapter";
import { cachedFrom, generationNews, generationsMoveOn } from "./cache.mixin";

/** A stored record as the services hand it out: `id`, never `_id`. */
export type Row = { id: string };

/** A catalogue service's schema: moleculer-db settings and a typed store as `this`. */
export type CatalogueSchema<T extends Row, Methods = unknown> = ServiceSchema<DbServiceSettings, Store<T> & Methods>;

/** Lets a mixin be written against a typed `this` and still be listed in `mixins`. */
export const asMixin = <T extends Row, Methods = unknown>(schema: Partial<CatalogueSchema<T, Methods>>) => schema as Partial<ServiceSchema>;

interface FindParams {
	query?: Record<string, unknown>;
	sort?: string[];
	limit?: number;
	offset?: number;
	populate?: string[];
}

/** The moleculer-db methods the catalogue uses, with the types they really have. */
export interface Store<T extends Row = Row> {
	adapter: {
		find(params: FindParams): Promise<Record<string, unknown>[]>;
		count(params: FindParams): Promise<number>;
		findById(id: string): Promise<Record<string, unknown> | null | undefined>;
		findOne(query: Record<string, unknown>): Promise<Record<string, unknown> | null | undefined>;
		insert(record: Record<string, unknown>): Promise<Record<string, unknown>>;
		insertMany(records: Record<string, unknown>[]): Promise<Record<string, unknown>[]>;
		updateMany(query: Record<string, unknown>, update: Record<string, unknown>): Promise<number>;
		removeMany(query: Record<string, unknown>): Promise<number>;
	};
	/** The stored records of `query` in `sort` order, `size` at a time (lib/storage/adapter.ts). */
	findInSteps(params: { query: Record<string, unknown>; sort: string[] }, size: number): AsyncGenerator<Record<string, unknown>[]>;
	_find(ctx: Context, params: FindParams): Promise<T[]>;
	/** `R`: the records as `populate` makes them. */
	_list<R = T>(ctx: Context, params: FindParams & { page: number; pageSize: number }): Promise<{ rows: R[]; total: number }>;
	_get(ctx: Context, params: { id: string }): Promise<T>;
	_remove(ctx: Context, params: { id: string }): Promise<unknown>;
	transformDocuments(ctx: Context, params: FindParams, docs: Record<string, unknown>[]): Promise<unknown[]>;
	transformDocuments(ctx: Context, params: FindParams, doc: Record<string, unknown>): Promise<T>;
	/** Set once the store is connected and prepared: the mixins' timers (the feed's relay) wait for it. */
	storeConnected?: boolean;
	/** Tells moleculer-db (its cache, its hooks) that a record was written outside moleculer-db's own actions. */
	entityChanged(type: "created" | "updated" | "removed", record: T, ctx: Context): Promise<void>;
}

/**
 * The service's records as the claims of lib/integrity/write-claims.ts reach them; `visible` is what a record must
 * match to count as existing (games hide their drafts).
 */
export function claimStore(store: Store, visible: Record<string, unknown> = {}): ClaimStore {
	return {
		findById: id => store.adapter.findOne({ _id: id, ...visible }),
		updateMany: (query, update) => store.adapter.updateMany(query, update),
		updateOne: (query, update) => updateOne(store.adapter, { ...query, ...visible }, update),
	};
}

export interface DbOptions {
	/** The kind of record the service keeps (lib/catalogue/kinds.ts): its collection, indexes, texts and `get` params. */
	kind: Kind;
	/**
	 * Filtered fields that only a few records have (the claims of writes in progress), indexed over
	 * those records only.
	 */
	sparseIndexes?: string[];
	/** Fields every page filters on exactly, ahead of its sort (games: whether one is a draft). */
	leading?: string[];
	/** What a record must match to count as stored (games hide their drafts, writes in progress). */
	visible?: Record<string, unknown>;
}

/**
 * For actions that only read, so are safe to repeat: a call that failed because its node was
 * stopping, was cut off or was busy is sent again, to another node when there is one. Writes
 * never carry it (docs/operations.md, "Fault tolerance").
 */
export const safeToRetry = { retryPolicy: { enabled: true, retries: 2, delay: 100, maxDelay: 400, factor: 2 } };

/** Records filled in between two turns of the event loop by a populate. */
const POPULATE_STEP = 1000;

/**
 * The records each call's populates have found, by field and id. Keyed by the call's context, not kept in its `locals`: moleculer's
 * Retry sends a failed call again with a copy of its context that shares them, and a retry must not fill in records found before a
 * write it follows.
 */
const populatedBy = new WeakMap<Context, Record<string, Record<string, unknown>>>();

/**
 * moleculer-db `populates` from field -> the `get` action of its records: each field's records asked in one call for every id, and
 * filled in POPULATE_STEP records at a time, so a long list leaves the event loop free while it is made. A list populated a slice at a
 * time in one call asks only for the ids its earlier slices did not find.
 */
export function populatesInSteps(actions: Record<string, string>) {
	const rule = (field: string, action: string) => ({
		async handler(ids: string[], docs: Record<string, unknown>[], _rule: unknown, ctx: Context): Promise<void> {
			if (ids.length === 0) return;
			let populated = populatedBy.get(ctx);
			if (!populated) populatedBy.set(ctx, (populated = {}));
			// Without a prototype: an id is never read as one of Object's own fields.
			const found = (populated[field] ??= Object.create(null) as Record<string, unknown>);
			const asked = ids.filter(id => !Object.hasOwn(found, id));
			if (asked.length > 0)
				Object.assign(found, await ctx.call<Record<string, unknown>, object>(action, { id: asked, mapping: true }));
			for await (const slice of inSteps(docs, POPULATE_STEP)) for (const doc of slice) doc[field] = found[doc[field] as string];
		},
	});
	return Object.fromEntries(Object.entries(actions).map(([field, action]) => [field, rule(field, action)]));
}

/** moleculer-db's storage methods without its actions: each service publishes its own. */
const storageOnly: Partial<ServiceSchema> = {
	mixins: [DbService as unknown as Partial<ServiceSchema>],
	actions: { find: false, count: false, list: false, create: false, insert: false, get: false, update: false, remove: false },
};

/**
 * Storage for one catalogue service: the adapter, time-ordered string ids, `id` in place of
 * `_id`, a cached `get` action that takes one id or a batch (the populates use it), the cache
 * moved on by every write, and the service's error texts applied to every failure.
 */
export function dbMixin({ kind, sparseIndexes = [], leading = [], visible = {} }: DbOptions) {
	const collection = kind.service;
	const indexed = { ...storeIndexes(kind, leading), sparseIndexes };
	return asMixin({
		// First, so its `clearCache` replaces moleculer-db's.
		mixins: [generationsMoveOn, generationNews(), storageOnly],
		settings: { idField: "id" },
		actions: {
			// The record with that id, or with `mapping`, a map id -> record of those that exist.
			get: {
				...safeToRetry,
				cache: cachedFrom(collection),
				params: actionParams(kind).get,
				handler(ctx: Context<{ id: string | string[]; mapping?: boolean }>) {
					return this._get(ctx, ctx.params as { id: string });
				},
			},

			// { status: "ready" } once the store answers a read; its failure passes on, and a store
			// that refuses writes (a full disk) fails with WRITES_REFUSED. Readiness
			// (middlewares/readiness.middleware.ts) asks it, bounded by its call's timeout: not on HTTP.
			ready: {
				visibility: "public",
				async handler(): Promise<{ status: "ready" }> {
					await this.adapter.findOne({ _id: "" });
					const refused = refusedWrites(this.adapter);
					if (refused) throw writesRefused(refused);
					return { status: "ready" };
				},
			},

			// How many records the collection holds, writes in progress left out. For operators (the REPL): not on HTTP.
			count: {
				...safeToRetry,
				visibility: "public",
				handler(): Promise<number> {
					return this.adapter.count({ query: visible });
				},
			},
		},
		methods: {
			findInSteps(params: { query: Record<string, unknown>; sort: string[] }, size: number) {
				return findInSteps(this.adapter, params, size);
			},
		},
		hooks: { error: errorHooks({ notFound: notFound(kind.unknown), failures: kind.failures }) },
		// A new adapter for every service instance, so brokers in one process never share a store.
		merged(schema: Record<string, unknown>) {
			schema.collection = collection;
			schema.adapter = createAdapter(collection, indexed, config);
		},
		beforeEntityCreate(entity: Record<string, unknown>) {
			return { ...entity, _id: newId() };
		},
		async afterConnected(this: Store & Pick<Service, "logger">) {
			const feedless = await prepareStore(this.adapter, indexed, config.changeFeed);
			if (feedless === undefined) {
				this.storeConnected = true;
				return;
			}
			// One line and the end, as for an unusable DATA_DIR: every recorded write would fail.
			this.logger.fatal(
				`MONGO_URI's MongoDB cannot keep the change feed: ${feedless}. Make it a replica set (docs/storage.md), or start with CHANGE_FEED=off.`,
			);
			process.exit(1);
		},
	} as Partial<CatalogueSchema<Row>>);
}
