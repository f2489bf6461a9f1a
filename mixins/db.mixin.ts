import path from "node:path";
import type { Context, ServiceSchema } from "moleculer";
import DbService, { MemoryAdapter, type DbServiceSettings } from "moleculer-db";
import MongoDbAdapter from "moleculer-db-adapter-mongo";
import type { ClaimStore } from "../lib/integrity/claims";
import { config, type CatalogueConfig } from "../lib/config/config";
import { errorHooks, type FailureTexts } from "../lib/catalogue/errors";
import { newId } from "../lib/catalogue/ids";
import { hideCredentials } from "../lib/config/uris";
import { cachedFrom, generationNews, generationsMoveOn } from "./cache.mixin";
import { NeDbFileAdapter } from "../lib/storage/nedb-file-adapter";

/** A stored record as the services hand it out: `id`, never `_id`. */
export type Row = { id: string };

/** A catalogue service's schema: moleculer-db settings and a typed store as `this`. */
export type CatalogueSchema<T extends Row, Methods = unknown> = ServiceSchema<DbServiceSettings, Store<T> & Methods>;

/** Lets a mixin be written against a typed `this` and still be listed in `mixins`. */
export const asMixin = <T extends Row>(schema: Partial<CatalogueSchema<T>>) => schema as Partial<ServiceSchema>;

export interface FindParams {
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
		updateMany(query: Record<string, unknown>, update: Record<string, unknown>): Promise<number>;
		removeMany(query: Record<string, unknown>): Promise<number>;
	};
	_find(ctx: Context, params: FindParams): Promise<T[]>;
	/** `R`: the records as `populate` makes them. */
	_list<R = T>(ctx: Context, params: FindParams & { page: number; pageSize: number }): Promise<{ rows: R[]; total: number }>;
	_get(ctx: Context, params: { id: string }): Promise<T>;
	_create(ctx: Context, params: Omit<T, "id">): Promise<T>;
	_update(ctx: Context, params: T): Promise<T>;
	_remove(ctx: Context, params: { id: string }): Promise<unknown>;
	transformDocuments(ctx: Context, params: FindParams, docs: Record<string, unknown>[]): Promise<unknown[]>;
	transformDocuments(ctx: Context, params: FindParams, doc: Record<string, unknown>): Promise<T>;
	/** Tells moleculer-db (its cache, its hooks) that a record was written outside `_create` and co. */
	entityChanged(type: "created" | "updated" | "removed", record: T, ctx: Context): Promise<void>;
}

/**
 * The service's records as the claims of lib/claims.ts reach them; `visible` is what a record must
 * match to count as existing (games hide their drafts).
 */
export function claimStore(store: Store, visible: Record<string, unknown> = {}): ClaimStore {
	return {
		findById: id => store.adapter.findOne({ _id: id, ...visible }),
		updateMany: (query, update) => store.adapter.updateMany(query, update),
	};
}

export interface DbOptions extends FailureTexts {
	/** Collection (and NeDB file) name. */
	collection: string;
	/**
	 * Fields that are filtered or sorted on, indexed in MongoDB only. NeDB keeps all the records
	 * that share a value of an indexed field in one array, which it copies whole whenever one of
	 * them is written: with an index on a game's category, each write of a game cost time in the
	 * number of games of its category. NeDB scans instead (it sorts in memory either way).
	 */
	indexes?: string[];
	/**
	 * Filtered fields that only a few records have (the claims of writes in progress). Their
	 * indexes are sparse: otherwise every record without the field shares one index entry, which
	 * NeDB rewrites in full whenever one of them changes, so each write costs time in the size of
	 * the collection.
	 */
	sparseIndexes?: string[];
	/** The fields that mark a write in progress: a claim (lib/claims.ts) or a game's draft. */
	claims?: string[];
}

/**
 * For actions that only read, so are safe to repeat: a call that failed because its node was
 * stopping, was cut off or was busy is sent again, to another node when there is one. Writes
 * never carry it (README, "Fault tolerance").
 */
export const readOnly = { retryPolicy: { enabled: true, retries: 2, delay: 100, maxDelay: 400, factor: 2 } };

/** How long a MongoDB operation waits for a reachable server before it fails. */
const MONGO_SERVER_WAIT_MS = 5000;

type StorageConfig = Pick<CatalogueConfig, "mongoUri" | "storage" | "dataDir">;

/**
 * The storage the configuration asks for: MongoDB (the database named in MONGO_URI) when a URI
 * is given, else a NeDB file under DATA_DIR, or memory only.
 */
export function createAdapter(collection: string, { mongoUri, storage, dataDir }: StorageConfig = config, claims: readonly string[] = []) {
	if (mongoUri) return new MongoDbAdapter(mongoUri, { useUnifiedTopology: true, serverSelectionTimeoutMS: MONGO_SERVER_WAIT_MS });
	if (storage === "memory") return new MemoryAdapter();
	return new NeDbFileAdapter(path.join(dataDir, `${collection}.db`), claims);
}

/** An index on one field, in whichever store the adapter talks to. */
async function createIndex(adapter: unknown, field: string, sparse: boolean): Promise<void> {
	if (adapter instanceof MongoDbAdapter) await adapter.collection.createIndex({ [field]: 1 }, { sparse });
	else await (adapter as NeDbAdapter).db.ensureIndex({ fieldName: field, sparse });
}

/**
 * Removes NeDB's indexes on `fields` where it has them: a file written by an earlier version
 * records them, and NeDB creates again every index its file records (`indexes` on DbOptions).
 */
export async function dropIndexes(db: Pick<NeDbAdapter["db"], "indexes" | "removeIndexAsync">, fields: string[]): Promise<void> {
	for (const field of fields) if (Object.hasOwn(db.indexes, field)) await db.removeIndexAsync(field);
}

/** What moleculer-db's MemoryAdapter exposes of its NeDB datastore. */
interface NeDbAdapter {
	db: NeDbCalls & {
		indexes: Record<string, unknown>;
		removeIndexAsync(fieldName: string): Promise<void>;
		ensureIndex(options: { fieldName: string; sparse: boolean }): Promise<void>;
		updateAsync(query: object, update: object, options: object): Promise<{ numAffected: number; affectedDocuments: unknown; upsert: boolean }>;
		findOneAsync: NeDbCalls["findOne"];
		insertAsync: NeDbCalls["insert"];
		removeAsync: NeDbCalls["remove"];
	};
}

/** The NeDB calls moleculer-db's MemoryAdapter makes through util.promisify. */
interface NeDbCalls {
	update(query: object, update: object, options: object): Promise<unknown[]>;
	findOne(query: object): Promise<unknown>;
	insert(records: object): Promise<unknown>;
	remove(query: object, options?: object): Promise<number>;
}

/**
 * moleculer-db 0.9 reaches NeDB 3 through util.promisify of its callback API, and for `update`
 * around a function that itself returns a Promise, so Node emits a deprecation warning (a stack
 * trace and a line on stderr) on every write (moleculer-db issue #408, open): a fifth of a game
 * update's time. These are the same calls through NeDB's own promise API, answering as
 * moleculer-db's adapter expects.
 */
function useNeDbPromises({ db }: NeDbAdapter): void {
	db.update = async (query, update, options) => {
		const { numAffected, affectedDocuments, upsert } = await db.updateAsync(query, update, options);
		return [numAffected, affectedDocuments, upsert];
	};
	db.findOne = query => db.findOneAsync(query);
	db.insert = records => db.insertAsync(records);
	db.remove = (query, options) => db.removeAsync(query, options);
}

/** Where the records live, for operators' messages; a MongoDB password is never shown. */
export function describeStorage({ mongoUri, storage, dataDir }: StorageConfig = config): string {
	if (mongoUri) return `MongoDB at ${hideCredentials(mongoUri)}`;
	return storage === "memory" ? "memory" : `NeDB files in ${dataDir}`;
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
export function dbMixin({ collection, indexes = [], sparseIndexes = [], claims = [], notFound, failures }: DbOptions) {
	return asMixin({
		// First, so its `clearCache` replaces moleculer-db's.
		mixins: [generationsMoveOn, generationNews(), storageOnly],
		settings: { idField: "id" },
		actions: {
			// The record with that id, or with `mapping`, a map id -> record of those that exist.
			get: {
				...readOnly,
				cache: cachedFrom(collection),
				params: {
					$$strict: "remove",
					id: [{ type: "string", empty: false }, { type: "array", items: "string" }],
					mapping: { type: "boolean", optional: true },
				},
				handler(ctx: Context<{ id: string | string[]; mapping?: boolean }>) {
					return this._get(ctx, ctx.params as { id: string });
				},
			},

			// { status: "ready" } once the store answers a read; its failure passes on. Readiness
			// (middlewares/readiness.middleware.ts) asks it, bounded by its call's timeout: not on HTTP.
			ready: {
				visibility: "public",
				async handler(): Promise<{ status: "ready" }> {
					await this.adapter.findOne({ _id: "" });
					return { status: "ready" };
				},
			},

			// How many records the collection holds. For operators (the REPL): not on HTTP.
			count: {
				...readOnly,
				visibility: "public",
				handler(): Promise<number> {
					return this.adapter.count({});
				},
			},
		},
		hooks: { error: errorHooks({ notFound, failures }) },
		// A new adapter for every service instance, so brokers in one process never share a store.
		merged(schema: Record<string, unknown>) {
			schema.collection = collection;
			schema.adapter = createAdapter(collection, config, claims);
		},
		beforeEntityCreate(entity: Record<string, unknown>) {
			return { ...entity, _id: newId() };
		},
		async afterConnected(this: Store) {
			if (this.adapter instanceof MemoryAdapter) {
				const neDb = this.adapter as unknown as NeDbAdapter;
				useNeDbPromises(neDb);
				await dropIndexes(neDb.db, indexes);
			} else for (const field of indexes) await createIndex(this.adapter, field, false);
			for (const field of sparseIndexes) await createIndex(this.adapter, field, true);
		},
	} as Partial<CatalogueSchema<Row>>);
}
