/**
 * The whole-file check of an import (docs/contract.md, "Export and import": a file with any invalid line is refused whole, naming the
 * first bad line). Fed one line at a time, it keeps an id and line number per record, never a record, and the references the file lacks.
 */
import Validator, { type ValidationSchema } from "fastest-validator";
import { FORMAT, KINDS, RECORD_FIELDS, VERSION, type Counts, type FileRecord, type Kind } from "./format";

export interface Problem {
	line: number;
	reason: string;
}

const validator = new Validator({
	useNewCustomCheckerFunction: true,
	messages: { objectStrict: "fields a record of its kind has not: {actual}" },
});

const checkHeader = validator.compile({
	$$strict: true,
	format: { type: "equal", value: FORMAT, strict: true },
	version: { type: "equal", value: VERSION, strict: true },
	exportedAt: { type: "string" },
	counts: {
		type: "object",
		strict: true,
		props: Object.fromEntries(KINDS.map(({ service }) => [service, { type: "number", integer: true, min: 0 }])),
	},
});

/** A line of `kind`: its `kind`, its fields, nothing else. */
function recordSchema(kind: Kind): ValidationSchema {
	return { $$strict: true, kind: { type: "equal", value: kind, strict: true }, ...RECORD_FIELDS[kind] };
}

const checkRecord = Object.fromEntries(KINDS.map(({ kind }) => [kind, validator.compile(recordSchema(kind))])) as Record<
	Kind,
	ReturnType<typeof validator.compile>
>;

/** Why an import would refuse the record of this line, or undefined when it would take it (the export checks its own lines so). */
export function lineRefused(line: string): Promise<string | undefined> {
	const value = JSON.parse(line) as { kind: Kind };
	return failed(checkRecord[value.kind], value);
}

const position = new Map<string, number>(KINDS.map(({ kind }, index) => [kind, index]));

/** What fastest-validator said, or undefined when it passed. */
async function failed(check: ReturnType<typeof validator.compile>, value: object): Promise<string | undefined> {
	const result = await check(value);
	return result === true ? undefined : result.map(error => error.message?.replace(/\.$/, "")).join("; ");
}

/** A game's reference that the file does not hold: the catalogue must. */
export interface OutsideReference {
	kind: "category" | "author";
	id: string;
}

/** A line of spaces or nothing, as an editor may leave after the last record: it holds no record, and an import passes over it. */
export const isBlank = (line: string) => line.trim() === "";

export class FileCheck {
	private lineNumber = 0;
	private header: { counts: Counts } | undefined;
	private kindAt = 0;
	private readonly ids = new Map<Kind, Map<string, number>>(KINDS.map(({ kind }) => [kind, new Map()]));
	/** Per kind, the references to ids the file lacks, each with the first line that makes it. */
	private readonly outside = { category: new Map<string, number>(), author: new Map<string, number>() };
	/** The first problem of the file's own, after which the lines are no longer read. */
	problem: Problem | undefined;

	/** Checks the next line of the file (its first is the header); the record, once it passed. */
	async add(text: string): Promise<FileRecord | undefined> {
		const line = ++this.lineNumber;
		if (this.problem || (line > 1 && isBlank(text))) return undefined;
		let value: unknown;
		try {
			// A byte order mark, which some editors put first, is not the file's JSON.
			value = JSON.parse(line === 1 ? text.replace(/^\uFEFF/, "") : text);
		} catch (err) {
			return this.refuse(line, `not JSON: ${(err as Error).message}`);
		}
		if (typeof value !== "object" || value === null || Array.isArray(value)) return this.refuse(line, "not a JSON object");
		if (line === 1) {
			const wrong = await failed(checkHeader, value);
			if (wrong) return this.refuse(1, `not the header of a game-catalogue export, version ${VERSION}: ${wrong}`);
			this.header = value as { counts: Counts };
			return undefined;
		}
		return this.record(line, value as Record<string, unknown>);
	}

	private async record(line: number, value: Record<string, unknown>): Promise<FileRecord | undefined> {
		const kind = value.kind as Kind;
		const at = typeof kind === "string" ? position.get(kind) : undefined;
		if (at === undefined) return this.refuse(line, `'kind' must be one of ${KINDS.map(k => k.kind).join(", ")}`);
		if (at < this.kindAt)
			return this.refuse(
				line,
				`a ${kind} after the ${KINDS[this.kindAt].service}: the file holds categories, then authors, then games`,
			);
		this.kindAt = at;
		const wrong = await failed(checkRecord[kind], value);
		if (wrong) return this.refuse(line, wrong);
		const record = value as FileRecord;
		const seen = this.ids.get(kind)!;
		const before = seen.get(record.id);
		if (before !== undefined) return this.refuse(line, `the ${kind} ${record.id} is also on line ${before}`);
		seen.set(record.id, line);
		if (record.kind === "game")
			for (const field of ["category", "author"] as const)
				if (!this.ids.get(field)!.has(record[field]) && !this.outside[field].has(record[field]))
					this.outside[field].set(record[field], line);
		return record;
	}

	private refuse(line: number, reason: string): undefined {
		this.problem = { line, reason };
		return undefined;
	}

	/** The counts the header announces; checked against the records by `finish`. */
	get counts(): Counts | undefined {
		return this.header?.counts;
	}

	/** The references the catalogue must hold, made on lines before the file's first problem. */
	outsideReferences(): OutsideReference[] {
		return (["category", "author"] as const).flatMap(kind =>
			[...this.outside[kind]].filter(([, line]) => !this.problem || line < this.problem.line).map(([id]) => ({ kind, id })),
		);
	}

	/**
	 * The file's first problem, once every line was added and the catalogue answered for the outside references:
	 * a reference to neither, a count unlike the header's, or a line's problem.
	 */
	finish(present: (reference: OutsideReference) => boolean): Problem | undefined {
		const missing = (["category", "author"] as const)
			.flatMap(kind => [...this.outside[kind]].map(([id, line]) => ({ kind, id, line })))
			.filter(reference => (!this.problem || reference.line < this.problem.line) && !present(reference))
			.sort((a, b) => a.line - b.line)[0];
		if (missing) return { line: missing.line, reason: `the ${missing.kind} ${missing.id} is neither in the file nor in the catalogue` };
		if (this.problem) return this.problem;
		if (this.lineNumber === 0) return { line: 1, reason: "the file is empty: line 1 must be the header" };
		for (const { kind, service } of KINDS) {
			const found = this.ids.get(kind)!.size;
			if (found !== this.header!.counts[service])
				return {
					line: 1,
					reason: `the header counts ${this.header!.counts[service]} ${service}, the file holds ${found} (cut short?)`,
				};
		}
		return undefined;
	}
}
