import { execFileSync } from "node:child_process";
import { lstatSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { DatabaseSync } from "node:sqlite";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { newId } from "../../lib/catalogue/ids";
import { FileCheck } from "../../lib/transfer/check";
import { exportCatalogue, refusedExportTarget } from "../../lib/transfer/export";
import { headerLine, recordLine, type StoredRecord } from "../../lib/transfer/format";
import type { Caller } from "../../lib/transfer/calls";
import { checkFile, importFile } from "../../lib/transfer/import";
import { LongLine, MAX_LINE_BYTES, NotUtf8Line, readLines } from "../../lib/transfer/lines";
import { Errors } from "moleculer";
import { CatalogueError, storageFailure, texts } from "../../lib/catalogue/errors";

const [C1, C2, C3] = [newId(), newId(), newId()];
const [A1, A2] = [newId(), newId()];
const [G1, G2, G3] = [newId(), newId(), newId()];

const header = (categories: number, authors: number, games: number) => headerLine({ categories, authors, games }, new Date());
const category = (id: string, name = "Eurogames") => JSON.stringify({ kind: "category", id, name });
const author = (id: string) => JSON.stringify({ kind: "author", id, name: "Reiner Knizia", nationality: "German" });
const game = (id: string, c: string, a: string, more: object = {}) =>
	JSON.stringify({ kind: "game", id, title: "Tigris", age: 12, category: c, author: a, ...more });

/** The problem FileCheck finds in `lines`, the catalogue holding the references `inCatalogue`. */
async function problemOf(lines: string[], inCatalogue: string[] = []) {
	const check = new FileCheck();
	for (const line of lines) await check.add(line);
	return check.finish(reference => inCatalogue.includes(reference.id));
}

describe("FileCheck: an import file refused whole, naming its first bad line", () => {
	test("a whole file passes; a game may refer to a record the catalogue holds", async () => {
		expect(await problemOf([header(1, 1, 2), category(C1), author(A1), game(G1, C1, A1), game(G2, C2, A1)], [C2])).toBeUndefined();
	});

	test.each([
		["a line that is not JSON", [header(1, 1, 1), category(C1), "{", game(G1, C1, A1)], 3, /^not JSON/],
		["a header of another format", ['{"format":"other"}'], 1, /not the header of a game-catalogue export/],
		["an empty file", [], 1, /the file is empty/],
		[
			"an unknown kind",
			[header(1, 0, 0), JSON.stringify({ kind: "publisher", id: C1 })],
			2,
			/'kind' must be one of category, author, game/,
		],
		...(["category", "author", "game"] as const).map((kind): [string, string[], number, RegExp] => [
			`a kind in an array (${kind})`,
			[header(1, 1, 1), JSON.stringify({ kind: [kind], id: C1, name: "Euro" })],
			2,
			/'kind' must be one of category, author, game/,
		]),
		["a category after the authors", [header(1, 1, 0), author(A1), category(C1)], 3, /a category after the authors/],
		["an id the catalogue does not issue", [header(1, 0, 0), category("42")], 2, /'id' is not an id the catalogue issues/],
		["a field too long", [header(1, 0, 0), category(C1, "x".repeat(101))], 2, /'name' field length must be less than or equal to 100/],
		["a name with a control character", [header(1, 0, 0), category(C1, "a\u0000b")], 2, /control characters/],
		[
			"an unknown field",
			[header(1, 1, 1), category(C1), author(A1), game(G1, C1, A1, { price: 3 })],
			4,
			/fields a record of its kind has not: price/,
		],
		["an age out of range", [header(1, 1, 1), category(C1), author(A1), game(G1, C1, A1, { age: 100 })], 4, /less than or equal to 99/],
		[
			"a duplicate id",
			[header(1, 1, 2), category(C1), author(A1), game(G1, C1, A1), game(G1, C1, A1)],
			5,
			/the game \w+ is also on line 4/,
		],
		[
			"a game whose category is nowhere",
			[header(1, 1, 1), category(C1), author(A1), game(G1, C3, A1)],
			4,
			/the category \w+ is neither in the file nor in the catalogue/,
		],
		["a game whose author is nowhere", [header(1, 1, 1), category(C1), author(A1), game(G1, C1, A2)], 4, /the author \w+ is neither/],
		[
			"counts unlike the header's (a file cut short)",
			[header(1, 1, 3), category(C1), author(A1), game(G1, C1, A1)],
			1,
			/the header counts 3 games, the file holds 1 \(cut short\?\)/,
		],
	])("%s", async (_name, lines, line, reason) => {
		const problem = await problemOf(lines);
		expect(problem?.line).toBe(line);
		expect(problem?.reason).toMatch(reason);
	});

	test("the first bad line is named: a missing reference before a malformed line, a malformed line before a later missing reference", async () => {
		const lines = [header(1, 1, 3), category(C1), author(A1), game(G1, C3, A1), "{", game(G2, C2, A1)];
		expect((await problemOf(lines))?.line).toBe(4);
		expect((await problemOf(lines, [C3]))?.line).toBe(5);
	});
});

/** A catalogue for exportCatalogue: its records by service, which `before` may change before each call is answered. */
function fakeCatalogue(records: Record<string, StoredRecord[]>, before: (service: string, params: { ids?: string[] }) => void): Caller {
	return async <T>(action: string, params: object) => {
		const [service] = action.split(".");
		const { after, ids, limit } = params as { after?: string; ids?: string[]; limit?: number };
		before(service, { ids });
		const sorted = [...records[service]].sort((a, b) => (a.id < b.id ? -1 : 1));
		const page = ids ? sorted.filter(r => ids.includes(r.id)) : sorted.filter(r => !after || r.id > after).slice(0, limit);
		return page as T;
	};
}

describe("exportCatalogue: consistent while writes go on", () => {
	let spoolDir: string;
	beforeEach(async () => (spoolDir = await mkdtemp(path.join(tmpdir(), "export-unit-"))));
	afterEach(() => rm(spoolDir, { recursive: true, force: true }));

	async function exported(call: Caller) {
		const out = new PassThrough();
		let text = "";
		out.on("data", chunk => (text += chunk));
		const summary = await exportCatalogue({ call, page: 2, spoolDir }, out);
		return {
			summary,
			lines: text
				.trim()
				.split("\n")
				.map(line => JSON.parse(line) as Record<string, unknown>),
		};
	}

	test("a game made after the categories were read brings its new category in, in id order; a game whose new category is gone by then is read again", async () => {
		const g = (id: string, c: string) => ({ id, title: "Tigris", age: 12, category: c, author: A1 });
		const records: Record<string, StoredRecord[]> = {
			categories: [{ id: C1, name: "One" }],
			authors: [{ id: A1, name: "Reiner Knizia", nationality: "German" }],
			games: [g(G1, C1), g(G3, C1)],
		};
		const call = fakeCatalogue(records, (service, { ids }) => {
			// Once the categories were read: C2 and C3 are made, G2 on C2, and G1 moves to C3.
			if (service === "authors") {
				records.categories.push({ id: C2, name: "Two" }, { id: C3, name: "Three" });
				records.games.push(g(G2, C2));
				records.games[0] = g(G1, C3);
			}
			// When the export asks for C2 and C3: G1 has moved back to C1, and C3 is deleted.
			if (service === "categories" && ids) {
				records.games[0] = g(G1, C1);
				records.categories = records.categories.filter(record => record.id !== C3);
			}
		});
		const { summary, lines } = await exported(call);
		const ids = (kind: string) => lines.filter(line => line.kind === kind).map(line => line.id);
		expect(ids("category")).toEqual([C1, C2]);
		expect(lines.filter(line => line.kind === "game")).toEqual([
			{ kind: "game", ...g(G1, C1) },
			{ kind: "game", ...g(G2, C2) },
			{ kind: "game", ...g(G3, C1) },
		]);
		expect(lines[0]).toMatchObject({ format: "game-catalogue", version: 1, counts: { categories: 2, authors: 1, games: 3 } });
		expect(summary).toEqual({ counts: { categories: 2, authors: 1, games: 3 }, readAgain: 3, leftOut: 0, refusable: [] });
		expect(await problemOf(lines.map(line => JSON.stringify(line)))).toBeUndefined();
	});

	test("records an import would refuse (stored before a rule of today) are written, and named with why", async () => {
		const records: Record<string, StoredRecord[]> = {
			categories: [{ id: C1, name: "x".repeat(101) }],
			authors: [{ id: A1, name: "Reiner\u0007Knizia", nationality: "German" }],
			games: [{ id: G1, title: "Tigris", age: 12, category: C1, author: A1 }],
		};
		const { summary, lines } = await exported(fakeCatalogue(records, () => undefined));
		expect(lines).toHaveLength(4);
		expect(summary.refusable).toEqual([
			{ kind: "category", id: C1, reason: expect.stringMatching(/'name' field length must be less than or equal to 100/) },
			{ kind: "author", id: A1, reason: expect.stringMatching(/control characters/) },
		]);
	});

	test("a game whose category keeps going away is left out, not written with a dangling reference", async () => {
		const records: Record<string, StoredRecord[]> = {
			categories: [{ id: C1, name: "One" }],
			authors: [{ id: A1, name: "Reiner Knizia", nationality: "German" }],
			games: [{ id: G1, title: "Tigris", age: 12, category: C2, author: A1 }],
		};
		const { summary, lines } = await exported(fakeCatalogue(records, () => undefined));
		expect(lines.filter(line => line.kind === "game")).toEqual([]);
		expect(summary.leftOut).toBe(1);
	});
});

describe("importFile: a batch refused is sent again a record at a time", () => {
	test("only the records refused are left out, each reported with its line; the others are imported", async () => {
		const lines = [header(1, 1, 3), category(C1), author(A1), game(G1, C1, A1), game(G2, C2, A1), game(G3, C1, A1)];
		const sent: string[][] = [];
		const call: Caller = async <T>(_action: string, params: object) => {
			const { records } = params as { records: { id: string; category?: string }[] };
			sent.push(records.map(record => record.id));
			// C2 was deleted after the file was checked.
			if (records.some(record => record.category === C2)) throw new CatalogueError(texts.categoryNotFound, "NOT_FOUND");
			return { created: records.length, unchanged: 0, updated: 0 } as T;
		};
		const summary = await importFile({ file: "f", lines: () => toLines(lines), call, batch: 10 }, 5);
		expect(summary).toEqual({ read: 5, created: 4, unchanged: 0, updated: 0, refused: [{ line: 5, reason: texts.categoryNotFound }] });
		expect(sent).toEqual([[C1], [A1], [G1, G2, G3], [G1], [G2], [G3]]);
	});

	test.each([
		["the service not available", new Errors.ServiceNotAvailableError({ action: "categories.importRecords", nodeID: "n" })],
		["the service unknown", new Errors.ServiceNotFoundError({ action: "categories.importRecords" })],
		["its queue full", new Errors.QueueIsFullError({ action: "categories.importRecords", nodeID: "n", size: 128, limit: 128 })],
		["its store failing", storageFailure(texts.updateCategory)],
	])("a failure that is no refusal (%s) stops the import, no record reported as refused", async (_name, failure) => {
		const sent: unknown[] = [];
		const call: Caller = (_action, params) => {
			sent.push(params);
			return Promise.reject(failure);
		};
		const lines = () => toLines([header(2, 0, 0), category(C1), category(C2)]);
		await expect(importFile({ file: "f", lines, call, batch: 10 }, 2)).rejects.toBe(failure);
		expect(sent).toHaveLength(1);
	});
});

describe("blank lines", () => {
	test("after the header, a blank line (spaces, or the editor's last newline) is passed over in the check and the import", async () => {
		const lines = [header(1, 1, 1), category(C1), "", author(A1), "  \t", game(G1, C1, A1), "", ""];
		const sent: string[] = [];
		const call: Caller = async <T>(_action: string, params: object) => {
			sent.push(...(params as { records: StoredRecord[] }).records.map(record => record.id));
			return { created: 1, unchanged: 0, updated: 0 } as T;
		};
		const options = { file: "f", lines: () => toLines(lines), call, batch: 10 };
		expect(await checkFile(options)).toBe(3);
		expect((await importFile(options, 3)).read).toBe(3);
		expect(sent).toEqual([C1, A1, G1]);
	});

	test("a blank first line is no header", async () => {
		expect(await problemOf(["", header(0, 0, 0)])).toMatchObject({ line: 1, reason: expect.stringMatching(/^not JSON/) as string });
	});
});

describe("U+2028 and U+2029: written escaped, read raw", () => {
	const title = 'Tigris\u2028& "Euphrat"\u2029à Pégase';
	const separators = /[\u2028\u2029]/;
	let dir: string;
	beforeEach(async () => (dir = await mkdtemp(path.join(tmpdir(), "transfer-lines-"))));
	afterEach(() => rm(dir, { recursive: true, force: true }));

	/** `text` written to a file of `dir`; its name. */
	async function fileOf(text: string) {
		const file = path.join(dir, "catalogue.jsonl");
		await writeFile(file, text);
		return file;
	}

	async function linesOf(file: string) {
		const lines: string[] = [];
		for await (const line of readLines(file)) lines.push(line);
		return lines;
	}

	test("a record's line escapes them and parses back to the same title", () => {
		const line = recordLine("game", { id: G1, title, age: 12, category: C1, author: A1 });
		expect(line).not.toMatch(separators);
		expect(line).toContain("\\u2028");
		expect(JSON.parse(line)).toEqual({ kind: "game", id: G1, title, age: 12, category: C1, author: A1 });
	});

	test('readLines splits at "\\n" only: a raw U+2028 inside a JSON string stays in its line', async () => {
		const raw = JSON.stringify({ kind: "game", title });
		expect(raw).toMatch(separators);
		expect(await linesOf(await fileOf(`${raw}\n${category(C1)}\n`))).toEqual([raw, category(C1)]);
	});

	test('readLines drops the "\\r" of CRLF line ends', async () => {
		expect(await linesOf(await fileOf(`${category(C1)}\r\n${author(A1)}\r\n`))).toEqual([category(C1), author(A1)]);
	});

	test("readLines refuses a line that is not UTF-8 (a file saved as Latin-1), naming it, instead of reading U+FFFD", async () => {
		const file = path.join(dir, "latin1.jsonl");
		await writeFile(
			file,
			Buffer.concat([
				Buffer.from(`${category(C1)}\n${author(A1)}\n`),
				Buffer.from(`${game(G1, C1, A1, { title: "Müller" })}\n`, "latin1"),
			]),
		);
		await expect(linesOf(file)).rejects.toEqual(new NotUtf8Line(3));
		const call: Caller = async () => {
			throw new Error("nothing is asked of the catalogue");
		};
		await expect(checkFile({ file, lines: () => readLines(file), call, batch: 10 })).rejects.toThrow(
			`${file}, line 3: not UTF-8 text (save the file as UTF-8). Nothing was imported.`,
		);
	});

	test("readLines reads a character cut between two of the file's chunks whole", async () => {
		// 64 KiB chunks: a title of two-byte letters crosses their boundaries.
		const long = game(G1, C1, A1, { title: "é".repeat(100_000) });
		expect(await linesOf(await fileOf(`${category(C1)}\n${long}\n${author(A1)}`))).toEqual([category(C1), long, author(A1)]);
	});

	test("readLines refuses a line longer than 1 MiB, naming it, also when its end comes in the chunk after the one that made it long", async () => {
		const justOver = game(G1, C1, A1, { title: "x".repeat(MAX_LINE_BYTES + 20_000) });
		for (const after of ["\n", `\n${author(A1)}\n`])
			await expect(linesOf(await fileOf(`${category(C1)}\n${justOver}${after}`))).rejects.toEqual(new LongLine(2));
		const under = game(G1, C1, A1, { title: "x".repeat(MAX_LINE_BYTES - 200) });
		expect(await linesOf(await fileOf(`${category(C1)}\n${under}\n`))).toEqual([category(C1), under]);
	});

	test("readLines throws a read error rather than waiting for lines that never come", async () => {
		await expect(linesOf(path.join(dir, "missing.jsonl"))).rejects.toThrow(/ENOENT/);
	});

	test("an export of names and titles holding them writes lines with them escaped, which parse back", async () => {
		const records: Record<string, StoredRecord[]> = {
			categories: [{ id: C1, name: "Euro\u2029games" }],
			authors: [{ id: A1, name: "Reiner\u2028Knizia", nationality: "German" }],
			games: [G1, G2, G3].map(id => ({ id, title, age: 12, category: C1, author: A1 })),
		};
		const out = new PassThrough();
		let text = "";
		out.on("data", chunk => (text += chunk));
		const summary = await exportCatalogue({ call: fakeCatalogue(records, () => undefined), page: 2, spoolDir: dir }, out);
		expect(summary).toMatchObject({ counts: { categories: 1, authors: 1, games: 3 }, refusable: [] });
		expect(text).not.toMatch(separators);
		const lines = text.trimEnd().split("\n");
		expect(lines.slice(1).map(line => JSON.parse(line) as unknown)).toEqual([
			{ kind: "category", ...records.categories[0] },
			{ kind: "author", ...records.authors[0] },
			...records.games.map(record => ({ kind: "game", ...record })),
		]);
	});

	test.each([
		["\\n", "\n"],
		["\\r\\n", "\r\n"],
	])("a file from another tool with them raw, lines ending in %s, is checked and imported with the title whole", async (_name, end) => {
		const lines = [header(1, 1, 1), category(C1), author(A1), game(G1, C1, A1, { title })];
		const file = await fileOf(lines.map(line => `${line}${end}`).join(""));
		const sent: StoredRecord[] = [];
		const call: Caller = async <T>(_action: string, params: object) => {
			sent.push(...(params as { records: StoredRecord[] }).records);
			return { created: 1, unchanged: 0, updated: 0 } as T;
		};
		const options = { file, lines: () => readLines(file), call, batch: 10 };
		expect(await checkFile(options)).toBe(3);
		await importFile(options, 3);
		expect(sent.find(record => record.id === G1)?.title).toBe(title);
	});
});

async function* toLines(lines: string[]) {
	yield* lines;
}

describe("the file an export is written to", () => {
	test("is refused in the data folder (through a link too), when it is a SQLite database, a folder, a link, a device or a pipe; any other file is taken", async () => {
		const root = await mkdtemp(path.join(tmpdir(), "catalogue-export-target-"));
		try {
			const data = path.join(root, "data");
			await mkdir(path.join(data, "sub"), { recursive: true });
			await symlink(data, path.join(root, "link"));
			for (const inData of [
				path.join(data, "catalogue.sqlite"),
				path.join(data, "sub", "x.jsonl"),
				path.join(root, "link", "x.jsonl"),
			])
				expect(refusedExportTarget(inData, data)).toContain(`is in the data folder ${data} (DATA_DIR)`);
			const database = path.join(root, "other.sqlite");
			const other = new DatabaseSync(database);
			other.exec("CREATE TABLE t (x)");
			other.close();
			expect(refusedExportTarget(database, data)).toBe(
				`The export's file ${database} is a SQLite database, not an export: give another file.`,
			);
			expect(refusedExportTarget(root, data)).toBe(`The export's file ${root} is a folder: give the name of a file.`);
			// Renamed over, these would be replaced, not written through: /dev/null itself would become a file.
			const pipe = path.join(root, "pipe");
			execFileSync("mkfifo", [pipe]);
			const link = path.join(root, "to-previous.jsonl");
			await symlink(path.join(root, "previous.jsonl"), link);
			for (const notAFile of [pipe, link, "/dev/null"])
				expect(refusedExportTarget(notAFile, data)).toBe(
					`The export's file ${notAFile} is not a file (a link, a device, a pipe or a socket), which the export would replace: give the name of a file, or - for the standard output.`,
				);
			expect(lstatSync("/dev/null").isCharacterDevice()).toBe(true);
			const previous = path.join(root, "previous.jsonl");
			await writeFile(previous, "an earlier export\n");
			expect(refusedExportTarget(previous, data)).toBeUndefined();
			expect(refusedExportTarget(path.join(root, "new.jsonl"), data)).toBeUndefined();
		} finally {
			await rm(root, { recursive: true, force: true });
		}
	});
});
