import { rm } from "node:fs/promises";
import type { Logger, Service } from "moleculer";
import { MemoryAdapter } from "moleculer-db";
import {
	compactionDue,
	compactionFailedText,
	cutTornTail,
	damagedFileText,
	escapeLineBreaks,
	firstUnreadableLine,
	isDamagedFile,
	keepLine,
	tornTailText,
} from "./nedb-files";
import { Appender } from "./nedb-appender";
import { DataFileInUse, lockDataFile } from "./data-file-lock";
import { compactInSteps, type CompactedStore } from "./nedb-compaction";
import { Rollback, type Indexes } from "./nedb-rollback";

/** NeDB's own serialization of a record into one line (its `model` module, which it does not export by name). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { serialize } = require("@seald-io/nedb/lib/model.js") as { serialize: (doc: object) => string };

/** What the adapter reaches of NeDB 3's Datastore, once connected. */
interface Datastore extends Indexes, CompactedStore {
	persistence: CompactedStore["persistence"] & { persistNewStateAsync(docs: Record<string, unknown>[]): Promise<void> };
	compactDatafileAsync(): Promise<void>;
	on(event: "compaction.done", listener: () => void): void;
	executor: { pushAsync(task: () => Promise<unknown>): Promise<unknown> };
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
 * by `Appender`. A compaction leaves the event loop free between steps (`compactInSteps`). A change whose lines the file refused is taken back out of memory (`Rollback`)
 * before its error reaches the caller. It is internal to NeDB 3; were it renamed, the compaction
 * and full-disk tests would fail.
 */
class DataFile {
	private appended = 0;
	private recordsAtLast: number;
	private running: Promise<void> | undefined;
	private stopped = false;
	private readonly lines: Appender;
	/** Why the last lines were refused, until lines are stored again. */
	refused: string | undefined;

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
			// Later lines go to the new file.
			this.lines.reopen();
		});
		this.lines = new Appender(file, doc => db.persistence.afterSerialization(serialize(doc)));
		compactInSteps(db);
		const rollback = new Rollback(db);
		db.persistence.persistNewStateAsync = async docs => {
			let written: number;
			try {
				written = this.lines.append(docs.filter(doc => !claims.some(field => Object.hasOwn(doc, field))));
			} catch (err) {
				rollback.undo(docs);
				this.refused = (err as Error).message;
				throw err;
			}
			rollback.forget();
			// A change that appends nothing (a claim) says nothing about whether the file takes lines.
			if (written > 0) this.refused = undefined;
			this.appended += written;
			this.compactIfDue();
		};
	}

	/** Queues one compaction when the file is due and none is queued; the write that asked never waits for it. */
	private compactIfDue(): void {
		if (this.stopped || this.running || !compactionDue(this.appended, this.recordsAtLast)) return;
		this.running = this.db
			.compactDatafileAsync()
			.catch(async (err: Error) => {
				// Tried again after as many appends again, not on the next write.
				this.appended = 0;
				this.logger.warn(compactionFailedText(this.file, err.message, this.lines.follow()));
				// NeDB leaves its half-written copy behind, holding space a full disk lacks.
				await rm(`${this.file}~`, { force: true }).catch(() => undefined);
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
 * moleculer-db's NeDB adapter on a data file, made to survive crashes and long runs. Before NeDB
 * loads the file, a half-written last line is cut off (with a warning and a copy of the bytes).
 * NeDB then refuses any other damaged line (by default it drops up to 10% of them silently), and
 * the node exits saying which line and what to do: moleculer-db would retry every second until
 * START_TIMEOUT, and then blame the storage's reachability. Once loaded, the file is compacted as
 * it grows (`DataFile`). One process at a time opens the file (lib/storage/data-file-lock.ts).
 */
export class NeDbFileAdapter extends MemoryAdapter {
	private dataFile: DataFile | undefined;
	/** Gives the data file's lock back (lib/storage/data-file-lock.ts). */
	private unlock: (() => void) | undefined;

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
		try {
			this.unlock ??= lockDataFile(this.file);
		} catch (err) {
			// moleculer's way out (broker.fatal), without the error's stack: the message says it all.
			if (err instanceof DataFileInUse) {
				service.logger.fatal(err.message);
				process.exit(1);
			}
			// A full disk refuses the lock's few bytes too: the node still starts, to answer reads.
			else service.logger.warn(`${this.file} could not be locked (${(err as Error).message}): another process may open it.`);
		}
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

	/**
	 * moleculer-db's find, after which NeDB's queue is given an empty task: the queue keeps the
	 * result of the last operation it ran until the next one runs, so the 100,000 records of a
	 * game list (41 MB once moleculer-db has transformed them for the answer) stayed alive after the
	 * list was answered, until the next read or write of the games.
	 */
	override async find(filters: Parameters<MemoryAdapter["find"]>[0]): Promise<object[]> {
		const found = (await super.find(filters)) as object[];
		void (this as unknown as Attached).db.executor.pushAsync(() => Promise.resolve());
		return found;
	}

	/** Why the file refused the last lines appended to it (a full disk), until it stores lines again; else undefined. */
	get refusedWrites(): string | undefined {
		return this.dataFile?.refused;
	}

	override async disconnect(): Promise<void> {
		await this.dataFile?.stop();
		await super.disconnect();
		this.unlock?.();
		this.unlock = undefined;
	}
}
