/**
 * The catalogue's kinds of record, each defined once (lib/catalogue/kind.ts says what derives
 * from them). Adding a field is a line here: docs/architecture.md, "Adding a field".
 */
import { texts } from "./errors";
import { defineKind } from "./kind";
import { text, wholeNumber } from "./params";

export const CATEGORY = defineKind({
	kind: "category",
	service: "categories",
	unknown: texts.categoryNotFound,
	inUse: texts.categoryHasGames,
	failures: {
		get: texts.fetchCategory,
		list: texts.fetchCategories,
		create: texts.createCategory,
		update: texts.updateCategory,
		remove: texts.deleteCategory,
	},
	exampleId: "01M7XS3MH2ZGV6RBFVSECBCWQG",
	fields: {
		name: {
			rule: text(100),
			description: "The category's name.",
			example: "Eurogames",
			filter: { description: "Keeps the categories whose name contains this text, ignoring case." },
		},
	},
});

export const AUTHOR = defineKind({
	kind: "author",
	service: "authors",
	unknown: texts.authorNotFound,
	inUse: texts.authorHasGames,
	failures: {
		get: texts.fetchAuthor,
		list: texts.fetchAuthors,
		page: texts.fetchAuthorsPage,
		create: texts.createAuthor,
		update: texts.updateAuthor,
		remove: texts.deleteAuthor,
	},
	exampleId: "01M7XS3MK46CZ360QGD77H53X8",
	fields: {
		name: { rule: text(200), description: "The author's name.", example: "Reiner Knizia", sortable: true },
		nationality: { rule: text(100), description: "The author's nationality, in words.", example: "German", sortable: true },
	},
	sortedBy: "name",
});

export const GAME = defineKind({
	kind: "game",
	service: "games",
	unknown: texts.gameNotFound,
	failures: {
		get: texts.fetchGames,
		list: texts.fetchGames,
		page: texts.fetchGamesPage,
		create: texts.createGame,
		update: texts.updateGame,
		remove: texts.deleteGame,
		countBy: texts.countGames,
	},
	exampleId: "01M7XS3MN10M8JW2SKMGAD8VRH",
	fields: {
		title: {
			rule: text(200),
			description: "The game's title.",
			example: "Tigris & Euphrates",
			sortable: true,
			filter: {
				description: "A regular expression (RE2 syntax) matched anywhere in the title, ignoring case.",
				refused: texts.fetchGames,
			},
		},
		age: { rule: wholeNumber(0, 99), description: "The recommended minimum age, in years.", example: 12, sortable: true },
		category: {
			refers: CATEGORY,
			description: "The game's category.",
			filter: { param: "idCategory", description: "Keeps the games of this category." },
		},
		author: { refers: AUTHOR, description: "The game's author." },
	},
	// Absent, a game page is in the order of GET /game: by id.
	sortedBy: "id",
});

/** Every kind, in the order an export file holds them. */
export const KINDS = [CATEGORY, AUTHOR, GAME] as const;
