/**
 * What the OpenAPI document (GET /openapi.json, lib/openapi.ts) says of each action that its
 * validation rules do not: summaries, answers with examples, the contract's 400 texts. Not a
 * `*.service.ts`, so moleculer-runner does not load it as a service.
 */
import { texts } from "../lib/catalogue/errors";
import { objectSchema, type JsonSchema, type Params } from "../lib/http/json-schema";
import type { OperationDoc } from "../lib/http/openapi";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../lib/catalogue/page";
// The document must say what the validation does, so it reads the services' own `params`. Importing
// a schema creates nothing: dbMixin makes its adapter only when a broker creates the service.
import AuthorsService from "./authors.service";
import CategoriesService from "./categories.service";
import GamesService from "./games.service";

/** What of a service schema (or a mixin) names its actions' params. */
type Schema = { name?: string; mixins?: readonly unknown[]; actions?: object };

/** Every action's `params`, by full name, mixins included; a service's own action wins over a mixin's (moleculer's merge). */
export function actionParams(services: Schema[]): Record<string, Params | undefined> {
	const collect = (schema: Schema, name: string): [string, Params | undefined][] => [
		...((schema.mixins ?? []) as Schema[]).flatMap(mixin => collect(mixin, name)),
		...Object.entries(schema.actions ?? {}).map(([action, definition]): [string, Params | undefined] => [
			`${name}.${action}`,
			typeof definition === "object" && definition !== null ? (definition as { params?: Params }).params : undefined,
		]),
	];
	return Object.fromEntries(services.flatMap(service => collect(service, String(service.name))));
}

export const params = actionParams([CategoriesService, AuthorsService, GamesService]);

/** A record's fields as its `create` validates them, with the id the service gives it: an answer carries each field `create` requires. */
const record = (create: string): JsonSchema => {
	const body = objectSchema(params[create] ?? {});
	return {
		...body,
		properties: {
			id: { type: "string", description: "A ULID: 26 characters, in creation order." },
			...(body.properties as JsonSchema),
		},
		required: ["id", ...((body.required as string[] | undefined) ?? [])],
	};
};
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** A game as answered, with its category and author as given; what `create` requires is always there, as in any record. */
const game = (category: JsonSchema, author: JsonSchema): JsonSchema => {
	const fields = record("games.create");
	return { ...fields, properties: { ...(fields.properties as JsonSchema), age: { type: "integer" }, category, author } };
};
export const schemas: Record<string, JsonSchema> = {
	Category: record("categories.create"),
	Author: record("authors.create"),
	Game: game({ type: "string" }, { type: "string" }),
	ListedGame: game(ref("Category"), ref("Author")),
};

const eurogames = { id: "01M7XS3MH2ZGV6RBFVSECBCWQG", name: "Eurogames" };
const knizia = { id: "01M7XS3MK46CZ360QGD77H53X8", name: "Reiner Knizia", nationality: "German" };
const tigris = { id: "01M7XS3MN10M8JW2SKMGAD8VRH", title: "Tigris & Euphrates", age: 12, category: eurogames.id, author: knizia.id };
const listed = { ...tigris, category: eurogames, author: knizia };

const one = (description: string, schema: JsonSchema, example: unknown) => ({ description, schema, example });
const wrapped = (key: string, name: string, example: unknown) =>
	one(`{ ${key}: the ${key} }`, { type: "object", properties: { [key]: ref(name) }, required: [key] }, { [key]: example });
const changed = one("1: the record is changed.", { const: 1 }, 1);
const list = (name: string, example: unknown, what: string) =>
	one(`Every ${what}, ordered by id (creation order).`, { type: "array", items: ref(name) }, [example]);
const status = (value: string) =>
	one(`{ status: "${value}" }`, { type: "object", properties: { status: { const: value } }, required: ["status"] }, { status: value });
const idField = (what: string) => ({ id: `The ${what}'s id.` });
/** The page envelope of `name` records; `total` says what totalElements counts. */
const page = (name: string, example: unknown, total: string) =>
	one(
		`The page, and ${total}.`,
		{
			type: "object",
			properties: {
				content: { type: "array", items: ref(name) },
				pageable: {
					type: "object",
					properties: { pageNumber: { type: "integer" }, pageSize: { type: "integer" } },
					required: ["pageNumber", "pageSize"],
				},
				totalElements: { type: "integer" },
			},
			required: ["content", "pageable", "totalElements"],
		},
		{ content: [example], pageable: { pageNumber: 0, pageSize: DEFAULT_PAGE_SIZE }, totalElements: 1 },
	);
/** What a page request means, for records sorted on `properties` (by `byDefault` when absent). */
const paging = (properties: string, byDefault: string) =>
	`\`pageNumber\` is zero-based; \`pageSize\` 0 means ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}. \`sort\` is one order or a list of them, first key first; ` +
	`\`property\` is ${properties} (absent: \`${byDefault}\`), and only \`desc\` is descending. A page past the end has an empty \`content\`.`;
/** The filters GET /game and POST /game share. */
const gameFilters = {
	title: "A regular expression (RE2 syntax) matched anywhere in the title, ignoring case.",
	idCategory: "Keeps the games of this category.",
};

export const info = {
	title: "Game catalogue",
	version: "1.0.0",
	description:
		"Categories, authors and games. Every failure is JSON with a string `msg`. Besides the answers listed per operation, any " +
		"route may answer 404 (an unknown route or method), 403 (a browser origin CORS_ORIGINS does not list), 408 and 431 " +
		"(a request that is too slow or too large to read), with the text in `msg`.",
};

/** GET /openapi.json: the fields every document has, so a typed client reads them; `paths` and `components` are OpenAPI's own shapes. */
const openApiAnswer: JsonSchema = {
	type: "object",
	properties: {
		openapi: { type: "string" },
		info: objectSchema({ title: "string", version: "string", description: "string" }),
		tags: { type: "array", items: objectSchema({ name: "string" }) },
		paths: { type: "object", additionalProperties: true },
		components: { type: "object", additionalProperties: true },
	},
	required: ["openapi", "info", "tags", "paths", "components"],
};

const catalogue = (tag: string, docs: Omit<OperationDoc, "tag">): OperationDoc => ({ tag, ...docs });
const categories = (docs: Omit<OperationDoc, "tag">) => catalogue("categories", docs);
const authors = (docs: Omit<OperationDoc, "tag">) => catalogue("authors", docs);
const games = (docs: Omit<OperationDoc, "tag">) => catalogue("games", docs);
const gatewayOwn = (docs: Omit<OperationDoc, "tag" | "local">) => catalogue("operations", { ...docs, local: true });

export const operations: Record<string, OperationDoc> = {
	"categories.create": categories({
		summary: "Create a category",
		answer: wrapped("category", "Category", eurogames),
		invalid: {},
		failures: [texts.createCategory],
	}),
	"categories.update": categories({
		summary: "Rename a category",
		answer: changed,
		invalid: { name: "   " },
		fields: idField("category"),
		failures: [texts.categoryNotFound, texts.updateCategory],
	}),
	"categories.list": categories({
		summary: "List categories",
		answer: list("Category", eurogames, "category"),
		fields: { name: "Keeps the categories whose name contains this text, ignoring case." },
		invalid: { name: "x".repeat(101) },
		failures: [texts.fetchCategories],
	}),
	"categories.get": categories({
		summary: "Get a category",
		answer: one("The category.", ref("Category"), eurogames),
		fields: idField("category"),
		failures: [texts.categoryNotFound, texts.fetchCategory],
	}),
	"categories.remove": categories({
		summary: "Delete a category",
		description: "Refused while any game refers to the category.",
		answer: wrapped("category", "Category", eurogames),
		fields: idField("category"),
		failures: [texts.categoryNotFound, texts.categoryHasGames, texts.deleteCategory],
	}),

	"authors.create": authors({
		summary: "Create an author",
		answer: wrapped("author", "Author", knizia),
		invalid: { name: "Reiner Knizia" },
		failures: [texts.createAuthor],
	}),
	"authors.update": authors({
		summary: "Change an author",
		answer: changed,
		invalid: { name: "Reiner\nKnizia", nationality: "German" },
		fields: idField("author"),
		failures: [texts.authorNotFound, texts.updateAuthor],
	}),
	"authors.list": authors({ summary: "List every author", answer: list("Author", knizia, "author"), failures: [texts.fetchAuthors] }),
	"authors.page": authors({
		summary: "One page of authors",
		description: paging("`id`, `name` or `nationality`", "name"),
		answer: page("Author", knizia, "how many authors there are in all"),
		invalid: { pageable: { pageNumber: "first", pageSize: 5 } },
		failures: [texts.fetchAuthorsPage],
	}),
	"authors.get": authors({
		summary: "Get an author",
		answer: one("The author.", ref("Author"), knizia),
		fields: idField("author"),
		failures: [texts.authorNotFound, texts.fetchAuthor],
	}),
	"authors.remove": authors({
		summary: "Delete an author",
		description: "Refused while any game refers to the author.",
		answer: wrapped("author", "Author", knizia),
		fields: idField("author"),
		failures: [texts.authorNotFound, texts.authorHasGames, texts.deleteAuthor],
	}),

	"games.create": games({
		summary: "Create a game",
		description: "The category and the author must exist; the answer names them by id.",
		answer: wrapped("game", "Game", tigris),
		invalid: { title: "Tigris & Euphrates", age: 12.5, category: { id: eurogames.id }, author: { id: knizia.id } },
		failures: [texts.categoryNotFound, texts.authorNotFound, texts.createGame],
	}),
	"games.update": games({
		summary: "Change a game",
		description: "Checked in this order: the game, the category, the author.",
		answer: changed,
		invalid: { title: "Tigris & Euphrates", age: "twelve", category: { id: eurogames.id }, author: { id: knizia.id } },
		fields: idField("game"),
		failures: [texts.gameNotFound, texts.categoryNotFound, texts.authorNotFound, texts.updateGame],
	}),
	"games.list": games({
		summary: "List games, with their category and author",
		answer: list("ListedGame", listed, "game that matches the filters"),
		fields: { ...gameFilters, query: "Ignored: the answer is the same as GET /game's." },
		invalid: { title: "x".repeat(201) },
		failures: [texts.fetchGames],
	}),
	"games.page": games({
		summary: "One page of games, with their category and author",
		description: `The games GET /game lists with the same filters, a page at a time. ${paging("`id`, `title` or `age`", "id")}`,
		answer: page("ListedGame", listed, "how many games match the filters in all"),
		fields: gameFilters,
		invalid: { pageable: { pageNumber: 0, pageSize: 5, sort: { property: "name" } } },
		failures: [texts.fetchGames, texts.fetchGamesPage],
	}),
	"games.remove": games({
		summary: "Delete a game",
		answer: wrapped("game", "Game", tigris),
		fields: idField("game"),
		failures: [texts.gameNotFound, texts.deleteGame],
	}),

	"api.live": gatewayOwn({ summary: "Liveness: the gateway's process answers", answer: status("live") }),
	"api.ready": {
		...gatewayOwn({ summary: "Readiness: the gateway reaches every service, and each one's store answers", answer: status("ready") }),
		local: false,
	},
	"api.openapi": gatewayOwn({
		summary: "This document",
		answer: one("The OpenAPI 3.1 document.", openApiAnswer, {
			openapi: "3.1.0",
			info,
			tags: [{ name: "categories" }],
			paths: {},
			components: {},
		}),
	}),
	"api.docsPage": gatewayOwn({
		summary: "The docs page: this document, readable and tried out in a browser",
		answer: { ...one("An HTML page (Swagger UI).", { type: "string" }, "<!doctype html>…"), contentType: "text/html" },
	}),
	"api.docsScript": gatewayOwn({
		summary: "The docs page's own script: it starts Swagger UI on /openapi.json",
		answer: { ...one("JavaScript.", { type: "string" }, "window.addEventListener(…)"), contentType: "text/javascript" },
	}),
};
