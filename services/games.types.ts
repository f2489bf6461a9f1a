import type { Missing } from "../lib/integrity/integrity";
import type { GameSortField, Pageable } from "../lib/catalogue/page";
import type { Author } from "./authors.types";
import type { Category } from "./categories.types";

/** A game as stored and as create answers it: category and author by id. */
export interface Game {
	id: string;
	title: string;
	age: number;
	category: string;
	author: string;
}

/** A game in the list: category and author are the full records. */
export type ListedGame = Omit<Game, "category" | "author"> & { category?: Category; author?: Author };

export interface GameBody {
	title: string;
	age: number;
	category: { id: string };
	author: { id: string };
}

export type GameUpdate = GameBody & { id: string };

export interface GameFilter {
	title?: string;
	idCategory?: string;
}

/** POST /game: a page of the games GET /game would list with the same filters. */
export type GamePageRequest = GameFilter & { pageable: Pageable<GameSortField> };

export interface GameCountQuery {
	category?: string;
	author?: string;
}

/** A game whose category or author does not exist (any more). */
export type OrphanGame = Game & { missing: Missing[] };
