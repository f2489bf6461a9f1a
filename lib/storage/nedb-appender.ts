import { appendFileSync, closeSync, fstatSync, ftruncateSync, openSync, statSync } from "node:fs";

/**
 * NeDB's appends, as NeDB writes them, but with one synchronous write to a file kept open. NeDB
 * opens, appends and closes the file in libuv's thread pool for every changed record, and its
 * queue waits for that before the next operation starts: a game update (two appends) spent most
 * of its time waiting there. A write of a line to the page cache takes microseconds; as before,
 * a write is answered once its line is with the operating system (a killed process loses
 * nothing it acknowledged; a power cut can, docs/storage.md).
 */
export class Appender {
	private fd: number | undefined;
	/** Where the file ends before the half line a refused append left, while it could not be cut off. */
	private cutTo: number | undefined;

	/** `lineOf`: a record as NeDB writes it, on one line. */
	constructor(
		private readonly file: string,
		private readonly lineOf: (doc: object) => string,
	) {
		this.fd = openSync(file, "a");
	}

	/** Appends the records' lines; answers how many. Throws, leaving the file as it was, when they are refused. */
	append(docs: Record<string, unknown>[]): number {
		const text = docs.map(doc => `${this.lineOf(doc)}\n`).join("");
		if (text.length === 0) return 0;
		// Once closed (the service has stopped), a late write still reaches the file, opened for it.
		const fd = this.fd ?? openSync(this.file, "a");
		try {
			this.write(fd, text);
		} finally {
			if (fd !== this.fd) closeSync(fd);
		}
		return docs.length;
	}

	/**
	 * Writes `text` at the end of the file, or cuts the file back to where it ended and throws: the
	 * bytes written before a failure (ENOSPC halfway) would be half a line, and after a later line,
	 * a damaged one that stops the node at its next start.
	 */
	private write(fd: number, text: string): void {
		if (this.cutTo !== undefined) this.cut(fd, this.cutTo);
		const { size } = fstatSync(fd);
		try {
			appendFileSync(fd, text, "utf8");
		} catch (err) {
			this.cutTo = size;
			try {
				this.cut(fd, size);
			} catch {
				// Tried again before the next lines, which are refused until it succeeds.
			}
			throw err;
		}
	}

	private cut(fd: number, size: number): void {
		ftruncateSync(fd, size);
		this.cutTo = undefined;
	}

	/**
	 * After a compaction that failed: keeps to the file as it is named, and answers whether that
	 * is a new one. It is the old one unless the failure came after NeDB renamed its new copy over
	 * it (the directory's fsync).
	 */
	follow(): boolean {
		const named = statSync(this.file, { throwIfNoEntry: false });
		if (this.fd === undefined || !named || fstatSync(this.fd).ino === named.ino) return false;
		this.reopen();
		return true;
	}

	/** Opens the file by its name again: a compaction has written a new one, whole, over it. */
	reopen(): void {
		this.close();
		this.fd = openSync(this.file, "a");
		this.cutTo = undefined;
	}

	close(): void {
		if (this.fd !== undefined) closeSync(this.fd);
		this.fd = undefined;
	}
}
