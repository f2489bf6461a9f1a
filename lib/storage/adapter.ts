/**
 * Which store a catalogue service keeps its records in, chosen from the configuration alone:
 * MongoDB when a URI is configured, else a NeDB file under DATA_DIR, or memory only (tests).
 * The services and the DB mixin (mixins/db.mixin.ts) do not know which.
 */
import path from "node:path";
import { MemoryAdapter } from "moleculer-db";
import MongoDbAdapter from "moleculer-db-adapter-mongo";
import { config, type CatalogueConfig } from "../config/config";
import { hideCredentials } from "../config/uris";
import { NeDbFileAdapter } from "./nedb-file-adapter";

/** How long a MongoDB operation waits for a reachable server before it fails. */
const MONGO_SERVER_WAIT_MS = 5000;

type StorageConfig = Pick<CatalogueConfig, "mongoUri" | "storage" | "dataDir">;

/** The NeDB file a collection is kept in under DATA_DIR: the adapter's and the backup's one spelling of it. */
export const dataFile = (dataDir: string, collection: string): string => path.join(dataDir, `${collection}.db`);

/**
 * The storage the configuration asks for: MongoDB (the database named in MONGO_URI) when a URI
 * is given, else a NeDB file under DATA_DIR, or memory only.
 */
export function createAdapter(collection: string, { mongoUri, storage, dataDir }: StorageConfig = config, claims: readonly string[] = []) {
	if (mongoUri) return new MongoDbAdapter(mongoUri, { useUnifiedTopology: true, serverSelectionTimeoutMS: MONGO_SERVER_WAIT_MS });
	if (storage === "memory") return new MemoryAdapter();
	return new NeDbFileAdapter(dataFile(dataDir, collection), claims);
}

/** The part of moleculer-db-adapter-mongo's adapter its type declarations leave out. */
interface MongoCollection {
	collection: { createIndex(keys: Record<string, 1>, options: { sparse: boolean }): Promise<string> };
}

/** An index on one field, in whichever store the adapter talks to. */
async function createIndex(adapter: unknown, field: string, sparse: boolean): Promise<void> {
	if (adapter instanceof MongoDbAdapter) await (adapter as unknown as MongoCollection).collection.createIndex({ [field]: 1 }, { sparse });
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
		updateAsync(
			query: object,
			update: object,
			options: object,
		): Promise<{ numAffected: number; affectedDocuments: unknown; upsert: boolean }>;
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

/**
 * Why the store refuses writes now (a full disk under DATA_DIR), or undefined when it takes them.
 * Only a NeDB file can tell: MongoDB refuses each write itself, with the operation's error.
 */
export const refusedWrites = (adapter: unknown): string | undefined =>
	adapter instanceof NeDbFileAdapter ? adapter.refusedWrites : undefined;

/** Where the records live, for operators' messages; a MongoDB password is never shown. */
export function describeStorage({ mongoUri, storage, dataDir }: StorageConfig = config): string {
	if (mongoUri) return `MongoDB at ${hideCredentials(mongoUri)}`;
	return storage === "memory" ? "memory" : `NeDB files in ${dataDir}`;
}

/**
 * Readies a connected adapter: NeDB's calls through its own promises, and the indexes of
 * `indexes` (MongoDB only; dropped from NeDB files) and `sparseIndexes` (every store).
 */
export async function prepareStore(adapter: unknown, indexes: string[], sparseIndexes: string[]): Promise<void> {
	if (adapter instanceof MemoryAdapter) {
		const neDb = adapter as unknown as NeDbAdapter;
		useNeDbPromises(neDb);
		await dropIndexes(neDb.db, indexes);
	} else for (const field of indexes) await createIndex(adapter, field, false);
	for (const field of sparseIndexes) await createIndex(adapter, field, true);
}
