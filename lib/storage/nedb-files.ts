/**
 * The NeDB data files of the embedded storage, without a broker: the half-written last line cut off
 * before a file is loaded, the damaged line found when NeDB refuses a file, the texts an operator
 * reads about both, the escaping that keeps a record on one line, and when a file is compacted.
 * docs/storage.md, "What a crash can and cannot lose".
 */

import { createReadStream } from "node:fs";
import { open, writeFile, type FileHandle } from "node:fs/promises";
import { createInterface } from "node:readline";

/** How many bytes are read at a time, from the end, to find a file's last line. */
const TAIL_CHUNK_BYTES = 64 * 1024;

/**
 * Lines appended since the last compaction (or load) that no file is compacted before, however few
 * records it holds: below it, compaction would cost more than the space it gives back.
 */
export const COMPACTION_FLOOR = 1000;

/** The half-written last line taken off a data file. */
export interface TornTail {
	/** How many bytes were cut off. */
	bytes: number;
	/** The file beside the data file that holds exactly those bytes. */
	copy: string;
}

/** Whether a file's last line (the bytes after its last "\n") is half a record: not empty, and not JSON. */
function isTorn(line: Buffer): boolean {
	if (line.length === 0) return false;
	try {
		JSON.parse(line.toString("utf8"));
		return false;
	} catch {
		return true;
	}
}

/** Where the last line of an open file starts: after its last "\n", or at 0; read backwards a chunk at a time. */
async function lastLineStart(handle: FileHandle, size: number, chunkBytes: number): Promise<number> {
	for (let end = size; end > 0;) {
		const from = Math.max(0, end - chunkBytes);
		const { buffer } = await handle.read(Buffer.alloc(end - from), 0, end - from, from);
		const newline = buffer.lastIndexOf(0x0a);
		if (newline >= 0) return from + newline + 1;
		end = from;
	}
	return 0;
}

/**
 * Cuts off the file's last line when a process stopped in the middle of appending it: NeDB appends
 * one JSON line per write, so only the last line can be half written. The bytes are first copied to
 * `<file>.torn-<time>`, then the file is truncated after its last "\n". Only the tail is read. A
 * last line that is JSON is kept, newline or not (NeDB rewrites the file once loaded). Returns what
 * was cut, or undefined when nothing was (no file, an empty one, a whole last line).
 */
export async function cutTornTail(file: string, now = new Date(), chunkBytes = TAIL_CHUNK_BYTES): Promise<TornTail | undefined> {
	const handle = await open(file, "r+").catch((err: NodeJS.ErrnoException) => {
		if (err.code === "ENOENT") return undefined;
		throw err;
	});
	if (!handle) return undefined;
	try {
		const { size } = await handle.stat();
		const start = await lastLineStart(handle, size, chunkBytes);
		const { buffer: line } = await handle.read(Buffer.alloc(size - start), 0, size - start, start);
		if (!isTorn(line)) return undefined;
		const copy = `${file}.torn-${now.toISOString().replaceAll(":", "")}`;
		await writeFile(copy, line, { flag: "wx" });
		await handle.truncate(start);
		return { bytes: line.length, copy };
	} finally {
		await handle.close();
	}
}

/**
 * Characters NeDB's reader takes as line breaks besides "\n" and "\r": JSON.stringify leaves them
 * as they are inside strings, so a record holding one would be read back as two damaged lines.
 */
const READ_AS_LINE_BREAK = /[\v\f\u0085\u2028\u2029]/;

/** Whether NeDB can read this line of a data file back as a record (or an index). */
const readable = (line: string) => {
	if (READ_AS_LINE_BREAK.test(line)) return false;
	try {
		JSON.parse(line);
		return true;
	} catch {
		return false;
	}
};

/** The number (from 1) of the first line NeDB cannot read in `file`, or undefined if there is none. */
export async function firstUnreadableLine(file: string): Promise<number | undefined> {
	const lines = createInterface({ input: createReadStream(file, "utf8"), crlfDelay: Infinity });
	let number = 0;
	for await (const line of lines) {
		number += 1;
		if (line !== "" && !readable(line)) {
			lines.close();
			return number;
		}
	}
	return undefined;
}

/** Whether NeDB refused to load a file because lines of it are damaged (its corruptAlertThreshold). */
export const isDamagedFile = (err: unknown): boolean => typeof (err as { corruptItems?: unknown })?.corruptItems === "number";

/** What an operator is told when a data file holds a line that is not a record. */
export function damagedFileText(file: string, line: number | undefined): string {
	const where = line === undefined ? "" : ` at line ${line}`;
	const what = line === undefined ? "the damaged line" : `line ${line}`;
	return (
		`The data file ${file} is damaged${where}: it is not a record NeDB can read, and the service ` +
		`does not start rather than lose it. Restore ${file} from a backup, or repair or remove ` +
		`${what} (one JSON record per line), then start again.`
	);
}

/** What an operator is told when a half-written last line was cut off a data file. */
export const tornTailText = (file: string, { bytes, copy }: TornTail): string =>
	`Removed ${bytes} bytes from the end of ${file}: its last line was half written (the process or ` +
	`the machine stopped in the middle of a write). The bytes are kept in ${copy}.`;

/**
 * What an operator is told when a data file could not be compacted (a full disk): nothing is
 * lost, the file only grows. `replaced`: the failure came after the new copy took the file's name.
 */
export const compactionFailedText = (file: string, reason: string, replaced = false): string =>
	replaced
		? `Compacting ${file} failed after its new copy replaced it (${reason}): writes go on to the new file.`
		: `Could not compact ${file} (${reason}): it stays as it was, in use, and keeps growing until the next try.`;

/**
 * NeDB's `afterSerialization`: escapes, inside the JSON strings of a line, the characters NeDB's
 * reader would split it at, so a title holding U+2028 is read back whole. JSON.stringify writes no
 * such character outside a string, and JSON.parse reads the escape as the character, so the
 * matching `beforeDeserialization` is `keepLine`.
 */
export const escapeLineBreaks = (line: string): string =>
	line.replace(/[\u0085\u2028\u2029]/g, char => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** NeDB's `beforeDeserialization`: the line as it is (see `escapeLineBreaks`). */
export const keepLine = (line: string): string => line;

/**
 * Whether a file is due for compaction: more lines appended since the last one than it held then,
 * and more than the floor. The file then stays within about twice its records plus the floor, and
 * a compaction (time in the records) comes after at least as many writes, a constant per write.
 * It is Redis's rule for its append-only file (rewrite once it has doubled, above a minimum size).
 */
export const compactionDue = (appended: number, recordsAtLast: number, floor = COMPACTION_FLOOR): boolean =>
	appended > Math.max(recordsAtLast, floor);
