import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
	compactionDue,
	cutTornTail,
	damagedFileText,
	escapeLineBreaks,
	firstUnreadableLine,
	tornTailText,
} from "../../lib/storage/nedb-files";

const dir = mkdtempSync(path.join(tmpdir(), "catalogue-nedb-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const now = new Date("2024-06-07T10:11:12.345Z");
const record = '{"name":"Euro","_id":"01J0000000000000000000000A"}\n';
const other = '{"name":"Ameritrash","_id":"01J0000000000000000000000B"}\n';
// "Caylus" in half: the é is two bytes in UTF-8 and only its first one was written.
const halfE = Buffer.from('{"name":"Caylus é","_id":"01J0', "utf8").subarray(0, Buffer.byteLength('{"name":"Caylus ', "utf8") + 1);

let count = 0;
/** A new data file holding `bytes`. */
function dataFile(bytes: Buffer): string {
	count += 1;
	const file = path.join(dir, `case-${count}.db`);
	writeFileSync(file, bytes);
	return file;
}

describe("cutTornTail cuts off a half-written last line, and nothing else", () => {
	const table: [string, Buffer, number][] = [
		["an empty file", Buffer.alloc(0), 0],
		['a file ending in "\\n"', Buffer.from(record + other), 0],
		["a torn last line", Buffer.from(record + '{"name":"Caylus","_i'), Buffer.byteLength('{"name":"Caylus","_i')],
		["a last line that is JSON without its newline", Buffer.from(record + other.trimEnd()), 0],
		["a single torn line, with no newline at all", Buffer.from('{"name":"Cay'), Buffer.byteLength('{"name":"Cay')],
		["a last line cut in the middle of a two-byte character", Buffer.concat([Buffer.from(record), halfE]), halfE.length],
	];

	test.each(table)("%s", async (_, bytes, removed) => {
		const file = dataFile(bytes);
		const torn = await cutTornTail(file, now);
		const kept = bytes.subarray(0, bytes.length - removed);
		expect(readFileSync(file)).toEqual(kept);
		if (removed === 0) {
			expect(torn).toBeUndefined();
			expect(readdirSync(dir).filter(name => name.startsWith(`${path.basename(file)}.torn`))).toEqual([]);
			return;
		}
		expect(torn).toEqual({ bytes: removed, copy: `${file}.torn-2024-06-07T101112.345Z` });
		expect(readFileSync(torn!.copy)).toEqual(bytes.subarray(kept.length));
	});

	test("a torn line longer than one chunk read from the end is cut whole", async () => {
		const torn = `{"name":"${"x".repeat(100)}`;
		const file = dataFile(Buffer.from(record + other + torn));
		expect(await cutTornTail(file, now, 16)).toEqual({ bytes: torn.length, copy: expect.stringContaining(".torn-") });
		expect(readFileSync(file, "utf8")).toBe(record + other);
	});

	test("a file that does not exist yet is left to NeDB", async () => {
		expect(await cutTornTail(path.join(dir, "new.db"), now)).toBeUndefined();
	});
});

describe("firstUnreadableLine", () => {
	test("numbers the first line that is not JSON from 1", async () => {
		expect(await firstUnreadableLine(dataFile(Buffer.from(record + "#garbage\n" + other + "{x\n")))).toBe(2);
	});

	test("finds a line holding a character NeDB reads as a line break", async () => {
		expect(await firstUnreadableLine(dataFile(Buffer.from(record + '{"name":"a\u2028b"}\n')))).toBe(2);
	});

	test("finds none in a readable file", async () => {
		expect(await firstUnreadableLine(dataFile(Buffer.from(record + other)))).toBeUndefined();
	});
});

test("the texts name the file, the bytes, the copy, the line and what to do", () => {
	expect(tornTailText("/data/games.db", { bytes: 17, copy: "/data/games.db.torn-x" })).toMatch(
		/17 bytes from the end of \/data\/games\.db.*kept in \/data\/games\.db\.torn-x\.$/,
	);
	const damaged = damagedFileText("/data/games.db", 12);
	expect(damaged).toContain("/data/games.db is damaged at line 12");
	expect(damaged).toContain("Restore /data/games.db from a backup, or repair or remove line 12");
	expect(damagedFileText("/data/games.db", undefined)).toContain("repair or remove the damaged line");
});

test("escapeLineBreaks keeps a record on one line and reads back as the same record", () => {
	const line = JSON.stringify({ name: "a\u2028b\u2029c\u0085d" });
	const escaped = escapeLineBreaks(line);
	expect(escaped).not.toMatch(/[\u0085\u2028\u2029]/);
	expect(JSON.parse(escaped)).toEqual(JSON.parse(line));
});

test.each([
	[1000, 0, false],
	[1001, 0, true],
	[1001, 5000, false],
	[5001, 5000, true],
])("compactionDue(%i appended, %i records at the last compaction) is %s", (appended, records, due) => {
	expect(compactionDue(appended, records)).toBe(due);
});
