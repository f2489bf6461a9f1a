/**
 * A collection's change feed in MongoDB (docs/followers.md): each change written in the transaction of its write, in
 * `<collection>_changes` under its `seq` as `_id`, the seqs handed out by a counter in `catalogue_meta` that the same transaction
 * raises. Transactions need a replica set; a feed on a server that is not one stops the start (`feedlessServer`).
 */
import { feedName, publishedKey } from "../feed/changes";
import { missesWhole, NotWhole, type RecordedWrite, type Recorded } from "./sqlite-adapter";

type Doc = Record<string, unknown>;

/** The few calls of the mongodb 3.7 driver the feed makes; its own types are not installed. */
interface Session {
	withTransaction(run: () => Promise<void>): Promise<unknown>;
	endSession(): Promise<void> | void;
}
interface Options {
	session?: Session;
	[option: string]: unknown;
}
interface Cursor {
	sort(spec: Doc): Cursor;
	limit(count: number): Cursor;
	toArray(): Promise<Doc[]>;
}
interface Collection {
	find(query: Doc, options?: Options): Cursor;
	insertMany(docs: Doc[], options?: Options): Promise<unknown>;
	updateMany(query: Doc, update: Doc, options?: Options): Promise<{ matchedCount: number }>;
	updateOne(query: Doc, update: Doc, options?: Options): Promise<unknown>;
	deleteMany(query: Doc, options?: Options): Promise<{ deletedCount?: number }>;
	findOneAndUpdate(query: Doc, update: Doc, options?: Options): Promise<{ value: Doc | null }>;
	createIndex(keys: Doc, options?: Doc): Promise<string>;
}
/** moleculer-db-adapter-mongo's adapter once connected, as its type declarations leave it out. */
export interface MongoStore {
	client: { startSession(): Session };
	db: { collection(name: string, options?: Doc): Collection; admin(): { command(command: Doc): Promise<Doc> } };
	collection: Collection & { collectionName: string };
}

/** Where the counter of `collection`'s seqs is kept, in `catalogue_meta` beside its published mark (publishedKey). */
const counterKey = (collection: string) => `feed ${collection}`;

/**
 * The feed is read at read concern `majority` outside the writes' transactions (which have their own): a change whose write a
 * failover rolls back is never handed out, and its seq, handed out again, never skipped.
 */
const READ = { readConcern: { level: "majority" } };

const meta = (store: MongoStore, options?: Doc) => store.db.collection("catalogue_meta", options);
const feedOf = (store: MongoStore, options?: Doc) => store.db.collection(feedName(store.collection.collectionName), options);

/**
 * Why the server of `store` cannot keep a feed (it is not a replica set, so it has no transactions), or undefined when it can.
 * Makes the feed's collection and counter beforehand: MongoDB before 4.4 makes no collection inside a transaction.
 */
export async function feedlessServer(store: MongoStore): Promise<string | undefined> {
	const hello = await store.db.admin().command({ isMaster: 1 });
	if (hello.setName === undefined && hello.msg !== "isdbgrid")
		return "its server is not a replica set, and a change is written in its write's transaction, which needs one";
	await feedOf(store).createIndex({ at: 1 });
	const key = counterKey(store.collection.collectionName);
	await meta(store).updateOne({ _id: key }, { $setOnInsert: { seq: 0 } }, { upsert: true });
	return undefined;
}

/** `feedOf`'s documents as the feed hands them out: the change and its seq. */
const recorded = (docs: Doc[]): Recorded[] => docs.map(({ _id, change }) => ({ ...(change as Doc), seq: _id as number }));

/**
 * Runs `write` and appends `changeOf(id)` for each record it wrote, in one transaction (MongoDB runs it again on a conflict with
 * another, so each run makes its changes anew): how many records it wrote, and the changes appended in feed order.
 */
export async function recordedMongoWrite(
	store: MongoStore,
	write: RecordedWrite,
	changeOf: (id: string) => Doc,
): Promise<{ written: number; changes: Recorded[] }> {
	const session = store.client.startSession();
	const { collection } = store;
	let outcome = { written: 0, changes: [] as Recorded[] };
	try {
		await session.withTransaction(async () => {
			let ids: string[];
			if ("insert" in write) {
				await collection.insertMany(write.insert, { session });
				ids = write.insert.map(entity => String(entity._id));
			} else {
				// The records of the query in the transaction's snapshot: another write to one of them makes this one run again. An update
				// to the values a record has already writes nothing to it; the feed's counter below still orders it with every recorded write.
				// In id order, as the SQLite store numbers them (lib/storage/sqlite-adapter.ts recordedWrite).
				const found = await collection
					.find(write.query, { projection: { _id: 1 }, session })
					.sort({ _id: 1 })
					.toArray();
				ids = found.map(doc => String(doc._id));
				if (missesWhole(write, ids.length)) throw new NotWhole();
				const these = { _id: { $in: ids } };
				if (ids.length > 0 && "update" in write) await collection.updateMany(these, write.update, { session });
				if (ids.length > 0 && "remove" in write) await collection.deleteMany(these, { session });
			}
			if (ids.length === 0) {
				outcome = { written: 0, changes: [] };
				return;
			}
			const counter = await meta(store).findOneAndUpdate(
				{ _id: counterKey(collection.collectionName) },
				{ $inc: { seq: ids.length } },
				{ upsert: true, returnDocument: "after", session },
			);
			const first = (counter.value!.seq as number) - ids.length + 1;
			const at = Date.now();
			const docs = ids.map((id, index) => ({ _id: first + index, at, change: changeOf(id) }));
			await feedOf(store).insertMany(docs, { session });
			outcome = { written: ids.length, changes: recorded(docs) };
		});
	} catch (err) {
		if (!(err instanceof NotWhole)) throw err;
	} finally {
		await session.endSession();
	}
	return outcome;
}

/** The latest seq handed out (0 before any) and the seq up to which the feed is published. */
async function positions(store: MongoStore): Promise<{ last: number; published: number }> {
	const name = store.collection.collectionName;
	const docs = await meta(store, READ)
		.find({ _id: { $in: [counterKey(name), publishedKey(name)] } })
		.toArray();
	const value = (key: string, field: string) => (docs.find(doc => doc._id === key)?.[field] as number | undefined) ?? 0;
	return { last: value(counterKey(name), "seq"), published: value(publishedKey(name), "seq") };
}

const pageAfter = (store: MongoStore, after: number, limit: number) =>
	feedOf(store, READ)
		.find({ _id: { $gt: after } })
		.sort({ _id: 1 })
		.limit(limit)
		.toArray();

/** Up to `limit` changes after `after`, and the feed's bounds, read after them: `last` is never behind the page. */
export async function mongoChangesAfter(store: MongoStore, after: number, limit: number) {
	const docs = await pageAfter(store, after, limit);
	const { last } = await positions(store);
	const oldest = await feedOf(store, READ).find({}).sort({ _id: 1 }).limit(1).toArray();
	return { changes: recorded(docs), first: (oldest[0]?._id as number | undefined) ?? last + 1, last };
}

/** The outbox: the changes after the published mark, the first `limit` of them, and when the oldest was written. */
export async function mongoUnpublished(store: MongoStore, limit: number) {
	const { last, published } = await positions(store);
	const docs = await pageAfter(store, published, limit);
	// A MongoDB restore is MongoDB's own: nothing restarts the feed to tell the stream of (docs/operations.md, "Restore").
	return { published, last, changes: recorded(docs), oldestAt: (docs[0]?.at as number | undefined) ?? null, reset: null };
}

/** Notes the changes up to `seq` published; a note behind another replica's is not written. */
export async function mongoMarkPublished(store: MongoStore, seq: number): Promise<void> {
	await meta(store).updateOne({ _id: publishedKey(store.collection.collectionName) }, { $max: { seq } }, { upsert: true });
}

/** Drops the changes older than `maxAgeMs` or beyond the latest `maxChanges`, but, with `keepUnpublished`, none not published. */
export async function mongoPruneChanges(
	store: MongoStore,
	{ maxAgeMs, maxChanges }: { maxAgeMs: number; maxChanges: number },
	keepUnpublished: boolean,
): Promise<number> {
	const { last, published } = await positions(store);
	const young = await feedOf(store, READ)
		.find({ at: { $gte: Date.now() - maxAgeMs } })
		.sort({ _id: 1 })
		.limit(1)
		.toArray();
	// By seq, never by `at` alone: a clock set back would leave a hole in the middle of the feed. By age, up to the first change
	// young enough to keep: one stamped by a clock set back goes after the younger ones before it, never with them.
	let upTo = Math.max(young.length > 0 ? (young[0]._id as number) - 1 : last, last - maxChanges);
	if (keepUnpublished) upTo = Math.min(upTo, published);
	if (upTo <= 0) return 0;
	return (await feedOf(store).deleteMany({ _id: { $lte: upTo } })).deletedCount ?? 0;
}
