/**
 * The lines of an export file or a spool, split at "\n" alone (a "\r" before it dropped): Node's readline also splits at U+2028
 * and U+2029, which JSON allows raw in a string.
 */
import { createReadStream } from "node:fs";
import { pipeline } from "node:stream";
import split2 from "split2";

/** The lines of `file`, read as they are iterated; a read error (a file gone) is thrown by the iteration. */
export function readLines(file: string): AsyncIterable<string> {
	// pipeline, not pipe: it hands the source's errors on to the lines, and closes the file when the reader stops early.
	return pipeline(createReadStream(file), split2(/\r?\n/), () => undefined);
}
