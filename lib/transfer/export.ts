/**
 * `npm run export`'s work: each collection read a page at a time in id order (`exportPage`), spooled, then written after the header
 * once the counts are known. For consistency while writes go on, a game whose category or author is not in the file brings that
 * record in, read again; a game whose reference is gone by then is read again itself.
 */
import { closeSync, createWriteStream, lstatSync, openSync, readSync, type WriteStream } from "node:fs";
import { realFolder } from "../storage/location";
import { once } from "node:events";
import { finished } from "node:stream/promises";
import path from "node:path";
import type { Writable } from "node:stream";
import { headerLine, KINDS, recordLine, serviceOf, type Counts, type Kind, type StoredRecord } from "./format";
import { lineRefused } from "./check";
import { recordsWithIds, type Caller } from "./calls";
import { readLines } from "./lines";

/** The first bytes of every SQLite database file. */
const SQLITE_HEADER = Buffer.from("SQLite format 3\0");

/**
 * Why `target` may not receive an export, or undefined: a file in the data folder (it could replace the catalogue's database), a
 * database (a catalogue's, or any SQLite file), a folder, or anything but a file: the export is renamed over its target, which
 * would replace a link, a device or a pipe (`/dev/null` itself) rather than write through it. Asked before the catalogue is read.
 */
export function refusedExportTarget(target: string, dataDir: string): string | undefined {
	const [folder, data] = [realFolder(path.dirname(path.resolve(target))), realFolder(dataDir)];
	if (folder === data || folder.startsWith(`${data}${path.sep}`))
		return `The export's file ${target} is in the data folder ${dataDir} (DATA_DIR): give a file outside it (it could replace the catalogue's own files).`;
	const found = lstatSync(target, { throwIfNoEntry: false });
	if (!found) return undefined;
	if (found.isDirectory()) return `The export's file ${target} is a folder: give the name of a file.`;
	if (!found.isFile())
		return `The export's file ${target} is not a file (a link, a device, a pipe or a socket), which the export would replace: give the name of a file, or - for the standard output.`;
	const start = Buffer.alloc(SQLITE_HEADER.length);
	const fd = openSync(target, "r");
	try {
		readSync(fd, start, 0, start.length, 0);
	} finally {
		closeSync(fd);
	}
	return start.equals(SQLITE_HEADER) ? `The export's file ${target} is a SQLite database, not an export: give another file.` : undefined;
}

/** Rounds of reading again the games written meanwhile before one still changing is left out. */
const ROUNDS = 5;

export interface ExportOptions {
	call: Caller;
	/** Records per page. */
	page: number;
	/** A folder of the export's own for its spool files, removed by the caller. */
	spoolDir: string;
	/** Told the number of records read so far. */
	progress?: (done: number) => void;
}

export interface ExportSummary {
	counts: Counts;
	/** Records written after their page was read: made or changed during the export. */
	readAgain: number;
	/** Games left out, still changing after as many rounds: written meanwhile, they may or may not be in an export. */
	leftOut: number;
	/** Records written that an import would refuse (a name with a control character, say), each with why, to correct through the API. */
	refusable: { kind: Kind; id: string; reason: string }[];
}

const failures = new WeakMap<Writable, Error>();

/** Keeps a stream's error (a full disk, a closed pipe) for its next write or end: an unheard `error` event would crash the process. */
export function guarded<T extends Writable>(stream: T): T {
	stream.on("error", err => failures.set(stream, err));
	return stream;
}

/** Writes `text` to `out`, waiting while its buffer is full: memory stays bounded whatever the speed of the reader. */
async function write(out: Writable, text: string): Promise<void> {
	const failed = failures.get(out);
	if (failed) throw failed;
	if (!out.write(text)) await once(out, "drain");
}

/** One kind's lines in id order, kept in a file until the header is written. */
class Spool {
	count = 0;
	private readonly out: WriteStream;
	constructor(readonly file: string) {
		this.out = guarded(createWriteStream(file));
	}
	add(line: string): Promise<void> {
		this.count++;
		return write(this.out, `${line}\n`);
	}
	async close(): Promise<void> {
		this.out.end();
		await finished(this.out);
	}
	lines(): AsyncIterable<string> {
		return readLines(this.file);
	}
}

/** Writes the catalogue to `out` as an export file; answers its counts. */
export async function exportCatalogue({ call, page: pageSize, spoolDir, progress }: ExportOptions, out: Writable): Promise<ExportSummary> {
	guarded(out);
	let read = 0;
	const spools = new Map<Kind, Spool>(KINDS.map(({ kind, service }) => [kind, new Spool(path.join(spoolDir, `${service}.jsonl`))]));
	/** The ids of the categories and authors in the file. */
	const inFile = { category: new Set<string>(), author: new Set<string>() };
	/** Records read again, each to be merged into its kind's lines in id order. */
	const again = new Map<Kind, Map<string, StoredRecord>>(KINDS.map(({ kind }) => [kind, new Map()]));
	const refersInFile = (game: StoredRecord) => inFile.category.has(game.category as string) && inFile.author.has(game.author as string);
	let late: StoredRecord[] = [];
	const refusable: ExportSummary["refusable"] = [];
	/** A record's line, after noting when an import would refuse it. */
	const lineOf = async (kind: Kind, record: StoredRecord) => {
		const line = recordLine(kind, record);
		const reason = await lineRefused(line);
		if (reason) refusable.push({ kind, id: record.id, reason });
		return line;
	};

	for (const { kind, service } of KINDS) {
		let after: string | undefined;
		for (;;) {
			const page = await call<StoredRecord[]>(`${service}.exportPage`, { limit: pageSize, ...(after && { after }) });
			for (const record of page) {
				if (kind === "game" && !refersInFile(record)) late.push(record);
				else {
					if (kind !== "game") inFile[kind].add(record.id);
					await spools.get(kind)!.add(await lineOf(kind, record));
				}
			}
			read += page.length;
			progress?.(read);
			if (page.length < pageSize) break;
			after = page[page.length - 1].id;
		}
		await spools.get(kind)!.close();
	}

	for (let round = 1; late.length > 0; round++) {
		for (const kind of ["category", "author"] as const) {
			const missing = [...new Set(late.map(game => game[kind] as string).filter(id => !inFile[kind].has(id)))];
			for (const record of await recordsWithIds(call, serviceOf(kind), missing)) {
				inFile[kind].add(record.id);
				again.get(kind)!.set(record.id, record);
			}
		}
		for (const game of late.filter(refersInFile)) again.get("game")!.set(game.id, game);
		late = late.filter(game => !refersInFile(game));
		if (round === ROUNDS) break;
		late = await recordsWithIds(
			call,
			"games",
			late.map(game => game.id),
		);
	}

	const counts = Object.fromEntries(
		KINDS.map(({ kind, service }) => [service, spools.get(kind)!.count + again.get(kind)!.size]),
	) as Counts;
	await write(out, `${headerLine(counts, new Date())}\n`);
	for (const [kind, records] of again) for (const record of records.values()) await lineOf(kind, record);
	for (const { kind } of KINDS) await writeMerged(out, kind, spools.get(kind)!, again.get(kind)!);
	const readAgainCount = [...again.values()].reduce((sum, records) => sum + records.size, 0);
	return { counts, readAgain: readAgainCount, leftOut: late.length, refusable };
}

/** The spooled lines of a kind with the records read again, all in id order. */
async function writeMerged(out: Writable, kind: Kind, spool: Spool, again: Map<string, StoredRecord>): Promise<void> {
	const extra = [...again.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
	let next = 0;
	for await (const line of spool.lines()) {
		const { id } = JSON.parse(line) as { id: string };
		while (next < extra.length && extra[next].id < id) await write(out, `${recordLine(kind, extra[next++])}\n`);
		await write(out, `${line}\n`);
	}
	while (next < extra.length) await write(out, `${recordLine(kind, extra[next++])}\n`);
}
