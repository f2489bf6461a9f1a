/**
 * The lines of an export file or a spool, split at "\n" alone (a "\r" before it dropped): Node's readline also splits at U+2028
 * and U+2029, which JSON allows raw in a string. The file must be UTF-8, in lines of at most MAX_LINE_BYTES: a line that is not
 * fails the reading, naming it.
 */
import { isUtf8 } from "node:buffer";
import { createReadStream } from "node:fs";
import { pipeline, Transform } from "node:stream";
import split2 from "split2";

/** A line of a file that is not UTF-8 (a file saved as Latin-1, say): the text would come out with U+FFFD in place of its letters. */
export class NotUtf8Line extends Error {
	constructor(readonly line: number) {
		super(`line ${line} is not UTF-8 text`);
	}
}

/** The longest line read: a record of the catalogue is a few hundred bytes, and a longer line is held whole before it is parsed. */
export const MAX_LINE_BYTES = 1024 * 1024;

/** A line longer than MAX_LINE_BYTES: no record is, and one line of a hostile file could hold the whole file in memory. */
export class LongLine extends Error {
	constructor(readonly line: number) {
		super(`line ${line} is longer than ${MAX_LINE_BYTES / 1024 / 1024} MiB`);
	}
}

const NEWLINE = 0x0a;

/** The first line of `bytes` (whole lines, the first numbered `first`) that is not UTF-8. */
function firstNotUtf8(bytes: Buffer, first: number): NotUtf8Line {
	let line = first;
	for (let start = 0; start < bytes.length; line++) {
		const end = bytes.indexOf(NEWLINE, start);
		const stop = end === -1 ? bytes.length : end;
		if (!isUtf8(bytes.subarray(start, stop))) break;
		start = stop + 1;
	}
	return new NotUtf8Line(line);
}

/**
 * Passes the bytes on as they come, each run of whole lines checked to be UTF-8 (a character is never cut between two lines) and
 * each line, whole or not yet, to be at most MAX_LINE_BYTES long.
 */
function utf8Only(): Transform {
	let line = 1;
	let tail = Buffer.alloc(0);
	return new Transform({
		transform(chunk: Buffer, _encoding, done) {
			const bytes = tail.length > 0 ? Buffer.concat([tail, chunk]) : chunk;
			const end = bytes.lastIndexOf(NEWLINE) + 1;
			const whole = bytes.subarray(0, end);
			tail = Buffer.from(bytes.subarray(end));
			if (!isUtf8(whole)) return done(firstNotUtf8(whole, line));
			// A line is measured once it ends too: it may end in the chunk after the one that made it long.
			for (let start = 0; start < whole.length; line++) {
				const stop = whole.indexOf(NEWLINE, start);
				if (stop - start > MAX_LINE_BYTES) return done(new LongLine(line));
				start = stop + 1;
			}
			if (tail.length > MAX_LINE_BYTES) return done(new LongLine(line));
			done(null, chunk);
		},
		flush(done) {
			done(isUtf8(tail) ? null : new NotUtf8Line(line));
		},
	});
}

/** The lines of `file`, read as they are iterated; a read error (a file gone) or a line not UTF-8 is thrown by the iteration. */
export function readLines(file: string): AsyncIterable<string> {
	// pipeline, not pipe: it hands the source's errors on to the lines, and closes the file when the reader stops early.
	return pipeline(createReadStream(file), utf8Only(), split2(/\r?\n/), () => undefined);
}
