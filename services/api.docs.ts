/**
 * What the OpenAPI document (GET /openapi.json, lib/http/openapi.ts) says of each action that its
 * validation rules do not: summaries and answers. Fields, examples and 400 texts come from the
 * kinds' definitions (lib/catalogue/kinds.ts), which the data services read too: the gateway never
 * loads their code. Not a `*.service.ts`, so moleculer-runner does not load it as a service.
 */
import { actionParams, exampleOf, fieldDescriptions, filterDescriptions, listedExampleOf, type Kind } from "../lib/catalogue/kind";
import { AUTHOR, CATEGORY, GAME, KINDS } from "../lib/catalogue/kinds";
import { objectSchema, type JsonSchema, type Params } from "../lib/http/json-schema";
import type { OperationDoc } from "../lib/http/openapi";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../lib/catalogue/page";
import { texts } from "../lib/catalogue/errors";
import { streamParams } from "../lib/feed/sse";
import { asyncApiDocument } from "../lib/feed/asyncapi";

/** Every HTTP action's `params`, by full name. */
export const params: Record<string, Params | undefined> = {
	...Object.fromEntries(
		KINDS.flatMap(kind => Object.entries(actionParams(kind)).map(([action, rules]) => [`${kind.service}.${action}`, rules as Params])),
	),
	"api.changes": streamParams,
};

/** A record's fields as `create` validates them, each described, with the id the service gives it: an answer carries each field. */
export const recordSchema = (kind: Kind): JsonSchema => {
	const body = objectSchema(actionParams(kind).create);
	const described = fieldDescriptions(kind);
	const properties = Object.fromEntries(
		Object.entries(body.properties as Record<string, JsonSchema>).map(([name, schema]) => [
			name,
			{ ...schema, description: described[name] },
		]),
	);
	return {
		...body,
		properties: { id: { type: "string", description: "A ULID: 26 characters, in creation order." }, ...properties },
		required: ["id", ...((body.required as string[] | undefined) ?? [])],
	};
};
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** A game as answered, with its category and author as given; what `create` requires is always there, as in any record. */
const game = (category: JsonSchema, author: JsonSchema): JsonSchema => {
	const fields = recordSchema(GAME);
	const properties = fields.properties as Record<string, JsonSchema>;
	return {
		...fields,
		properties: {
			...properties,
			age: { type: "integer", description: properties.age.description },
			category: { ...category, description: properties.category.description },
			author: { ...author, description: properties.author.description },
		},
	};
};
export const schemas: Record<string, JsonSchema> = {
	Category: recordSchema(CATEGORY),
	Author: recordSchema(AUTHOR),
	Game: game({ type: "string" }, { type: "string" }),
	ListedGame: game(ref("Category"), ref("Author")),
};

const eurogames = exampleOf(CATEGORY);
const knizia = exampleOf(AUTHOR);
const tigris = exampleOf(GAME);
const listed = listedExampleOf(GAME);

/** The kinds a kind's records refer to. */
const referred = (kind: Kind) => Object.values(kind.fields).flatMap(field => ("refers" in field ? [field.refers] : []));

/** The 400 texts the contract names for an action of `kind`: unknown ids, records in use, refused filters, the storage failure. */
function failuresOf(kind: Kind, action: string): string[] {
	const unknown = ["get", "update", "remove"].includes(action) ? [kind.unknown] : [];
	const references = ["create", "update"].includes(action) ? referred(kind).map(other => other.unknown) : [];
	const inUse = action === "remove" && kind.inUse ? [kind.inUse] : [];
	const refused = ["list", "page"].includes(action)
		? Object.values(kind.fields).flatMap(field => (field.filter && "refused" in field.filter ? [field.filter.refused] : []))
		: [];
	return [...new Set([...unknown, ...references, ...inUse, ...refused, kind.failures[action]])].filter(text => text !== undefined);
}

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
export const info = {
	title: "Game catalogue",
	version: "1.0.0",
	description:
		"Categories, authors and games. Every failure is JSON with a string `msg`. Besides the answers listed per operation, any " +
		"route may answer 404 (an unknown route), 405 with `Allow` (a method the path does not answer), 403 (a browser origin CORS_ORIGINS does not list), 408 and 431 " +
		"(a request that is too slow or too large to read), with the text in `msg`. Every path is also answered with a trailing " +
		"slash, as the same operation: `GET /category/?name=` is `GET /category`, not `/category/{id}` with an empty id. Every GET path " +
		"but `/changes` also answers HEAD, with the GET's status and headers and no body.",
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

/** GET /asyncapi.json: the fields every AsyncAPI 3 document has; the rest is AsyncAPI's own shapes. */
const asyncApiAnswer: JsonSchema = {
	type: "object",
	properties: {
		asyncapi: { type: "string" },
		info: objectSchema({ title: "string", version: "string", description: "string" }),
		channels: { type: "object", additionalProperties: true },
		operations: { type: "object", additionalProperties: true },
		components: { type: "object", additionalProperties: true },
	},
	required: ["asyncapi", "info", "channels", "operations", "components"],
};

const catalogue = (tag: string, docs: Omit<OperationDoc, "tag">): OperationDoc => ({ tag, ...docs });
const categories = (docs: Omit<OperationDoc, "tag">) => catalogue("categories", docs);
const authors = (docs: Omit<OperationDoc, "tag">) => catalogue("authors", docs);
const games = (docs: Omit<OperationDoc, "tag">) => catalogue("games", docs);
const gatewayOwn = (docs: Omit<OperationDoc, "tag" | "local">) => catalogue("operations", { ...docs, local: true });

/** Each catalogue operation with the 400 texts its kind's definition gives it. */
const withFailures = (docs: Record<string, OperationDoc>): Record<string, OperationDoc> =>
	Object.fromEntries(
		Object.entries(docs).map(([name, doc]) => {
			const [service, action] = name.split(".");
			const kind = KINDS.find(k => k.service === service);
			return [name, kind ? { ...doc, failures: failuresOf(kind, action) } : doc];
		}),
	);

export const operations = withFailures({
	"categories.create": categories({
		summary: "Create a category",
		answer: wrapped("category", "Category", eurogames),
		invalid: {},
	}),
	"categories.update": categories({
		summary: "Rename a category",
		answer: changed,
		invalid: { name: "   " },
		fields: idField("category"),
	}),
	"categories.list": categories({
		summary: "List categories",
		answer: list("Category", eurogames, "category"),
		fields: filterDescriptions(CATEGORY),
		invalid: { name: "x".repeat(101) },
	}),
	"categories.get": categories({
		summary: "Get a category",
		answer: one("The category.", ref("Category"), eurogames),
		fields: idField("category"),
	}),
	"categories.remove": categories({
		summary: "Delete a category",
		description: "Refused while any game refers to the category.",
		answer: wrapped("category", "Category", eurogames),
		fields: idField("category"),
	}),

	"authors.create": authors({
		summary: "Create an author",
		answer: wrapped("author", "Author", knizia),
		invalid: { name: "Reiner Knizia" },
	}),
	"authors.update": authors({
		summary: "Change an author",
		answer: changed,
		invalid: { name: "Reiner\nKnizia", nationality: "German" },
		fields: idField("author"),
	}),
	"authors.list": authors({ summary: "List every author", answer: list("Author", knizia, "author") }),
	"authors.page": authors({
		summary: "One page of authors",
		description: paging("`id`, `name` or `nationality`", "name"),
		answer: page("Author", knizia, "how many authors there are in all"),
		invalid: { pageable: { pageNumber: "first", pageSize: 5 } },
	}),
	"authors.get": authors({
		summary: "Get an author",
		answer: one("The author.", ref("Author"), knizia),
		fields: idField("author"),
	}),
	"authors.remove": authors({
		summary: "Delete an author",
		description: "Refused while any game refers to the author.",
		answer: wrapped("author", "Author", knizia),
		fields: idField("author"),
	}),

	"games.create": games({
		summary: "Create a game",
		description: "The category and the author must exist; the answer names them by id.",
		answer: wrapped("game", "Game", tigris),
		invalid: { title: "Tigris & Euphrates", age: 12.5, category: { id: eurogames.id }, author: { id: knizia.id } },
	}),
	"games.update": games({
		summary: "Change a game",
		description: "Checked in this order: the game, the category, the author.",
		answer: changed,
		invalid: { title: "Tigris & Euphrates", age: "twelve", category: { id: eurogames.id }, author: { id: knizia.id } },
		fields: idField("game"),
	}),
	"games.list": games({
		summary: "List games, with their category and author",
		answer: list("ListedGame", listed, "game that matches the filters"),
		fields: { ...filterDescriptions(GAME), id: "Ignored: the answer is the same as GET /game's." },
		invalid: { title: "x".repeat(201) },
	}),
	"games.page": games({
		summary: "One page of games, with their category and author",
		description: `The games GET /game lists with the same filters, a page at a time. ${paging("`id`, `title` or `age`", "id")}`,
		answer: page("ListedGame", listed, "how many games match the filters in all"),
		fields: filterDescriptions(GAME),
		invalid: { pageable: { pageNumber: 0, pageSize: 5, sort: { property: "name" } } },
	}),
	"games.remove": games({
		summary: "Delete a game",
		answer: wrapped("game", "Game", tigris),
		fields: idField("game"),
	}),

	"api.changes": {
		tag: "changes",
		summary: "Follow every change of the catalogue, as Server-Sent Events",
		description:
			"Each event is one created, updated or removed record (docs/followers.md), in the order of each kind's writes; its id is the " +
			"position to resume from with `Last-Event-ID`. A `ready` event names the position once the stream has caught up; a `reset` " +
			"event says the changes after the position sent are no longer kept. A comment line every 15 s keeps the stream alive.",
		answer: {
			description: "A stream of events, `text/event-stream`: each `data` is a change (the `Change` schema).",
			schema: { type: "string" },
			example:
				'id: authors:12,categories:3,games:1033\ndata: {"id":"01JD…","kind":"game","type":"updated","seq":1033,"at":"2026-11-26T16:00:00.000Z","requestId":"…","record":{"id":"01JB…","title":"Tigris & Euphrates","age":12,"category":"01JA…","author":"01JA…"}}\n\n',
			contentType: "text/event-stream",
		},
		fields: {
			kinds: "The kinds of record to follow, separated by commas: `category`, `author`, `game` (all by default).",
			lastEventId: "Where to resume, for a client that cannot send the `Last-Event-ID` header: the id of the last event it read.",
		},
		invalid: { kinds: "player" },
		failures: [texts.notAPosition],
		stream: true,
	},
	"api.asyncapi": gatewayOwn({
		summary: "The change feed's AsyncAPI 3 document",
		description: "The JetStream subjects, the broker's events and GET /changes, with the changes each carries (docs/followers.md).",
		answer: one("The AsyncAPI 3.0 document.", asyncApiAnswer, {
			asyncapi: "3.0.0",
			info,
			channels: {},
			operations: {},
			components: {},
		}),
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
});

/** GET /asyncapi.json: the change feed, its changes carrying the records the schemas above describe. */
export const asyncApi = asyncApiDocument({
	version: info.version,
	records: {
		category: { schema: schemas.Category, example: eurogames },
		author: { schema: schemas.Author, example: knizia },
		game: { schema: schemas.Game, example: tigris },
	},
});
