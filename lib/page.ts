/** The author page request and answer of POST /author, independent of storage. */

export const DEFAULT_PAGE_SIZE = 5;
export const MAX_PAGE_SIZE = 1000;
/** Keeps the offset (page number times size) an exact integer in every backend. */
export const MAX_PAGE_NUMBER = 1_000_000_000;
export const AUTHOR_SORT_FIELDS = ["id", "name", "nationality"] as const;

export type AuthorSortField = (typeof AUTHOR_SORT_FIELDS)[number];

export interface SortOrder {
	property?: AuthorSortField;
	direction?: string;
}

export interface Pageable {
	pageNumber: number;
	pageSize: number;
	sort?: SortOrder | SortOrder[];
}

export interface Page<T> {
	content: T[];
	pageable: { pageNumber: number; pageSize: number };
	totalElements: number;
}

/** Falsy page numbers are page 0 and falsy sizes are the default size, as the interface says. */
export function effectivePage({ pageNumber, pageSize }: Pageable): { pageNumber: number; pageSize: number } {
	return { pageNumber: pageNumber || 0, pageSize: pageSize || DEFAULT_PAGE_SIZE };
}

/**
 * Turns `sort` (one order or a list, first key first) into moleculer-db sort keys. An absent
 * property sorts by name; only lowercase `desc` is descending. The id is always the last key, so
 * records with equal keys keep creation order and pages never overlap.
 */
export function sortKeys(sort: SortOrder | SortOrder[] | undefined, storedId = "_id"): string[] {
	const orders = sort === undefined ? [] : [sort].flat();
	const keys = new Map<string, string>();
	for (const { property = "name", direction } of orders.length > 0 ? orders : [{}]) {
		const field = property === "id" ? storedId : property;
		if (!keys.has(field)) keys.set(field, direction === "desc" ? `-${field}` : field);
	}
	if (!keys.has(storedId)) keys.set(storedId, storedId);
	return [...keys.values()];
}
