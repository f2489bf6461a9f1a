import { sampleCatalogue, type SampleCatalogue } from "../../scripts/sample-catalogue";
import {
	missingAuthors,
	missingCategories,
	missingGames,
	SeedError,
	seedTarget,
	summary,
	type CatalogueContents,
} from "../../scripts/seed-plan";

const tiny: SampleCatalogue = {
	categories: ["Eurogames", "Family"],
	authors: [
		{ name: "Reiner Knizia", nationality: "German" },
		{ name: "Bruno Cathala", nationality: "French" },
	],
	games: [
		{ title: "Ingenious", age: 10, category: "Eurogames", author: "Reiner Knizia" },
		{ title: "Kingdomino", age: 8, category: "Family", author: "Bruno Cathala" },
	],
};

const euro = { id: "c1", name: "Eurogames" };
const family = { id: "c2", name: "Family" };
const knizia = { id: "a1", name: "Reiner Knizia", nationality: "German" };
const cathala = { id: "a2", name: "Bruno Cathala", nationality: "French" };

describe("the sample catalogue", () => {
	const { categories, authors, games } = sampleCatalogue;

	test("is small but has something of every kind: 5 categories, 8 authors, 15 games", () => {
		expect([categories.length, authors.length, games.length]).toEqual([5, 8, 15]);
	});

	test("keeps the limits of the decisions: names and titles 1..200, nationality and category 1..100, whole ages 0..99", () => {
		for (const name of categories) expect(name.length).toBeLessThanOrEqual(100);
		for (const author of authors) {
			expect(author.name.length).toBeLessThanOrEqual(200);
			expect(author.nationality.length).toBeLessThanOrEqual(100);
		}
		for (const game of games) {
			expect(game.title.length).toBeLessThanOrEqual(200);
			expect(Number.isInteger(game.age) && game.age >= 0 && game.age <= 99).toBe(true);
		}
		// Non-empty and already trimmed, so what the service stores is what the seed compares.
		for (const text of [
			...categories,
			...authors.flatMap(author => [author.name, author.nationality]),
			...games.map(game => game.title),
		])
			expect(text).toMatch(/^\S(.*\S)?$/u);
	});

	test("names each record once, and every game a category and an author of the sample", () => {
		expect(new Set(categories).size).toBe(categories.length);
		expect(new Set(authors.map(author => author.name)).size).toBe(authors.length);
		expect(new Set(games.map(game => game.title)).size).toBe(games.length);
		for (const game of games) {
			expect(categories).toContain(game.category);
			expect(authors.map(author => author.name)).toContain(game.author);
		}
	});

	test("gives every category and every author at least one game", () => {
		expect(new Set(games.map(game => game.category))).toEqual(new Set(categories));
		expect(new Set(games.map(game => game.author))).toEqual(new Set(authors.map(author => author.name)));
	});
});

describe("what is missing", () => {
	test("an empty catalogue lacks the whole sample, in the sample's order", () => {
		expect(missingCategories(tiny, [])).toEqual(["Eurogames", "Family"]);
		expect(missingAuthors(tiny, [])).toEqual(tiny.authors);
	});

	test("categories match by exact name", () => {
		expect(missingCategories(tiny, [family, { id: "c3", name: "eurogames" }])).toEqual(["Eurogames"]);
	});

	test("authors match by name and nationality together", () => {
		const namesake = { id: "a3", name: "Reiner Knizia", nationality: "British" };
		const compatriot = { id: "a4", name: "Antoine Bauza", nationality: "French" };
		expect(missingAuthors(tiny, [namesake, compatriot, cathala])).toEqual([{ name: "Reiner Knizia", nationality: "German" }]);
	});

	test("games match by title and author; the ids of the new ones are the catalogue's first matching records", () => {
		const catalogue: CatalogueContents = {
			categories: [euro, { id: "c9", name: "Eurogames" }, family],
			authors: [{ id: "a3", name: "Reiner Knizia", nationality: "British" }, knizia, cathala],
			// Ingenious by another Knizia is another game; Kingdomino by Cathala is there, whatever its age or category.
			games: [
				{
					id: "g1",
					title: "Ingenious",
					age: 10,
					category: euro,
					author: { id: "a3", name: "Reiner Knizia", nationality: "British" },
				},
				{ id: "g2", title: "Kingdomino", age: 7, category: euro, author: cathala },
			],
		};
		expect(missingGames(tiny, catalogue)).toEqual([{ title: "Ingenious", age: 10, category: { id: "c1" }, author: { id: "a1" } }]);
	});

	test("a game whose author was deleted (listed without one) does not count as the sample's", () => {
		const catalogue = {
			categories: [euro, family],
			authors: [knizia, cathala],
			games: [{ id: "g1", title: "Ingenious", age: 10, category: euro }],
		};
		expect(missingGames(tiny, catalogue).map(game => game.title)).toEqual(["Ingenious", "Kingdomino"]);
	});

	test("nothing is missing once the catalogue holds the sample", () => {
		const games = [
			{ id: "g1", title: "Ingenious", age: 10, category: euro, author: knizia },
			{ id: "g2", title: "Kingdomino", age: 8, category: family, author: cathala },
		];
		expect(missingCategories(tiny, [euro, family])).toEqual([]);
		expect(missingAuthors(tiny, [knizia, cathala])).toEqual([]);
		expect(missingGames(tiny, { categories: [euro, family], authors: [knizia, cathala], games })).toEqual([]);
	});

	test("a game whose category or author the catalogue does not have is a SeedError", () => {
		expect(() => missingGames(tiny, { categories: [euro], authors: [knizia, cathala], games: [] })).toThrow(SeedError);
		expect(() => missingGames(tiny, { categories: [euro, family], authors: [knizia], games: [] })).toThrow(SeedError);
	});
});

describe("seedTarget", () => {
	test("CATALOGUE_URL is where the requests go, without a trailing slash, any path prefix kept", () => {
		expect(seedTarget({ CATALOGUE_URL: "http://catalogue.internal:8080/" }).url).toBe("http://catalogue.internal:8080");
		expect(seedTarget({ CATALOGUE_URL: "https://example.com/catalogue/", PORT: "9" }).url).toBe("https://example.com/catalogue");
	});

	test("without CATALOGUE_URL, the gateway of `npm start` on this machine: PORT, else 3000", () => {
		expect(seedTarget({}).url).toBe("http://127.0.0.1:3000");
		expect(seedTarget({ PORT: "4100" }).url).toBe("http://127.0.0.1:4100");
	});

	test("API_TOKEN is the token; none when unset or empty", () => {
		expect(seedTarget({ API_TOKEN: "a-token-of-sixteen-chars" }).token).toBe("a-token-of-sixteen-chars");
		expect(seedTarget({ API_TOKEN: "" }).token).toBeNull();
		expect(seedTarget({}).token).toBeNull();
	});

	test("an address it cannot use is a SeedError naming it", () => {
		expect(() => seedTarget({ CATALOGUE_URL: "ftp://example.com" })).toThrow(/CATALOGUE_URL .*"ftp:\/\/example.com"/);
		expect(() => seedTarget({ CATALOGUE_URL: "localhost:3000 " })).toThrow(SeedError);
		expect(() => seedTarget({ CATALOGUE_URL: "not a url" })).toThrow(SeedError);
		expect(() => seedTarget({ PORT: "0" })).toThrow(/PORT .*"0"/);
	});
});

describe("summary", () => {
	test("counts what was created and what was there, and says so", () => {
		const text = summary([
			{ kind: "categories", created: 4, present: 1 },
			{ kind: "authors", created: 8, present: 0 },
			{ kind: "games", created: 0, present: 15 },
		]);
		expect(text.split("\n")).toEqual([
			"categories: 4 created, 1 already there",
			"authors: 8 created, 0 already there",
			"games: 0 created, 15 already there",
			"Created 12 records; the sample catalogue (5 categories, 8 authors, 15 games) is now there.",
		]);
	});

	test("says plainly when nothing was created", () => {
		const text = summary([{ kind: "games", created: 0, present: 15 }]);
		expect(text).toContain("Nothing created: the sample catalogue (15 games) is already there.");
	});
});
