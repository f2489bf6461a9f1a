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
} from "../lib/nedb-files";

/** What the adapter reaches of NeDB 3's Datastore, once connected. */
interface Datastore {
	persistence: { persistNewStateAsync(docs: object[]): Promise<void> };
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
 * The appends are counted in NeDB's `persistNewStateAsync` rather than around the calls of
 * db.mixin.ts: every write reaches it (insert, update, remove, index changes, through moleculer-db
 * or `adapter.*` alike) with exactly the lines it appends, inside NeDB's queue. It is internal to
 * NeDB 3; were it renamed, `bind` below would throw at start and the tests would fail.
 */
class Compactor {
	private appended = 0;
	private recordsAtLast: number;
	private running: Promise<void> | undefined;
	private stopped = false;

	constructor(
		private readonly db: Datastore,
		private readonly file: string,
		private readonly logger: Logger,
	) {
		this.recordsAtLast = db.getAllData().length;
		// Emitted by NeDB inside its queue, once the file is rewritten: no append is half counted.
		// The records are counted here, not per write: NeDB counts them by walking the collection.
		db.on("compaction.done", () => {
			this.appended = 0;
			this.recordsAtLast = db.getAllData().length;
		});
		const append = db.persistence.persistNewStateAsync.bind(db.persistence);
		db.persistence.persistNewStateAsync = async docs => {
			await append(docs);
			this.appended += docs.length;
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

	/** No compaction starts from now on; resolves once the one under way, if any, has ended. */
	async stop(): Promise<void> {
		this.stopped = true;
		await this.running;
	}
}

/**
 * moleculer-db's NeDB adapter on a data file, made to survive crashes and long runs. Before NeDB
 * loads the file, a half-written last line is cut off (with a warning and a copy of the bytes).
 * NeDB then refuses any other damaged line (by default it drops up to 10% of them silently), and
 * the node exits saying which line and what to do: moleculer-db would retry every second until
 * START_TIMEOUT, and then blame the storage's reachability. Once loaded, the file is compacted as
 * it grows (`Compactor`).
 */
export class NeDbFileAdapter extends MemoryAdapter {
	private compactor: Compactor | undefined;

	constructor(private readonly file: string) {
		super({ filename: file, autoload: false, corruptAlertThreshold: 0, afterSerialization: escapeLineBreaks, beforeDeserialization: keepLine });
	}

	override async connect(): Promise<void> {
		const { service } = this as unknown as Attached;
		const torn = await cutTornTail(this.file);
		if (torn) service.logger.warn(tornTailText(this.file, torn));
		try {
			await super.connect();
		} catch (err) {
			if (!isDamagedFile(err)) throw err;
			service.logger.fatal(damagedFileText(this.file, await firstUnreadableLine(this.file)));
			process.exit(1);
		}
		this.compactor = new Compactor((this as unknown as Attached).db, this.file, service.logger);
	}

	override async disconnect(): Promise<void> {
		await this.compactor?.stop();
		await super.disconnect();
	}
}
