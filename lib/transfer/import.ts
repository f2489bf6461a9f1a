/**
 * `npm run import`'s work: the whole file checked first (lib/transfer/check.ts), then its records sent in batches to each service's
 * `importRecords` (mixins/transfer.mixin.ts). A refused batch is sent again a record at a time, so only refused records are left out.
 */
import { isUnreachable, STORAGE_FAILURE } from "../catalogue/errors";
import { FileCheck, isBlank, type OutsideReference, type Problem } from "./check";
import { LongLine, MAX_LINE_BYTES, NotUtf8Line } from "./lines";
import { recordsWithIds, type Caller } from "./calls";
import { KINDS, serviceOf, type Kind, type StoredRecord } from "./format";

export interface ImportTally {
	created: number;
	unchanged: number;
	updated: number;
}

export interface ImportSummary extends ImportTally {
	read: number;
	refused: Problem[];
}

/** A file that cannot be imported, with its first bad line (found by the check: nothing was written). */
export class RefusedFile extends Error {
	constructor(
		readonly file: string,
		readonly problem: Problem,
		after = "Nothing was imported.",
	) {
		super(`${file}, line ${problem.line}: ${problem.reason}. ${after}`);
	}
}

export interface ImportOptions {
	/** The file's name, for messages. */
	file: string;
	/** The file's lines, read anew each time it is called. */
	lines: () => AsyncIterable<string>;
	call: Caller;
	/** Records per batch. */
	batch: number;
	/** Told the number of records read so far, and the total once known. */
	progress?: (done: number, total: number) => void;
}

/** Which of the references the catalogue holds, asked in batches of each kind. */
async function present(call: Caller, references: OutsideReference[]): Promise<Set<string>> {
	const found = new Set<string>();
	for (const kind of ["category", "author"] as const) {
		const ids = references.filter(reference => reference.kind === kind).map(reference => reference.id);
		for (const { id } of await recordsWithIds(call, serviceOf(kind), ids)) found.add(`${kind} ${id}`);
	}
	return found;
}

/** Checks the whole file; throws RefusedFile naming its first bad line. Answers the number of records. */
export async function checkFile({ file, lines, call }: ImportOptions): Promise<number> {
	const check = new FileCheck();
	try {
		for await (const line of lines()) {
			await check.add(line);
			if (check.problem) break;
		}
	} catch (err) {
		if (err instanceof NotUtf8Line) throw new RefusedFile(file, { line: err.line, reason: "not UTF-8 text (save the file as UTF-8)" });
		if (err instanceof LongLine)
			throw new RefusedFile(file, { line: err.line, reason: `longer than ${MAX_LINE_BYTES / 1024 / 1024} MiB, which no record is` });
		throw err;
	}
	const inCatalogue = await present(call, check.outsideReferences());
	const problem = check.finish(reference => inCatalogue.has(`${reference.kind} ${reference.id}`));
	if (problem) throw new RefusedFile(file, problem);
	return Object.values(check.counts!).reduce((sum, count) => sum + count, 0);
}

/**
 * A checked file's records with their line numbers, in batches of one kind, parsed again so the import holds no more than a batch.
 * The services check each record again, and a file changed since its check stops at the first line that is no record.
 */
async function* batches(
	file: string,
	lines: AsyncIterable<string>,
	size: number,
): AsyncGenerator<{ kind: Kind; records: [number, StoredRecord][] }> {
	let current: { kind: Kind; records: [number, StoredRecord][] } | undefined;
	let lineNumber = 0;
	for await (const line of lines) {
		if (++lineNumber === 1 || isBlank(line)) continue;
		const { kind, ...fields } = parsedAgain(file, line, lineNumber);
		if (current && (current.kind !== kind || current.records.length === size)) {
			yield current;
			current = undefined;
		}
		current ??= { kind, records: [] };
		current.records.push([lineNumber, fields as StoredRecord]);
	}
	if (current) yield current;
}

/** A line of a checked file, parsed again; throws RefusedFile when it is no longer a record. */
function parsedAgain(file: string, line: string, lineNumber: number): { kind: Kind } & Record<string, unknown> {
	try {
		const record = JSON.parse(line) as { kind: Kind } & Record<string, unknown>;
		if (KINDS.some(({ kind }) => kind === record.kind)) return record;
	} catch {
		// Reported below, as a line that is not a record.
	}
	throw new RefusedFile(
		file,
		{ line: lineNumber, reason: "no longer a record: the file changed since it was checked" },
		"The records before it were imported: import the file again once it is whole.",
	);
}

/** Imports a checked file; answers what it did. Calls that fail for another reason than a refusal pass on. */
export async function importFile(options: ImportOptions, total: number): Promise<ImportSummary> {
	const { lines, call, batch, progress } = options;
	const summary: ImportSummary = { read: 0, created: 0, unchanged: 0, updated: 0, refused: [] };
	const add = (tally: ImportTally) => {
		summary.created += tally.created;
		summary.unchanged += tally.unchanged;
		summary.updated += tally.updated;
	};
	for await (const { kind, records } of batches(options.file, lines(), batch)) {
		const action = `${serviceOf(kind)}.importRecords`;
		try {
			add(await call<ImportTally>(action, { records: records.map(([, record]) => record) }));
		} catch (err) {
			if (!isRefusal(err)) throw err;
			for (const [line, record] of records)
				await call<ImportTally>(action, { records: [record] }).then(add, (failure: unknown) => {
					if (!isRefusal(failure)) throw failure;
					summary.refused.push({ line, reason: reasonOf(failure) });
				});
		}
		summary.read += records.length;
		progress?.(summary.read, total);
	}
	return summary;
}

/** Why a service refused records: each of its validation's messages, or the error's own. */
export function reasonOf(err: unknown): string {
	const { message, data } = err as { message: string; data?: unknown };
	if (!Array.isArray(data)) return message;
	return data.map(item => (item as { message?: string }).message ?? JSON.stringify(item)).join("; ");
}

/** A service's refusal of the records (validation, or a rule such as a missing reference), not a failure to reach it or to store. */
function isRefusal(err: unknown): boolean {
	const { name, type, code } = err as { name?: string; type?: string; code?: number };
	if (isUnreachable(name) || type === STORAGE_FAILURE) return false;
	return (name === "MoleculerClientError" || name === "ValidationError") && typeof code === "number" && code >= 400 && code < 500;
}
