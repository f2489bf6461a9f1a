import type { Author, AuthorBody } from "../services/authors.types";
import type { Category } from "../services/categories.types";
import type { Game, GameBody } from "../services/games.types";
import { inPool, sendJson } from "./http";

export type { Author, Category, Game };

/** What was seeded into one running catalogue, with the ids it gave. */
export interface Seeded {
	categories: Category[];
	authors: Author[];
	games: Game[];
}

const CATEGORY_NAMES = [
	"Eurogames",
	"Wargames",
	"Party games",
	"Abstract strategy",
	"Deck builders",
	"Cooperative",
	"Family",
	"Worker placement",
	"Roll and write",
	"Legacy",
];
const FIRST_NAMES = ["Reiner", "Uwe", "Elizabeth", "Vital", "Jamey", "Antoine", "Matt", "Isaac", "Corey", "Alexander"];
const LAST_NAMES = ["Knizia", "Rosenberg", "Hargrave", "Lacerda", "Stegmaier", "Bauza", "Leacock", "Childres", "Konieczka", "Pfister"];
const NATIONALITIES = ["German", "American", "Portuguese", "French", "Polish", "Spanish", "Japanese", "Italian"];
const ADJECTIVES = ["Crimson", "Lost", "Ancient", "Hidden", "Golden", "Silent", "Iron", "Northern"];
const NOUNS = ["Kingdom", "Harbour", "Empire", "Forest", "Railway", "Citadel", "Voyage", "Orchard", "Dynasty", "Frontier"];

/** Names repeat with a round number once the lists run out, so every record stays distinct. */
const round = (index: number, size: number) => (index < size ? "" : ` ${Math.floor(index / size) + 1}`);

const categoryName = (i: number) => CATEGORY_NAMES[i % CATEGORY_NAMES.length] + round(i, CATEGORY_NAMES.length);
const authorName = (i: number) =>
	`${FIRST_NAMES[i % FIRST_NAMES.length]} ${LAST_NAMES[Math.floor(i / FIRST_NAMES.length) % LAST_NAMES.length]}` +
	round(i, FIRST_NAMES.length * LAST_NAMES.length);
const gameTitle = (i: number) =>
	`${ADJECTIVES[i % ADJECTIVES.length]} ${NOUNS[Math.floor(i / ADJECTIVES.length) % NOUNS.length]} ${Math.floor(i / (ADJECTIVES.length * NOUNS.length)) + 1}`;

/** The body of `PUT /game` (and of `PUT /game/{id}`) for game number `i`. */
export function gameBody(i: number, { categories, authors }: Pick<Seeded, "categories" | "authors">): GameBody {
	return {
		title: gameTitle(i),
		age: 3 + (i % 16),
		category: { id: categories[i % categories.length].id },
		author: { id: authors[i % authors.length].id },
	};
}

export interface Sizes {
	categories: number;
	authors: number;
	games: number;
}

/** Creates the data set through the HTTP API, as a client would, and returns it with its ids. */
export async function seed(base: string, sizes: Sizes, concurrency: number): Promise<Seeded> {
	const seeded: Seeded = { categories: [], authors: [], games: [] };
	await inPool(sizes.categories, concurrency, async i => {
		const { category } = await sendJson<{ category: Category }>(base, "PUT", "/category", { name: categoryName(i) });
		seeded.categories[i] = category;
	});
	await inPool(sizes.authors, concurrency, async i => {
		const body: AuthorBody = { name: authorName(i), nationality: NATIONALITIES[i % NATIONALITIES.length] };
		const { author } = await sendJson<{ author: Author }>(base, "PUT", "/author", body);
		seeded.authors[i] = author;
	});
	await addGames(base, seeded, 0, sizes.games, concurrency, (game, i) => (seeded.games[i] = game));
	return seeded;
}

/**
 * Creates games number `from` to `to - 1` over the seeded categories and authors. `created` sees
 * each game with its number (they finish in any order); `progress` is told the count done about
 * every tenth of the way.
 */
export async function addGames(
	base: string,
	seeded: Pick<Seeded, "categories" | "authors">,
	from: number,
	to: number,
	concurrency: number,
	created: (game: Game, i: number) => void = () => undefined,
	progress: (done: number) => void = () => undefined,
): Promise<void> {
	const step = Math.max(1, Math.ceil((to - from) / 10));
	let done = 0;
	await inPool(to - from, concurrency, async n => {
		const { game } = await sendJson<{ game: Game }>(base, "PUT", "/game", gameBody(from + n, seeded));
		created(game, from + n);
		if (++done % step === 0) progress(from + done);
	});
}
