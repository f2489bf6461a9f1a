/**
 * The catalogue's export file (docs/contract.md, "Export and import"): JSON Lines, a header, then categories, authors and games, each
 * ordered by id. Records pass the services' own rules (lib/catalogue/kinds.ts), so a file the import takes is one the services take.
 */
import { fieldNames, fileRules, type Kind as KindDefinition, type RecordOf } from "../catalogue/kind";
import { KINDS as DEFINED_KINDS } from "../catalogue/kinds";
import type { DataServiceName } from "../catalogue/services";

/** Records per call of a service, both ways: a page of an export, a batch of an import. */
export const TRANSFER_BATCH = 500;

/** Records per page of an export: few round trips through the cluster, each a bounded message. */
export const EXPORT_PAGE = 2000;

export const FORMAT = "game-catalogue";
export const VERSION = 1;

/** The kinds of record (lib/catalogue/kinds.ts), in the order the file holds them, each with the service that keeps it. */
export const KINDS = DEFINED_KINDS;

export type Kind = (typeof KINDS)[number]["kind"];

/** The service that keeps the records of `kind`. */
export const serviceOf = (kind: Kind) => KINDS.find(k => k.kind === kind)!.service;

export type Counts = Record<DataServiceName, number>;

export interface Header {
	format: typeof FORMAT;
	version: typeof VERSION;
	exportedAt: string;
	counts: Counts;
}

/** A record as the file holds it: `kind`, then its fields, a game's category and author as ids. */
export type FileRecord = (typeof KINDS)[number] extends infer K
	? K extends KindDefinition
		? { kind: K["kind"] } & RecordOf<K>
		: never
	: never;

/** A record as a service stores it: its fields without `kind`. */
export type StoredRecord = { id: string } & Record<string, unknown>;

/** The fields of each kind, as fastest-validator rules: the services' limits and text rules. */
export const RECORD_FIELDS = Object.fromEntries(KINDS.map(kind => [kind.kind, fileRules(kind)])) as Record<
	Kind,
	ReturnType<typeof fileRules>
>;

/** The names of each kind's fields, in the order its lines write them (`id` first), looked up once per line. */
const FIELD_NAMES = Object.fromEntries(KINDS.map(kind => [kind.kind, fieldNames(kind)])) as Record<Kind, string[]>;

/** `value` as JSON on one line, U+2028 and U+2029 escaped: JSON allows them raw, but Node's readline ends a line there. */
function jsonLine(value: object): string {
	return JSON.stringify(value).replace(/[\u2028\u2029]/g, separator => `\\u${separator.charCodeAt(0).toString(16)}`);
}

/** Line 1. */
export function headerLine(counts: Counts, exportedAt: Date): string {
	const header: Header = { format: FORMAT, version: VERSION, exportedAt: exportedAt.toISOString(), counts };
	return jsonLine(header);
}

/** A stored record's line: `kind` first, then its fields in their order; nothing else it may carry. */
export function recordLine(kind: Kind, record: StoredRecord): string {
	const line: Record<string, unknown> = { kind };
	for (const field of FIELD_NAMES[kind]) line[field] = record[field];
	return jsonLine(line);
}
