/**
 * The catalogue's export file (docs/contract.md, "Export and import"): JSON Lines, a header, then the
 * categories, the authors and the games, each kind ordered by id. The rules a record must pass
 * are the services' own (lib/catalogue/params.ts), so a file the import takes is one the services
 * take.
 */
import { ID_SHAPE, text, wholeNumber } from "../catalogue/params";
import type { DataServiceName } from "../catalogue/services";

/** Records per call of a service, both ways: a page of an export, a batch of an import (about 100 KB of games). */
export const TRANSFER_BATCH = 500;

/** Records per page of an export (about 400 KB of games): few round trips through the cluster, each a bounded message. */
export const EXPORT_PAGE = 2000;

export const FORMAT = "game-catalogue";
export const VERSION = 1;

/** The kinds of record, in the order the file holds them, each with the service that keeps it. */
export const KINDS = [
	{ kind: "category", service: "categories" },
	{ kind: "author", service: "authors" },
	{ kind: "game", service: "games" },
] as const satisfies readonly { kind: string; service: DataServiceName }[];

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

/** A record as the file holds it: a game's category and author are ids. */
export type FileRecord =
	| { kind: "category"; id: string; name: string }
	| { kind: "author"; id: string; name: string; nationality: string }
	| { kind: "game"; id: string; title: string; age: number; category: string; author: string };

/** A record as a service stores it: its fields without `kind`. */
export type StoredRecord = { id: string } & Record<string, unknown>;

/** `field`: an id as the catalogue issues it (a ULID); any other is refused, saying so. */
const id = (field: string) =>
	({ type: "string", pattern: ID_SHAPE, messages: { stringPattern: `'${field}' is not an id the catalogue issues` } }) as const;

/** The fields of each kind, as fastest-validator rules: the services' limits and text rules. */
export const RECORD_FIELDS = {
	category: { id: id("id"), name: text(100) },
	author: { id: id("id"), name: text(200), nationality: text(100) },
	game: {
		id: id("id"),
		title: text(200),
		age: wholeNumber(0, 99),
		category: id("category"),
		author: id("author"),
	},
} as const;

/** The names of a kind's fields, in the order its lines write them. */
export const fieldsOf = (kind: Kind) => Object.keys(RECORD_FIELDS[kind]);

/**
 * `value` as JSON on one line, U+2028 and U+2029 escaped: JSON allows them raw in a string, but
 * some line readers (Node's readline among them) end a line there.
 */
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
	for (const field of fieldsOf(kind)) line[field] = record[field];
	return jsonLine(line);
}
