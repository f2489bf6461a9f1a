import type { Author, AuthorBody } from "../services/authors.types";
import type { Category } from "../services/categories.types";
import type { GameBody, ListedGame } from "../services/games.types";
import type { SampleCatalogue, SampleGame } from "./sample-catalogue";

/** A failure the seed explains in one line to whoever ran it (and then exits with 1). */
export class SeedError extends Error {}

/** Where the seed sends its requests, and the token its writes carry when the service wants one. */
export interface SeedTarget {
	url: string;
	token: string | null;
}

/** What the catalogue holds, as its lists answer it. */
export interface CatalogueContents {
	categories: Category[];
	authors: Author[];
	/** A game whose category or author is gone (the REPL's `integrity` lists such games: docs/integrity.md) is listed without it. */
	games: (Omit<ListedGame, "category" | "author"> & Partial<Pick<ListedGame, "category" | "author">>)[];
}

/** How many of one kind of sample record the seed created and how many it found already there. */
export interface Tally {
	kind: "categories" | "authors" | "games";
	created: number;
	present: number;
}

/**
 * `CATALOGUE_URL`; without it the gateway `npm start` runs on this machine (on `PORT`, as the
 * shell that started it may have it, else 3000). Throws a SeedError for a value it cannot use.
 */
export function seedTarget(env: NodeJS.ProcessEnv): SeedTarget {
	const port = env.PORT || "3000";
	if (!env.CATALOGUE_URL && !/^[1-9]\d{0,4}$/.test(port))
		throw new SeedError(`PORT must be the gateway's port (1 to 65535) when CATALOGUE_URL is not set; got "${port}"`);
	const given = env.CATALOGUE_URL || `http://127.0.0.1:${port}`;
	const url = URL.parse(given);
	if (url === null || !["http:", "https:"].includes(url.protocol))
		throw new SeedError(`CATALOGUE_URL must be an http:// or https:// URL such as http://127.0.0.1:3000; got "${given}"`);
	return { url: url.origin + url.pathname.replace(/\/+$/, ""), token: env.API_TOKEN || null };
}

const sameAuthor = (one: AuthorBody, other: AuthorBody | undefined) =>
	other !== undefined && one.name === other.name && one.nationality === other.nationality;

/** The sample's category names that no category of the catalogue has. */
export function missingCategories(sample: SampleCatalogue, categories: Category[]): string[] {
	return sample.categories.filter(name => !categories.some(category => category.name === name));
}

/** The sample's authors that no author of the catalogue matches by name and nationality. */
export function missingAuthors(sample: SampleCatalogue, authors: Author[]): AuthorBody[] {
	return sample.authors.filter(wanted => !authors.some(author => sameAuthor(wanted, author)));
}

/** The sample's author of `game`; throws when the sample does not list it (a mistake in the sample). */
function authorOf(sample: SampleCatalogue, game: SampleGame): AuthorBody {
	const author = sample.authors.find(candidate => candidate.name === game.author);
	if (author === undefined) throw new Error(`The sample game "${game.title}" names an author the sample lacks: ${game.author}`);
	return author;
}

/**
 * The bodies of `PUT /game` for the sample's games that the catalogue lacks (none with that title
 * by that author), referring to the first category and author of the catalogue that match (the
 * oldest: the lists are in id order). Throws a SeedError when the catalogue has no such category
 * or author, so call it once the missing ones have been created.
 */
export function missingGames(sample: SampleCatalogue, catalogue: CatalogueContents): GameBody[] {
	const absent = sample.games.filter(game => {
		const author = authorOf(sample, game);
		return !catalogue.games.some(existing => existing.title === game.title && sameAuthor(author, existing.author));
	});
	return absent.map(game => {
		const category = catalogue.categories.find(candidate => candidate.name === game.category);
		const author = catalogue.authors.find(candidate => sameAuthor(authorOf(sample, game), candidate));
		if (category === undefined || author === undefined)
			throw new SeedError(`The catalogue lost the category or author of "${game.title}" while the seed ran; run it again`);
		return { title: game.title, age: game.age, category: { id: category.id }, author: { id: author.id } };
	});
}

/** One line per kind of record, then one saying whether anything was created. */
export function summary(tallies: Tally[]): string {
	const lines = tallies.map(({ kind, created, present }) => `${kind}: ${created} created, ${present} already there`);
	const createdInAll = tallies.reduce((sum, tally) => sum + tally.created, 0);
	const sample = tallies.map(({ kind, created, present }) => `${created + present} ${kind}`).join(", ");
	lines.push(
		createdInAll === 0
			? `Nothing created: the sample catalogue (${sample}) is already there.`
			: `Created ${createdInAll} records; the sample catalogue (${sample}) is now there.`,
	);
	return lines.join("\n");
}
