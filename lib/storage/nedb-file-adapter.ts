import { appendFileSync, closeSync, openSync } from "node:fs";
import type { Logger, Service } from "moleculer";
import { MemoryAdapter } from "moleculer-db";
import {
	compactionDue,
	cutTornTail,
	damagedFileText,
	escapeLineBreaks,
	firstUnreadableLine,
	isDamagedFile,
	keepLine,
	tornTailText,
} from "./nedb-files";

/** NeDB's own serialization of a record into one line (its `model` module, which it does not export by name). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { serialize } = require("@seald-io/nedb/lib/model.js") as { serialize: (doc: object) => string };

/** What the adapter reaches of NeDB 3's Datastore, once connected. */
interface Datastore {
	persistence: { persistNewStateAsync(docs: object[]): Promise<void>; afterSerialization: (line: string) => string };
	compactDatafileAsync(): Promise<void>;
	getAllData(): unknown[];
	on(event: "compaction.done", listener: () => void): void;
}

/** What moleculer-db's MemoryAdapter holds and its typings leave out. */
interface Attached {
	service: Service;
	db: Datastore;
}

/**
 * Keeps a data file bounded while the service runs: NeDB appends a line per changed record and
 * compacts only when it loads a file, so a record updated all day would grow its file all day.
 * It takes over NeDB's `persistNewStateAsync`, rather than wrapping the calls of adapter.ts:
 * every write reaches it (insert, update, remove, index changes, through moleculer-db or
 * `adapter.*` alike) with exactly the lines it appends, inside NeDB's queue; the lines are written
 * by `Appender`. It is internal to NeDB 3; were it renamed, the compaction tests would fail.
 */
class DataFile {
	private appended = 0;
	private recordsAtLast: number;
	private running: Promise<void> | undefined;
	private stopped = false;
	private readonly lines: Appender;

	constructor(
		private readonly db: Datastore,
		private readonly file: string,
		private readonly logger: Logger,
		claims: readonly string[],
	) {
		this.recordsAtLast = db.getAllData().length;
		// Emitted by NeDB inside its queue, once the file is rewritten: no append is half counted.
		// The records are counted here, not per write: NeDB counts them by walking the collection.
		db.on("compaction.done", () => {
			this.appended = 0;
			this.recordsAtLast = db.getAllData().length;
		});
		this.lines = new Appender(db, file);
		db.persistence.persistNewStateAsync = async docs => {
			this.appended += this.lines.append(docs.filter(doc => !claims.some(field => Object.hasOwn(doc, field))));
			this.compactIfDue();
		};
	}

	/** Queues one compaction when the file is due and none is queued; the write that asked never waits for it. */
	private compactIfDue(): void {
		if (this.stopped || this.running || !compactionDue(this.appended, this.recordsAtLast)) return;
		this.running = this.db
			.compactDatafileAsync()
			.catch((err: Error) => {
				// Tried again after as many appends again, not on the next write.
				this.appended = 0;
				this.logger.warn(`Could not compact ${this.file}; it keeps growing until the next try: ${err.message}`);
			})
			.finally(() => (this.running = undefined));
	}

	/** No compaction starts from now on; resolves once the one under way, if any, has ended and the file is closed. */
	async stop(): Promise<void> {
		this.stopped = true;
		await this.running;
		this.lines.close();
	}
}

/**
 * NeDB's appends, as NeDB writes them, but with one synchronous write to a file kept open. NeDB
 * opens, appends and closes the file in libuv's thread pool for every changed record, and its
 * queue waits for that before the next operation starts: a game update (two appends) spent most
 * of its time waiting there. A write of a line to the page cache takes microseconds; as before,
 * a write is answered once its line is with the operating system (a killed process loses
 * nothing it acknowledged; a power cut can, docs/storage.md).
 */
class Appender {
	private fd: number | undefined;

	constructor(
		private readonly db: Datastore,
		private readonly file: string,
	) {
		this.fd = openSync(file, "a");
		// A compaction writes a new file over the old one: later lines go to the new one.
		db.on("compaction.done", () => {
			this.close();
			this.fd = openSync(file, "a");
		});
	}

	/** Appends the records' lines; answers how many. */
	append(docs: object[]): number {
		const { afterSerialization } = this.db.persistence;
		const text = docs.map(doc => `${afterSerialization(serialize(doc))}\n`).join("");
		// Once closed (the service has stopped), a late write still reaches the file, opened for it.
		if (text.length > 0) appendFileSync(this.fd ?? this.file, text, "utf8");
		return docs.length;
	}

	close(): void {
		if (this.fd !== undefined) closeSync(this.fd);
		this.fd = undefined;
	}
}

/**
 * moleculer-db's NeDB adapter on a data file, made to survive crashes and long runs. Before NeDB
 * loads the file, a half-written last line is cut off (with a warning and a copy of the bytes).
 * NeDB then refuses any other damaged line (by default it drops up to 10% of them silently), and
 * the node exits saying which line and what to do: moleculer-db would retry every second until
 * START_TIMEOUT, and then blame the storage's reachability. Once loaded, the file is compacted as
 * it grows (`DataFile`).
 */
export class NeDbFileAdapter extends MemoryAdapter {
	private dataFile: DataFile | undefined;

	/**
	 * `claims`: the fields that mark a write in progress (lib/integrity/claims.ts, a game's draft). A record
	 * that carries one is not written to the file: only this process reads the file, and a crash
	 * ends every claim it held, so the file needs only the record before the claim and after it.
	 * A game update or create then appends one line instead of two.
	 */
	constructor(
		private readonly file: string,
		private readonly claims: readonly string[] = [],
	) {
		super({
			filename: file,
			autoload: false,
			corruptAlertThreshold: 0,
			afterSerialization: escapeLineBreaks,
			beforeDeserialization: keepLine,
		});
	}

	override async connect(): Promise<void> {
		const { service } = this as unknown as Attached;
		const torn = await cutTornTail(this.file);
		if (torn) service.logger.warn(tornTailText(this.file, torn));
		try {
			await super.connect();
		} catch (err) {
			if (!isDamagedFile(err)) throw err;
			// moleculer's own way out: logs it as fatal, then exits with 1.
			service.broker.fatal(damagedFileText(this.file, await firstUnreadableLine(this.file)), err as Error);
		}
		this.dataFile = new DataFile((this as unknown as Attached).db, this.file, service.logger, this.claims);
	}

	override async disconnect(): Promise<void> {
		await this.dataFile?.stop();
		await super.disconnect();
	}
}
