/**
 * Takes a change back out of NeDB's memory when its lines could not be appended to the file
 * (a full disk). NeDB 3 changes its indexes, which are its memory, before it hands the changed
 * records to `persistNewStateAsync`, and does not undo them when that fails: a refused create
 * would be listed until a restart. docs/storage.md, "A full disk".
 */

/** A record, or one of NeDB's lines that is not a record (`$$deleted`, `$$indexCreated`...). */
type Doc = Record<string, unknown>;

/** A record as it was and as an update made it. */
interface Replaced {
	oldDoc: Doc;
	newDoc: Doc;
}

/** NeDB 3's own ways of changing its indexes (internal to its Datastore, as `persistNewStateAsync` is). */
export interface Indexes {
	_addToIndexes(doc: Doc): void;
	_removeFromIndexes(doc: Doc): void;
	/** One record (`oldDoc`, `newDoc`) or, as updates call it, a list of pairs. */
	_updateIndexes(oldDoc: Doc | Replaced[], newDoc?: Doc): void;
}

/**
 * Watches the records each change takes out of NeDB's memory or replaces there, until the change
 * is stored (`forget`) or refused (`undo`). What NeDB hands to `persistNewStateAsync` tells which
 * change it was: the records an insert added, the records an update made (the ones it replaced
 * are remembered here), or `$$deleted` lines for what a remove took out (remembered here by id).
 * Both run inside NeDB's queue, so no other operation ever sees the refused change.
 */
export class Rollback {
	private readonly removed = new Map<unknown, Doc>();
	private readonly replaced = new Map<Doc, Doc>();
	private readonly add: (doc: Doc) => void;
	private readonly remove: (doc: Doc) => void;
	private readonly update: (pairs: Replaced[]) => void;

	constructor(db: Indexes) {
		this.add = db._addToIndexes.bind(db);
		this.remove = db._removeFromIndexes.bind(db);
		this.update = db._updateIndexes.bind(db);
		db._removeFromIndexes = doc => {
			this.remove(doc);
			this.removed.set(doc._id, doc);
		};
		db._updateIndexes = (oldDoc, newDoc) => {
			const pairs = Array.isArray(oldDoc) ? oldDoc : [{ oldDoc, newDoc: newDoc! }];
			this.update(pairs);
			for (const pair of pairs) this.replaced.set(pair.newDoc, pair.oldDoc);
		};
	}

	/** The change that handed `docs` to the file is stored: nothing to take back. */
	forget(): void {
		this.removed.clear();
		this.replaced.clear();
	}

	/** Puts NeDB's memory back as it was before the change that handed `docs` to the file. */
	undo(docs: Doc[]): void {
		const updated: Replaced[] = [];
		for (const doc of docs) {
			const removed = doc.$$deleted === true ? this.removed.get(doc._id) : undefined;
			const before = this.replaced.get(doc);
			if (removed) this.add(removed);
			else if (before) updated.push({ oldDoc: doc, newDoc: before });
			// An index line changes no answer: the index stays in memory, and is written at the next compaction.
			else if (!isNeDbLine(doc)) this.remove(doc);
		}
		if (updated.length > 0) this.update(updated);
		this.forget();
	}
}

/** Whether a line handed to the file is one of NeDB's own (`$$deleted`, `$$indexCreated`...), not a record. */
const isNeDbLine = (doc: Doc) => Object.keys(doc).some(key => key.startsWith("$$"));
