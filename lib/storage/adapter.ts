/**
 * Which store a catalogue service keeps its records in, from the configuration alone: MongoDB, else SQLite in DATA_DIR or in memory.
 * The services and the DB mixin (mixins/db.mixin.ts) do not know which.
 */
import type MongoDbAdapter from "moleculer-db-adapter-mongo";
import { inSteps } from "../async/steps";
import { cachesInThisProcess } from "../cache/cache";
import { config, type CatalogueConfig } from "../config/config";
import {
	feedlessServer,
	mongoChangesAfter,
	mongoMarkPublished,
	mongoPruneChanges,
	mongoUnpublished,
	recordedMongoWrite,
	type MongoStore,
} from "./mongo-feed";
import { missesWhole, SqliteAdapter, type Recorded, type RecordedWrite } from "./sqlite-adapter";

/** How long a MongoDB operation waits for a reachable server before it fails. */
const MONGO_SERVER_WAIT_MS = 5000;

type StorageConfig = Pick<CatalogueConfig, "mongoUri" | "storage" | "dataDir" | "redisUrl" | "transporter" | "cacheMaxBytes">;

/** What a collection's store keeps indexed (DbOptions in mixins/db.mixin.ts). */
export interface IndexedFields {
	indexes: readonly string[];
	sparseIndexes: readonly string[];
	orders: readonly (readonly string[])[];
	/** The fields every page filters on exactly, first in each order (games: draft or not). */
	leading: readonly string[];
}

/** The storage the configuration asks for: MongoDB (MONGO_URI's database) when a URI is given, else SQLite under DATA_DIR, or in memory. */
export function createAdapter(collection: string, fields: IndexedFields, storage: StorageConfig = config) {
	if (storage.mongoUri) {
		// Loaded only with MONGO_URI, so that an embedded node does not load the MongoDB driver at its start.
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const Mongo = require("moleculer-db-adapter-mongo") as typeof MongoDbAdapter;
		return new Mongo(storage.mongoUri, { useUnifiedTopology: true, serverSelectionTimeoutMS: MONGO_SERVER_WAIT_MS });
	}
	return new SqliteAdapter({
		dataDir: storage.storage === "memory" ? null : storage.dataDir,
		holding: cachesInThisProcess(storage) ? "alone" : "shared",
		collection,
		...fields,
	});
}

/**
 * MongoDB's indexes on a connected adapter, and its feed's collection and counter (lib/storage/mongo-feed.ts); SQLite's are made by
 * the adapter itself. Why the server cannot keep the feed that `feed` asks for, or undefined.
 */
export async function prepareStore(adapter: unknown, { indexes, sparseIndexes, orders, leading }: IndexedFields, feed: boolean) {
	if (adapter instanceof SqliteAdapter) return undefined;
	const { collection } = adapter as MongoStore;
	for (const field of indexes) await collection.createIndex({ [field]: 1 }, { sparse: false });
	for (const field of sparseIndexes) await collection.createIndex({ [field]: 1 }, { sparse: true });
	for (const order of orders) {
		await collection.createIndex(Object.fromEntries(order.map(field => [field, 1])), { sparse: false });
		// A descending page keeps equal keys in id order. MongoDB reads a sort from an index only when every key runs the index's
		// way, or every key the other way, so that order has an index of its own, or MongoDB would sort the collection in memory
		// (SQLite reads the ascending index backwards and sorts each run of equal keys).
		const sorted = order.at(-2)!;
		if (!leading.includes(sorted))
			await collection.createIndex(Object.fromEntries(order.map(field => [field, field === sorted ? -1 : 1])), { sparse: false });
	}
	return feed ? feedlessServer(adapter as MongoStore) : undefined;
}

/**
 * Why the store refuses writes now (a full disk under DATA_DIR), or undefined when it takes them. A refusing SQLite store is probed,
 * so readiness comes back once space does; MongoDB refuses each write itself.
 */
export function refusedWrites(adapter: unknown): string | undefined {
	if (!(adapter instanceof SqliteAdapter) || !adapter.refusedWrites) return undefined;
	adapter.probeWrites();
	return adapter.refusedWrites;
}

/** Whether a write failed because the record's id is already stored, in either store. */
export const isDuplicateId = (err: unknown) => {
	const { duplicateId, code } = err as { duplicateId?: boolean; code?: number };
	return duplicateId === true || code === 11000;
};

/** moleculer-db-adapter-mongo's writes, as its type declarations have them wrong (`insertMany`). */
type MongoAdapter = MongoStore & {
	insertMany(docs: Record<string, unknown>[]): Promise<unknown[]>;
	removeMany(query: Record<string, unknown>): Promise<number>;
};

/**
 * Changes the record of `query` (which names its `_id`) by `update` in one atomic step, in either store: the record after, or
 * nothing when none matched. A claim is taken with it in one statement, not a read and then a conditional write.
 */
export async function updateOne(adapter: unknown, query: Record<string, unknown>, update: Record<string, unknown>) {
	if (adapter instanceof SqliteAdapter) return adapter.updateOne(query, update);
	const { value } = await (adapter as MongoStore).collection.findOneAndUpdate(query, update, { returnDocument: "after" });
	return value ?? undefined;
}

/**
 * Runs `write` and records a change of each record it wrote in the collection's feed, in one transaction: how many records it
 * wrote, and the changes recorded. Without `changeOf` (CHANGE_FEED=off) the write alone, and no change.
 */
export async function recordedWrite(
	adapter: unknown,
	write: RecordedWrite,
	changeOf: ((id: string) => Record<string, unknown>) | null,
): Promise<{ written: number; changes: Recorded[] }> {
	if (adapter instanceof SqliteAdapter) return adapter.recordedWrite(write, changeOf);
	if (changeOf) return recordedMongoWrite(adapter as MongoStore, write, changeOf);
	const mongo = adapter as MongoAdapter;
	if ("insert" in write) return { written: (await mongo.insertMany(write.insert)).length, changes: [] };
	if ("update" in write) {
		// Without the feed's transaction (a lone server may have none), a batch counted whole then written: a removal between the two,
		// by an import that took over drafts past their lease, is not excluded.
		const matched =
			write.whole === undefined ? 0 : (await mongo.collection.find(write.query, { projection: { _id: 1 } }).toArray()).length;
		if (missesWhole(write, matched)) return { written: 0, changes: [] };
		// The records matched: the adapter's own updateMany counts only those whose values changed, and a write of the same values is a write.
		return { written: (await mongo.collection.updateMany(write.query, write.update)).matchedCount, changes: [] };
	}
	return { written: await mongo.removeMany(write.query), changes: [] };
}

/**
 * The records of `query` in `sort` order, `size` at a time: SQLite reads its rows a slice at a time; MongoDB's adapter reads them all,
 * handed on a slice at a time.
 */
export async function* findInSteps(
	adapter: unknown,
	params: { query: Record<string, unknown>; sort: string[] },
	size: number,
): AsyncGenerator<Record<string, unknown>[]> {
	if (adapter instanceof SqliteAdapter) yield* adapter.findInSteps(params, size);
	else yield* inSteps((await (adapter as MongoDbAdapter).find(params)) as Record<string, unknown>[], size);
}

/** The collection's change feed, in either store: its pages, prune, outbox and published mark (lib/storage/mongo-feed.ts). */
export function feedOf(
	adapter: unknown,
): Pick<SqliteAdapter, "changesAfter" | "pruneChanges" | "unpublished" | "markPublished" | "markReset"> {
	if (adapter instanceof SqliteAdapter) return adapter;
	const store = adapter as MongoStore;
	return {
		changesAfter: (after, limit) => mongoChangesAfter(store, after, limit),
		pruneChanges: (retention, keepUnpublished = false) => mongoPruneChanges(store, retention, keepUnpublished),
		unpublished: limit => mongoUnpublished(store, limit),
		markPublished: seq => mongoMarkPublished(store, seq),
		markReset: () => Promise.resolve(),
	};
}
