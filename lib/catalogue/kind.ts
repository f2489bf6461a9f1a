/**
 * What a kind of record is made of (lib/catalogue/kinds.ts defines the three), and what derives from a definition:
 * the actions' `params`, the types, the examples, the export file's rules, the store's indexes and orders.
 */
import type { ErrorText } from "./errors";
import { pageableRule, pageOrders, type SortFields } from "./page";
import { filter, ID_SHAPE, idOf, referenceTo } from "./params";
import type { DataServiceName } from "./services";

/** A field holding a value: its rule (fastest-validator, from lib/catalogue/params.ts), meaning and example. */
export interface ValueField {
	rule: { readonly type: string; readonly maxCharacters?: number };
	description: string;
	example: string | number;
	/** Pages may be sorted on it. */
	sortable?: boolean;
	/**
	 * GET (and POST) lists keep the records whose field matches this query field: a pattern, with `refused` the 400 of one that cannot
	 * be used; without `refused`, literal text.
	 */
	filter?: { description: string; refused?: ErrorText };
}

/** A field holding the id of a record of another kind: sent as `{ id }`, stored as the id, listed as the record. */
export interface ReferenceField {
	refers: Kind;
	description: string;
	/** Lists keep the records that refer to the id given in this query field. */
	filter?: { param: string; description: string };
}

export type Field = ValueField | ReferenceField;

export interface Kind<Fields extends Record<string, Field> = Record<string, Field>> {
	kind: string;
	/** The service that keeps the records. */
	service: DataServiceName;
	/** The 400 of an id no record of the kind has. */
	unknown: ErrorText;
	/** The 400 of a delete refused while games refer to the record. */
	inUse?: ErrorText;
	/** Per action: the 400 a storage (or downstream) failure becomes. */
	failures: Record<string, ErrorText>;
	/** The example record's id, in the OpenAPI document. */
	exampleId: string;
	fields: Fields;
	/** Pages (POST) sort on `id` and the sortable fields, on this one when asked for none; no pages without it. */
	sortedBy?: string;
}

/** `definition`, its literal types kept, so that the types below read its fields. */
export const defineKind = <const Fields extends Record<string, Field>, const Name extends string>(
	definition: Kind<Fields> & { kind: Name },
) => definition;

const isReference = (field: Field): field is ReferenceField => "refers" in field;

type Flat<T> = { -readonly [K in keyof T]: T[K] };
type ValueOf<F> = F extends { refers: Kind } ? string : F extends { rule: { wholeNumber: object } } ? number : string;

/** A record as stored and answered by its own service: references as ids. */
export type RecordOf<K extends Kind> = Flat<{ id: string } & { -readonly [F in keyof K["fields"]]: ValueOf<K["fields"][F]> }>;

/** What `create` takes: references as `{ id }`. */
export type BodyOf<K extends Kind> = Flat<{
	-readonly [F in keyof K["fields"]]: K["fields"][F] extends { refers: Kind } ? { id: string } : ValueOf<K["fields"][F]>;
}>;

/** A record as lists answer it: references as the full records. */
export type ListedOf<K extends Kind> = Flat<
	{ id: string } & {
		-readonly [F in keyof K["fields"]]: K["fields"][F] extends { refers: infer R extends Kind } ? RecordOf<R> : ValueOf<K["fields"][F]>;
	}
>;

/** The fields a sort may name, for the page types. */
export type SortFieldOf<K extends Kind> =
	"id" | { [F in keyof K["fields"]]: K["fields"][F] extends { sortable: true } ? F & string : never }[keyof K["fields"]];

const entries = (kind: Kind) => Object.entries(kind.fields);

/** Every field of a record as answered, `id` first: moleculer-db's `settings.fields`. */
export const fieldNames = (kind: Kind) => ["id", ...Object.keys(kind.fields)];

/** The rules of the fields `create` and `update` take. */
const bodyRules = (kind: Kind) =>
	Object.fromEntries(entries(kind).map(([name, field]) => [name, isReference(field) ? referenceTo(field.refers.unknown) : field.rule]));

/** A body as `create` and `update` take it (references as `{ id }`), as the record stores it (references as ids). */
export function storedOf<K extends Kind>(kind: K, body: BodyOf<K>): Omit<RecordOf<K>, "id"> {
	const values = entries(kind).map(([name, field]) => {
		const value = (body as Record<string, unknown>)[name];
		return [name, isReference(field) ? (value as { id: string }).id : value];
	});
	return Object.fromEntries(values) as Omit<RecordOf<K>, "id">;
}

/** A stored record (references as ids) as `update` takes it (references as `{ id }`). */
export function asUpdate(kind: Kind, record: { id: string } & Record<string, unknown>): Record<string, unknown> {
	const values = entries(kind).map(([name, field]): [string, unknown] => [
		name,
		isReference(field) ? { id: record[name] } : record[name],
	]);
	return { id: record.id, ...Object.fromEntries(values) };
}

/** The JavaScript type each field of `kind` is stored as (a reference as its record's id), as `ValueOf` has it. */
export const storedTypes = (kind: Kind): Record<string, "string" | "number"> =>
	Object.fromEntries(
		entries(kind).map(([name, field]) => [name, !isReference(field) && "wholeNumber" in field.rule ? "number" : "string"]),
	);

/** The query fields of the lists, by the name the request uses. */
const filterRules = (kind: Kind) =>
	Object.fromEntries(
		entries(kind).flatMap(([name, field]) => {
			if (!field.filter) return [];
			if (isReference(field)) return [[field.filter.param, { type: "string", optional: true }]];
			return [[name, filter(field.rule.maxCharacters ?? Number.MAX_SAFE_INTEGER, !field.filter.refused)]];
		}),
	);

/** What each query field of the lists means, for the OpenAPI document. */
export const filterDescriptions = (kind: Kind): Record<string, string> =>
	Object.fromEntries(
		entries(kind).flatMap(([name, field]) =>
			field.filter ? [[isReference(field) ? field.filter.param : name, field.filter.description]] : [],
		),
	);

/** What pages of the kind sort on, or undefined when it has no pages. */
export function sortOf(kind: Kind): SortFields | undefined {
	if (kind.sortedBy === undefined) return undefined;
	const sortable = entries(kind).filter(([, field]) => !isReference(field) && field.sortable);
	return { fields: ["id", ...sortable.map(([name]) => name)], byDefault: kind.sortedBy };
}

/** The `params` of the kind's actions on HTTP, made once per kind; `page` only for a kind with pages. */
export function actionParams(kind: Kind) {
	let params = madeParams.get(kind);
	if (!params) madeParams.set(kind, (params = paramsOf(kind)));
	return params;
}

function paramsOf(kind: Kind) {
	const body = bodyRules(kind);
	const filters = filterRules(kind);
	const sort = sortOf(kind);
	return {
		list: { $$strict: "remove", ...filters },
		...(sort && { page: { $$strict: "remove", pageable: pageableRule(sort.fields), ...filters } }),
		get: {
			$$strict: "remove",
			id: [
				{ type: "string", empty: false },
				{ type: "array", items: "string" },
			],
			mapping: { type: "boolean", optional: true },
		},
		create: { $$strict: "remove", ...body },
		update: { $$strict: "remove", id: idOf(kind.unknown), ...body },
		remove: { id: idOf(kind.unknown) },
	} as const;
}

const madeParams = new WeakMap<Kind, ReturnType<typeof paramsOf>>();

/** What the store indexes: the referring fields (the deletes count games by them) and the orders pages are read in. */
export function storeIndexes(kind: Kind, leading: string[] = []) {
	const sort = sortOf(kind);
	return {
		indexes: entries(kind)
			.filter(([, field]) => isReference(field))
			.map(([name]) => name),
		orders: sort ? pageOrders(sort, leading) : [],
		leading,
	};
}

/** `field` of an export file: an id as the catalogue issues it (a ULID); any other is refused, saying so. */
const fileId = (field: string) =>
	({ type: "string", pattern: ID_SHAPE, messages: { stringPattern: `'${field}' is not an id the catalogue issues` } }) as const;

/** The rules of a record's line in an export file: the services' own, references as ids. */
export const fileRules = (kind: Kind) => ({
	id: fileId("id"),
	...Object.fromEntries(entries(kind).map(([name, field]) => [name, isReference(field) ? fileId(name) : field.rule])),
});

/** The example record as its own service answers it. */
export function exampleOf<K extends Kind>(kind: K): RecordOf<K> {
	const values = entries(kind).map(([name, field]) => [name, isReference(field) ? field.refers.exampleId : field.example]);
	return { id: kind.exampleId, ...Object.fromEntries(values) } as RecordOf<K>;
}

/** The example record as lists answer it, references as their example records. */
export function listedExampleOf<K extends Kind>(kind: K): ListedOf<K> {
	const values = entries(kind).map(([name, field]) => [name, isReference(field) ? exampleOf(field.refers) : field.example]);
	return { id: kind.exampleId, ...Object.fromEntries(values) } as ListedOf<K>;
}

/** What each field means, for the OpenAPI document's record schemas. */
export const fieldDescriptions = (kind: Kind): Record<string, string> =>
	Object.fromEntries(entries(kind).map(([name, field]) => [name, field.description]));
