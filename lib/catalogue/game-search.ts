import { CatalogueError } from "./errors";
import { GAME } from "./kinds";
import { compileTitleFilter, type TitleFilter } from "./title-filter";

/**
 * A search of the games (GET /game and POST /game): what the store selects, and the title test
 * that runs in the service, since the store has no RE2 (lib/catalogue/title-filter.ts).
 */
export interface GameSearch {
	/** The visible games, of the category when one is given. */
	query: Record<string, unknown>;
	/** Absent when every title matches: the store alone can then sort, count and page. */
	title?: TitleFilter;
}

/**
 * The search for games whose title matches `title` and whose category is `idCategory`, among the `visible` ones.
 * Throws a 400 (INVALID_PATTERN) naming `title` for a pattern that is not valid or too complex.
 */
export function gameSearch({ title, idCategory }: { title?: string; idCategory?: string }, visible: Record<string, unknown>): GameSearch {
	const query = idCategory ? { ...visible, category: idCategory } : visible;
	if (!title) return { query };
	const matches = compileTitleFilter(title);
	if (typeof matches !== "function") {
		throw new CatalogueError(GAME.fields.title.filter.refused, "INVALID_PATTERN", [
			{ field: "title", message: matches.refused, type: "pattern" },
		]);
	}
	return { query, title: matches };
}

/** Those of `games` (stored records, in their order) whose title the search's title test keeps: all when it has none. */
export const titleKept = ({ title }: GameSearch, games: Record<string, unknown>[]): Record<string, unknown>[] =>
	title ? games.filter(game => title(String(game.title))) : games;
