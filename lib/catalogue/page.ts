/** The page request and answer of POST /author and POST /game, independent of storage. */

import { texts } from "./errors";
import { wholeNumber } from "./params";

export const DEFAULT_PAGE_SIZE = 5;
export const MAX_PAGE_SIZE = 1000;

/** What a page of one kind of record may be sorted on, and what it is sorted on when `property` is absent. */
export interface SortFields<F extends string = string> {
	fields: readonly F[];
	byDefault: F;
}

export interface SortOrder<F extends string = string> {
	property?: F;
	direction?: string;
}

export interface Pageable<F extends string = string> {
	pageNumber: number;
	pageSize: number;
	sort?: SortOrder<F> | SortOrder<F>[];
}

/** The page number and size in effect. */
export interface PageWindow {
	pageNumber: number;
	pageSize: number;
}

export interface Page<T> {
	content: T[];
	pageable: PageWindow;
	totalElements: number;
}

/**
 * The validation rule of `pageable` for records sorted on `fields`: both numbers required, whole
 * and in range; `sort` one order or a list of at most one order per field; extra keys dropped.
 * One order is taken as a list of one (`convert`), so a wrong one gets one message, not one per
 * form it could have had.
 */
export function pageableRule(fields: readonly string[]) {
	const sortOrder = {
		type: "object",
		strict: "remove",
		props: {
			property: { type: "enum", values: fields, optional: true, messages: { enumValue: texts.unknownSortProperty } },
			direction: { type: "string", optional: true },
		},
	} as const;
	return {
		type: "object",
		strict: "remove",
		props: {
			pageNumber: wholeNumber(0),
			pageSize: wholeNumber(0, MAX_PAGE_SIZE),
			sort: { type: "array", convert: true, items: sortOrder, max: fields.length, optional: true },
		},
	} as const;
}

/** Falsy page numbers are page 0 and falsy sizes are the default size, as the interface says. */
export function effectivePage({ pageNumber, pageSize }: Pageable): PageWindow {
	return { pageNumber: pageNumber || 0, pageSize: pageSize || DEFAULT_PAGE_SIZE };
}

/**
 * moleculer-db's paging params of `_list` for the page: the store skips `offset` records and reads `limit`. Any page number is a
 * page (past the end: none of the records); the offset stays an exact integer, which every store takes, and is still past any end.
 */
export function listParams({ pageNumber, pageSize }: PageWindow): { page: number; pageSize: number; offset: number; limit: number } {
	return { page: pageNumber + 1, pageSize, offset: Math.min(pageNumber * pageSize, Number.MAX_SAFE_INTEGER), limit: pageSize };
}

/** The records of the page, out of all of them in order (for a search the store cannot page). */
export function pageSlice<T>(all: readonly T[], { pageNumber, pageSize }: PageWindow): T[] {
	const offset = pageNumber * pageSize;
	return all.slice(offset, offset + pageSize);
}

/**
 * The orders a page sorted on `fields` is read in, for the store's indexes: each field then the id, after the `leading` fields
 * every page filters on exactly (games: draft or not). The id alone needs none: it is the key.
 */
export const pageOrders = ({ fields }: Pick<SortFields, "fields">, leading: string[] = [], storedId = "_id"): string[][] =>
	fields.map(field => [...leading, ...(field === "id" ? [] : [field]), storedId]).filter(order => order.length > 1);

/**
 * Turns `sort` (one order or a list) into moleculer-db sort keys; an absent property sorts by the default, only `desc` is descending.
 * The id is always the last key, so records with equal keys keep creation order and pages never overlap.
 */
export function sortKeys<F extends string>(
	sort: SortOrder<F> | (SortOrder<F> | null)[] | null | undefined,
	{ byDefault }: Pick<SortFields<F>, "byDefault">,
	storedId = "_id",
): string[] {
	// A null (the validation lets optional fields be null) is absent, as the interface reads an absent sort or property.
	const orders = [sort ?? []].flat().filter(order => order !== null);
	const keys = new Map<string, string>();
	for (const { property, direction } of orders.length > 0 ? orders : [{}]) {
		const sorted = property ?? byDefault;
		const field = sorted === "id" ? storedId : sorted;
		if (!keys.has(field)) keys.set(field, direction === "desc" ? `-${field}` : field);
	}
	if (!keys.has(storedId)) keys.set(storedId, storedId);
	return [...keys.values()];
}
