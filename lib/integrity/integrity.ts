/** What a game refers to. */
export interface References {
	category: string;
	author: string;
}

export type Missing = keyof References;

/** The games whose category or author is not among those that exist, each with what is missing. */
export function orphans<T extends References>(
	games: T[],
	existing: { categories: Set<string>; authors: Set<string> },
): (T & { missing: Missing[] })[] {
	return games.flatMap(game => {
		const missing: Missing[] = [];
		if (!existing.categories.has(game.category)) missing.push("category");
		if (!existing.authors.has(game.author)) missing.push("author");
		return missing.length > 0 ? [{ ...game, missing }] : [];
	});
}

/**
 * Queries for the games that refer to the category and/or author given, counting a change in progress as referring already,
 * since either outcome must stay valid until it settles. Two disjoint queries, each led by an indexed field, so stores count from indexes.
 * Counted `changing` first: a change that settles between the two counts (another replica's write) is then seen by one of them,
 * where counted the other way round it would be seen by neither (docs/integrity.md).
 */
export function referringTo(references: Partial<References>): { changing: Record<string, unknown>; now: Record<string, unknown> } {
	const given = Object.entries(references).filter(([, id]) => id !== undefined);
	const now = Object.fromEntries(given);
	const changing = Object.fromEntries(given.map(([field, id]) => [`change.${field}`, id]));
	const notNow = given.map(([field, id]) => ({ [field]: { $ne: id } }));
	return { changing: { ...changing, $or: notNow }, now };
}
