import type { BodyOf, ListedOf, RecordOf, SortFieldOf } from "../lib/catalogue/kind";
import type { GAME } from "../lib/catalogue/kinds";
import type { Missing } from "../lib/integrity/integrity";
import type { Pageable } from "../lib/catalogue/page";

/** A game as stored and as create answers it: category and author by id. */
export type Game = RecordOf<typeof GAME>;

/** A game in the list: category and author are the full records. */
export type ListedGame = ListedOf<typeof GAME>;

/** What create takes: category and author as `{ id }`. */
export type GameBody = BodyOf<typeof GAME>;

export type GameUpdate = GameBody & { id: string };

export interface GameFilter {
	title?: string;
	idCategory?: string;
}

/** POST /game: a page of the games GET /game would list with the same filters. */
export type GamePageRequest = GameFilter & { pageable: Pageable<SortFieldOf<typeof GAME>> };

export interface GameCountQuery {
	category?: string;
	author?: string;
}

/** A game whose category or author does not exist (any more). */
export type OrphanGame = Game & { missing: Missing[] };
