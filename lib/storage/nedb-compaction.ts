/**
 * NeDB's compaction with the event loop left free: NeDB 3 serializes every record of the
 * collection in one synchronous loop (about 60 ms at 100,000 games, bench/compaction.ts), during
 * which the process answers nothing, cached reads of every service included. Here the same lines
 * are made in steps of SERIALIZE_STEP records, with a turn of the event loop between steps, and
 * written as NeDB writes them (`<file>~`, flushed, renamed over the file; storage.md). It still
 * runs in NeDB's queue, so the records do not change while it runs: writes to this collection
 * wait for it, as before; everything else goes on.
 */

import { inSteps } from "../async/steps";

// NeDB's serialization and storage modules, which it does not export by name; its own compaction uses both.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { serialize } = require("@seald-io/nedb/lib/model.js") as { serialize: (doc: object) => string };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const storage = require("@seald-io/nedb/lib/storage.js") as {
	crashSafeWriteFileLinesAsync(file: string, lines: string[], modes: unknown): Promise<void>;
};

/** Records serialized between two turns of the event loop: about a millisecond's work. */
export const SERIALIZE_STEP = 2000;

/** What the compaction reaches of NeDB 3's Datastore and its Persistence. */
export interface CompactedStore {
	getAllData(): object[];
	indexes: Record<string, { unique: boolean; sparse: boolean }>;
	emit(event: "compaction.done"): void;
	persistence: {
		filename: string;
		modes: unknown;
		afterSerialization: (line: string) => string;
		persistCachedDatabaseAsync(): Promise<void>;
	};
}

/**
 * The lines of a compacted file: every record, then an `$$indexCreated` line per index but
 * `_id`'s, as NeDB writes them. A step's records are handed over as one text of lines: NeDB writes
 * each item it is given, then "\n", from a stream that emits them without a turn of the event loop
 * between (100,000 items held the loop about 40 ms); the file is the same.
 */
async function compactedLines(db: CompactedStore): Promise<string[]> {
	const { afterSerialization } = db.persistence;
	const lines: string[] = [];
	for await (const step of inSteps(db.getAllData(), SERIALIZE_STEP))
		lines.push(step.map(doc => afterSerialization(serialize(doc))).join("\n"));
	for (const [fieldName, { unique, sparse }] of Object.entries(db.indexes))
		if (fieldName !== "_id") lines.push(afterSerialization(serialize({ $$indexCreated: { fieldName, unique, sparse } })));
	return lines;
}

/** Makes `db`'s compactions (NeDB's `persistCachedDatabaseAsync`, which its queue runs) serialize in steps. */
export function compactInSteps(db: CompactedStore): void {
	db.persistence.persistCachedDatabaseAsync = async () => {
		const lines = await compactedLines(db);
		await storage.crashSafeWriteFileLinesAsync(db.persistence.filename, lines, db.persistence.modes);
		db.emit("compaction.done");
	};
}
