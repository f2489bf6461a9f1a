import { setImmediate as nextTurn } from "node:timers/promises";
import isEqual from "lodash/isEqual";
import type { ServiceBroker, Service } from "moleculer";
import type { SQLInputValue } from "node:sqlite";
import { feedName, publishedKey, resetKey } from "../feed/changes";
import { column, extracted, limitOf, orderBy, updatedColumns, updatedDoc, where, type Columns, type Sql } from "./sqlite-query";
import { inTransaction, openDatabase, UnusableDataDir, type Database, type Holding } from "./sqlite-database";
import { migrateNeDbFile } from "./nedb-migration";

type Doc = Record<string, unknown>;
type Row = { _id: string; doc: string };

/**
 * A write whose every record gets a change in the feed (`recordedWrite`): records inserted, or those of `query` updated or removed;
 * with `whole`, only if `query` matches exactly that many records, else none (an import's batch, stored whole or not at all).
 */
export type RecordedWrite = { insert: Doc[] } | { query: Doc; update: Doc; whole?: number } | { query: Doc; remove: true };

/** Thrown inside a recorded write's transaction when its query does not match its `whole` count: nothing of it is kept. */
export class NotWhole extends Error {}

/** Whether `write` asks to be whole and its query matched another number of records than that. */
export const missesWhole = (write: RecordedWrite, matched: number): boolean =>
	"whole" in write && write.whole !== undefined && matched !== write.whole;

/** A change as the feed keeps it: what `recordedWrite` was given, and its place in the feed. */
export type Recorded = Doc & { seq: number };

interface FindParams {
	query?: Doc;
	sort?: string[];
	limit?: number;
	offset?: number;
}

export interface SqliteAdapterOptions {
	/** The DATA_DIR the database is in; `null` keeps the records in memory, in a database of this adapter's own. */
	dataDir: string | null;
	holding: Holding;
	collection: string;
	/** Fields queries filter on, each indexed. */
	indexes: readonly string[];
	/** Fields only a few records have (claims), indexed over those records only. */
	sparseIndexes: readonly string[];
	/** The orders pages are read in, first key first, each an index they are read from in order. */
	orders: readonly (readonly string[])[];
}

/** Rows a long read takes between two turns of the event loop. */
const READ_STEP = 1000;

/** Changes of the feed a prune drops between two turns of the event loop. */
const PRUNE_STEP = 1000;

/** How much a probe of a refusing disk writes: about what a few game writes need in the database's log. */
const PROBE_BYTES = 64 * 1024;

/** SQLite's result codes that mean the disk refused a write. */
const SQLITE_IOERR = 10;
const SQLITE_FULL = 13;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;

/** A row as moleculer-db takes a record; no copy of it is made (a list of every game makes one per game). */
const toDoc = (_id: string, doc: string): Doc => Object.assign(JSON.parse(doc) as Doc, { _id });

/**
 * The record a write of one record (`... RETURNING _id, doc`) changed, or nothing. Its rows are read with `all`, never `get`:
 * node:sqlite's `get` stops at the first row and drops what ending the statement reports, so the commit of a write in a transaction
 * of its own that the disk refuses (SQLITE_FULL) would be answered as stored.
 */
function changedRow(rows: unknown[]): Doc | undefined {
	const [row] = rows as Row[];
	return row && toDoc(row._id, row.doc);
}

/**
 * moleculer-db's adapter on the embedded SQLite database (lib/storage/sqlite-database.ts), queries made by lib/storage/sqlite-query.ts.
 * Every write is one statement or one transaction, so it is whole or absent after any crash.
 */
export class SqliteAdapter {
	private database: Database | undefined;
	/** The fields indexed, each a column of its own, written with `doc` (`prepareTable`). */
	private readonly columns: Columns;
	/** What an `INSERT` of a `row` names: `_id`, `doc` and each column, a `?` for each. */
	private readonly inserted: string;
	/** The collection's change feed: a table of its own whose `seq` SQLite never hands out twice (AUTOINCREMENT). */
	private readonly feed: string;
	private service: Service | undefined;
	/** Why the disk refused the last write, until one is stored again. */
	refusedWrites: string | undefined;

	constructor(private readonly options: SqliteAdapterOptions) {
		const { indexes, sparseIndexes, orders } = options;
		this.columns = new Set([...indexes, ...sparseIndexes, ...orders.flat()].filter(field => field !== "_id"));
		const named = ["_id", "doc", ...[...this.columns].map(field => column(field, this.columns))];
		this.inserted = `${options.collection} (${named.join(", ")}) VALUES (${named.map(() => "?").join(", ")})`;
		this.feed = feedName(options.collection);
	}

	/** The values of an inserted row: the id, the other fields as JSON, each column's field. */
	private row({ _id, ...doc }: Doc): SQLInputValue[] {
		return [String(_id), JSON.stringify(doc), ...[...this.columns].map(field => extracted(doc, field))];
	}

	init(_broker: ServiceBroker, service: Service): void {
		this.service = service;
	}

	/**
	 * Opens the database, makes the collection's table and indexes, and migrates any NeDB file of the collection. An unusable DATA_DIR
	 * ends the process with one line saying why, where moleculer-db would retry every second with a stack trace.
	 */
	connect(): Promise<void> {
		const logger = this.service?.logger;
		try {
			this.database = openDatabase(this.options.dataDir, this.options.holding, message => logger?.warn(message));
			if (!this.database.readOnly) this.prepareTable();
			this.sayRestored(this.database);
		} catch (err) {
			const { dataDir } = this.options;
			if (!logger || dataDir === null) throw err;
			logger.fatal(err instanceof UnusableDataDir ? err.message : `DATA_DIR ${dataDir} cannot be used: ${(err as Error).message}`);
			process.exit(1);
		}
		return Promise.resolve();
	}

	/**
	 * The table: `_id`, `doc`, and a column per indexed field, written with `doc` and again only when an update names the field, so an
	 * update rewrites only its fields' indexes (docs/storage.md). Indexes: each filtered field, the sparse ones, each page order.
	 */
	private prepareTable(): void {
		const { dataDir, collection, indexes, sparseIndexes, orders } = this.options;
		const { writer } = this.db;
		const columns = [...this.columns].map(field => `, ${column(field, this.columns)}`).join("");
		// IF NOT EXISTS: a replica starting at once may have made it since.
		const table = (name: string) => `CREATE TABLE IF NOT EXISTS ${name} (_id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL${columns})`;
		// `hidden` marks a generated column, which the table is made again without.
		const present = writer.prepare(`PRAGMA table_xinfo(${collection})`).all() as { name: string; hidden: number }[];
		if (present.length === 0) writer.exec(table(collection));
		else if (
			present.some(({ hidden }) => hidden !== 0) ||
			!isEqual(present.map(({ name }) => name).sort(), ["_id", "doc", ...this.columns].sort())
		)
			this.rebuild(table);
		const index = (name: string, fields: readonly string[], partial = "") =>
			writer.exec(
				`CREATE INDEX IF NOT EXISTS "${collection}_${name}" ON ${collection} (${fields.map(field => column(field, this.columns)).join(", ")})${partial}`,
			);
		for (const field of indexes) index(field, [field, "_id"]);
		for (const field of sparseIndexes) index(field, [field], ` WHERE ${column(field, this.columns)} IS NOT NULL`);
		for (const order of orders) index(`by_${order.join("_")}`, order);
		writer.exec(
			`CREATE TABLE IF NOT EXISTS ${this.feed} (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, change TEXT NOT NULL)`,
		);
		if (dataDir === null) return;
		const put = (doc: Doc) => this.db.prepared(`INSERT OR REPLACE INTO ${this.inserted}`).run(...this.row(doc));
		migrateNeDbFile(writer, dataDir, collection, put, this.service?.logger);
	}

	/**
	 * Once per process, as a warning so that a tool's broker (which logs warnings only) says it too: the database is a restored backup,
	 * whose feeds started again (lib/storage/sqlite-database.ts restartFeeds), and followers must read again.
	 */
	private sayRestored(database: Database): void {
		if (!database.restoredFrom) return;
		this.service?.logger.warn(
			`${database.file} is the backup taken at ${database.restoredFrom}, restored: the change feeds start again after every ` +
				"position handed out before, so each follower starts again from a full read (docs/followers.md).",
		);
		database.restoredFrom = undefined;
	}

	/** The table made again with the current columns, its records copied, in one transaction. */
	private rebuild(table: (name: string) => string): void {
		const { collection } = this.options;
		const { writer } = this.db;
		inTransaction(writer, () => {
			writer.exec(table(`${collection}_rebuilt`));
			const columns = [...this.columns].map(field => column(field, this.columns));
			const values = [...this.columns].map(field => column(field));
			writer.exec(
				`INSERT INTO ${collection}_rebuilt (${["_id", "doc", ...columns].join(", ")}) SELECT ${["_id", "doc", ...values].join(", ")} FROM ${collection}`,
			);
			writer.exec(`DROP TABLE ${collection}`);
			writer.exec(`ALTER TABLE ${collection}_rebuilt RENAME TO ${collection}`);
		});
		this.service?.logger.info(`The ${collection} table was made again with the indexed fields of this version.`);
	}

	disconnect(): Promise<void> {
		this.database?.release();
		this.database = undefined;
		return Promise.resolve();
	}

	private get db(): Database {
		if (!this.database) throw new Error(`the ${this.options.collection} store is not connected`);
		return this.database;
	}

	/** A write, noting whether the disk refused it (readiness says so) or took it. */
	private write<T>(run: (db: { prepare: Database["prepared"] }) => T): Promise<T> {
		try {
			const result = run({ prepare: this.db.prepared });
			this.refusedWrites = undefined;
			return Promise.resolve(result);
		} catch (err) {
			const failure = err as Error & { errcode?: number; duplicateId?: boolean };
			const code = (failure.errcode ?? 0) & 0xff;
			if (code === SQLITE_FULL || code === SQLITE_IOERR) this.refusedWrites = failure.message;
			if (failure.errcode === SQLITE_CONSTRAINT_PRIMARYKEY) failure.duplicateId = true;
			return Promise.reject(failure);
		}
	}

	/** Several writes in one transaction: all of them or none. */
	private transaction<T>(run: (db: { prepare: Database["prepared"] }) => T): Promise<T> {
		return this.write(db => inTransaction(this.db.writer, () => run(db)));
	}

	private select({ query, sort, limit, offset }: FindParams, what = "_id, doc"): Sql {
		const condition = where(query, this.columns);
		const order = sort && sort.length > 0 ? ` ORDER BY ${orderBy(sort, this.columns)}` : "";
		const values = [...condition.values];
		let page = "";
		if ((limit ?? 0) > 0 || (offset ?? 0) > 0) {
			page = `${limitOf(limit && limit > 0 ? limit : -1)} OFFSET ?`;
			values.push(offset && offset > 0 ? offset : 0);
		}
		// Without a condition, a count is SQLite's count of the smallest index.
		const filter = condition.sql === "1" ? "" : ` WHERE ${condition.sql}`;
		return { sql: `SELECT ${what} FROM ${this.options.collection}${filter}${order}${page}`, values };
	}

	/** The records of a query in order; a read without a limit steps through its rows (`findInSteps`). */
	async find(params: FindParams): Promise<Doc[]> {
		if ((params.limit ?? 0) > 0) return this.readAtOnce(params);
		const docs: Doc[] = [];
		for await (const slice of this.inSteps(params, READ_STEP)) docs.push(...slice);
		return docs;
	}

	/** The records of a query in order, read in one statement run whole. */
	private readAtOnce(params: FindParams): Doc[] {
		const { sql, values } = this.select(params);
		return (this.db.prepared(sql).all(...(values as SQLInputValue[])) as Row[]).map(({ _id, doc }) => toDoc(_id, doc));
	}

	/** The records of a query in order, `size` at a time (`inSteps`). */
	async *findInSteps(params: FindParams, size: number): AsyncGenerator<Doc[]> {
		yield* this.inSteps(params, size);
	}

	/**
	 * The records of a query in order, `size` at a time, read on a connection of the read's own (`Readers`: writes commit meanwhile)
	 * with a turn of the event loop between slices. A reader that stops early ends the read.
	 */
	private async *inSteps(params: FindParams, size: number): AsyncGenerator<Doc[]> {
		const { sql, values } = this.select(params);
		const { readers } = this.db;
		const connection = readers.take();
		let slice: Doc[] = [];
		try {
			const statement = connection.prepare(sql);
			// Each row as an array: node:sqlite makes one per record, and an array costs less to make than an object.
			statement.setReturnArrays(true);
			for (const [_id, doc] of statement.iterate(...(values as SQLInputValue[])) as Iterable<[string, string]>) {
				slice.push(toDoc(_id, doc));
				if (slice.length < size) continue;
				yield slice;
				slice = [];
				await nextTurn();
			}
		} finally {
			// The statement is done: the loop's end reset it.
			readers.give(connection);
		}
		if (slice.length > 0) yield slice;
	}

	/**
	 * How many records match. Those without a field (`$exists: false`: games that are not drafts) are counted as all less those with it,
	 * since SQLite counts a table from its smallest index and the few records with the field sit in a sparse one.
	 */
	count({ query = {} }: FindParams = {}): Promise<number> {
		const absent = Object.entries(query).find(([, test]) => isEqual(test, { $exists: false }))?.[0];
		let counted: Sql;
		if (absent === undefined) counted = this.select({ query }, "count(*) AS n");
		else {
			const { [absent]: _, ...rest } = query;
			const all = this.select({ query: rest }, "count(*)");
			const present = this.select({ query: { ...rest, [absent]: { $exists: true } } }, "count(*)");
			// One statement, one snapshot: another process's write cannot come between the two counts.
			counted = { sql: `SELECT (${all.sql}) - (${present.sql}) AS n`, values: [...all.values, ...present.values] };
		}
		return Promise.resolve((this.db.prepared(counted.sql).get(...(counted.values as SQLInputValue[])) as { n: number }).n);
	}

	async findOne(query: Doc): Promise<Doc | undefined> {
		return (await this.find({ query, limit: 1 }))[0];
	}

	findById(_id: string): Promise<Doc | undefined> {
		return this.findOne({ _id });
	}

	async findByIds(ids: string[]): Promise<Doc[]> {
		// No more records than ids (`_id` is unique): read at once, the statement's text the same whatever their number.
		return this.readAtOnce({ query: { _id: { $in: ids } } });
	}

	insert(entity: Doc): Promise<Doc> {
		return this.write(db => {
			db.prepare(`INSERT INTO ${this.inserted}`).run(...this.row(entity));
			return entity;
		});
	}

	/** Stores every one of `entities` or, when one is refused (an id already stored), none. */
	insertMany(entities: Doc[]): Promise<Doc[]> {
		return this.recordedWrite({ insert: entities }, null).then(() => entities);
	}

	/** How many records matched `query`, each changed by `update` in one atomic statement. */
	updateMany(query: Doc, update: Doc): Promise<number> {
		return this.recordedWrite({ query, update }, null).then(({ written }) => written);
	}

	/** The record of `query` (which names its `_id`) changed by `update` in one statement, as it is after; nothing when none matched. */
	updateOne(query: Doc, update: Doc): Promise<Doc | undefined> {
		const condition = where(query, this.columns);
		const { sql, values } = this.updated(update);
		return this.write(db =>
			changedRow(db.prepare(`${sql} WHERE ${condition.sql} RETURNING _id, doc`).all(...values, ...condition.values)),
		);
	}

	updateById(_id: string, update: Doc): Promise<Doc | undefined> {
		return this.updateOne({ _id }, update);
	}

	/** `UPDATE ... SET` of `update`: the new `doc`, and the columns of the fields it names. */
	private updated(update: Doc): Sql {
		const doc = updatedDoc(update);
		const columns = updatedColumns(update, this.columns);
		return { sql: `UPDATE ${this.options.collection} SET doc = ${doc.sql}${columns.sql}`, values: [...doc.values, ...columns.values] };
	}

	removeMany(query: Doc): Promise<number> {
		return this.recordedWrite({ query, remove: true }, null).then(({ written }) => written);
	}

	removeById(_id: string): Promise<Doc | undefined> {
		return this.write(db => changedRow(db.prepare(`DELETE FROM ${this.options.collection} WHERE _id = ? RETURNING _id, doc`).all(_id)));
	}

	/**
	 * Runs `write` and appends `changeOf(id)` to the feed for each record it wrote, in one transaction: a change is in the feed if and
	 * only if its write is stored. How many records it wrote, and the changes appended in feed order (none when `changeOf` is null).
	 */
	recordedWrite(write: RecordedWrite, changeOf: ((id: string) => Doc) | null): Promise<{ written: number; changes: Recorded[] }> {
		const { collection } = this.options;
		const written = this.transaction(db => {
			let ids: string[];
			if ("insert" in write) {
				const insert = db.prepare(`INSERT INTO ${this.inserted}`);
				for (const entity of write.insert) insert.run(...this.row(entity));
				ids = write.insert.map(entity => String(entity._id));
			} else {
				const condition = where(write.query, this.columns);
				const change = "update" in write ? this.updated(write.update) : { sql: `DELETE FROM ${collection}`, values: [] };
				const statement = db.prepare(`${change.sql} WHERE ${condition.sql} RETURNING _id`);
				// In id order, as MongoDB finds them (lib/storage/mongo-feed.ts): the feed numbers them alike in both stores.
				ids = (statement.all(...change.values, ...condition.values) as { _id: string }[]).map(row => row._id).sort();
				if (missesWhole(write, ids.length)) throw new NotWhole();
			}
			if (!changeOf) return { written: ids.length, changes: [] };
			const append = db.prepare(`INSERT INTO ${this.feed} (at, change) VALUES (?, ?) RETURNING seq`);
			const at = Date.now();
			const changes = ids.map(id => {
				const change = changeOf(id);
				return { ...change, seq: (append.get(at, JSON.stringify(change)) as { seq: number }).seq };
			});
			return { written: ids.length, changes };
		});
		return written.catch((err: Error) => (err instanceof NotWhole ? { written: 0, changes: [] } : Promise.reject(err)));
	}

	/** Up to `limit` changes after `after`, in feed order, and the feed's bounds read in the same snapshot. */
	changesAfter(after: number, limit: number): Promise<{ changes: Recorded[]; first: number; last: number }> {
		const { writer, prepared } = this.db;
		// A snapshot's connection (`readSnapshot`) is in its read transaction already.
		if (writer.isTransaction) return Promise.resolve(this.feedPage(prepared, after, limit));
		writer.exec("BEGIN");
		try {
			return Promise.resolve(this.feedPage(prepared, after, limit));
		} finally {
			writer.exec("COMMIT");
		}
	}

	private feedPage(prepared: Database["prepared"], after: number, limit: number) {
		const rows = prepared(`SELECT seq, change FROM ${this.feed} WHERE seq > ? ORDER BY seq${limitOf(limit)}`).all(after) as {
			seq: number;
			change: string;
		}[];
		const bounds = prepared(
			`SELECT (SELECT seq FROM sqlite_sequence WHERE name = ?) AS last, (SELECT min(seq) FROM ${this.feed}) AS first`,
		).get(this.feed) as { last: number | null; first: number | null };
		const last = bounds.last ?? 0;
		const changes = rows.map(({ seq, change }) => ({ ...(JSON.parse(change) as Doc), seq }));
		return { changes, first: bounds.first ?? last + 1, last };
	}

	/**
	 * Drops the feed's changes older than `maxAgeMs` or beyond the latest `maxChanges`, but, with `keepUnpublished`, none not yet
	 * published: how many. The oldest PRUNE_STEP changes at a time, with a turn of the event loop between.
	 */
	async pruneChanges({ maxAgeMs, maxChanges }: { maxAgeMs: number; maxChanges: number }, keepUnpublished = false): Promise<number> {
		// Up to a seq, never by `at` alone: a clock set back would leave a hole in the middle of the feed. By age, up to the first
		// change young enough to keep, so a change stamped by a clock set back is dropped after the younger ones before it, never with
		// them. Each step reads the times of the oldest changes only, not of the whole feed.
		const oldest = `WITH oldest AS (SELECT seq, at FROM ${this.feed} ORDER BY seq LIMIT ${PRUNE_STEP})`;
		const byAge = `coalesce((SELECT min(seq) FROM oldest WHERE at >= ?) - 1, (SELECT max(seq) FROM oldest), 0)`;
		const byCount = `coalesce((SELECT seq FROM sqlite_sequence WHERE name = '${this.feed}') - ?, 0)`;
		const bounds = [
			`max(${byAge}, ${byCount})`,
			"coalesce((SELECT max(seq) FROM oldest), 0)",
			...(keepUnpublished ? [this.publishedSql] : []),
		];
		const sql = `${oldest} DELETE FROM ${this.feed} WHERE seq <= min(${bounds.join(", ")})`;
		let dropped = 0;
		for (;;) {
			const step = await this.write(db => Number(db.prepare(sql).run(Date.now() - maxAgeMs, maxChanges).changes));
			dropped += step;
			if (step < PRUNE_STEP) return dropped;
			await nextTurn();
		}
	}

	/** The seq up to which the feed is published to the cluster's stream (the outbox's end), in `catalogue_meta`. */
	private get publishedSql(): string {
		return `coalesce((SELECT CAST(value AS INTEGER) FROM catalogue_meta WHERE key = '${publishedKey(this.options.collection)}'), 0)`;
	}

	/**
	 * The outbox: the changes after `published` (up to `last`), the first `limit` of them, when the oldest was written (ms), and the
	 * seq a restored backup's feed starts after while the stream has not been told (`reset`, else null).
	 */
	unpublished(
		limit: number,
	): Promise<{ published: number; last: number; changes: Recorded[]; oldestAt: number | null; reset: number | null }> {
		const { prepared } = this.db;
		const { published, last, reset } = prepared(
			`SELECT ${this.publishedSql} AS published, coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0) AS last, ` +
				"(SELECT CAST(value AS INTEGER) FROM catalogue_meta WHERE key = ?) AS reset",
		).get(this.feed, resetKey(this.options.collection)) as { published: number; last: number; reset: number | null };
		const rows = prepared(`SELECT seq, at, change FROM ${this.feed} WHERE seq > ? ORDER BY seq${limitOf(limit)}`).all(published) as {
			seq: number;
			at: number;
			change: string;
		}[];
		const changes = rows.map(({ seq, change }) => ({ ...(JSON.parse(change) as Doc), seq }));
		return Promise.resolve({ published, last, changes, oldestAt: rows[0]?.at ?? null, reset });
	}

	/** Notes that the stream was told of the restart at `from`; a later restore's is kept. */
	markReset(from: number): Promise<void> {
		return this.write(db => {
			db.prepare("DELETE FROM catalogue_meta WHERE key = ? AND CAST(value AS INTEGER) = ?").run(
				resetKey(this.options.collection),
				from,
			);
		});
	}

	/** Notes that the changes up to `seq` are published; a note behind another replica's is not written. */
	markPublished(seq: number): Promise<void> {
		const key = publishedKey(this.options.collection);
		return this.write(db => {
			db.prepare(
				"INSERT INTO catalogue_meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
			).run(key, seq);
		});
	}

	/** Whether the disk takes writes again: a write to `catalogue_meta` as large as a few record writes (a tiny one may fit), removed. */
	probeWrites(): void {
		void this.write(db => {
			db.prepare("INSERT OR REPLACE INTO catalogue_meta VALUES ('probe', hex(randomblob(?)))").run(PROBE_BYTES / 2);
			db.prepare("DELETE FROM catalogue_meta WHERE key = 'probe'").run();
		}).catch(() => undefined);
	}

	entityToObject(entity: Doc): Doc {
		return entity;
	}

	/** `_id` renamed `idField` in the record itself, as moleculer-db's own adapters do: it is a copy already. */
	afterRetrieveTransformID(entity: Doc, idField: string): Doc {
		if (idField === "_id") return entity;
		entity[idField] = entity._id;
		delete entity._id;
		return entity;
	}
}
