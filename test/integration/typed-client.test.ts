/**
 * A client generated from the served OpenAPI document needs no casts (docs/http.md): the types
 * openapi-typescript makes of GET /openapi.json, with openapi-fetch, type-check a program that
 * calls every operation and keeps each answer in a front-end's own types, under `strict`. A field
 * the contract always returns but the document leaves optional (a listed game's `category` and
 * `author` were) fails it, and so does an operation of the document the program does not call.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { startCatalogue, type Catalogue } from "../support/catalogue";

/** The program, as a front-end developer would write it against `./catalogue` (the generated types); never run. */
const PROGRAM = String.raw`import createClient from "openapi-fetch";
import type { paths } from "./catalogue";

// What a front-end keeps of the answers, written from the contract, not from the generated types.
// Every answer is assigned to one of these without a cast: a field the document leaves optional
// (possibly undefined) does not type-check.
interface Category {
	id: string;
	name: string;
}
interface Author {
	id: string;
	name: string;
	nationality: string;
}
interface Game {
	id: string;
	title: string;
	age: number;
	category: string;
	author: string;
}
interface ListedGame {
	id: string;
	title: string;
	age: number;
	category: Category;
	author: Author;
}
interface Page<T> {
	content: T[];
	pageable: { pageNumber: number; pageSize: number };
	totalElements: number;
}
interface Failure {
	msg: string;
	errors?: { field: string; message: string; type: string }[];
}

const client = createClient<paths>({ baseUrl: "http://localhost:3000" });

/** The answer's body; a failure is thrown with its status, its msg and the fields it names. */
function ok<T>(answer: { data?: T; error?: Failure; response: Response }): T {
	if (answer.error) {
		const fields = (answer.error.errors ?? []).map(({ field, message, type }) => [field, message, type].join(": "));
		throw new Error([answer.response.status, answer.error.msg, ...fields].join("; "));
	}
	if (answer.data === undefined) throw new Error([answer.response.status, "without a body"].join(" "));
	return answer.data;
}

/** A listed game as a front-end shows it: its category's name, its author's name and nationality. */
const shown = (game: ListedGame) => [game.title, game.age, game.category.name, game.author.name, game.author.nationality].join(", ");

/** Calls every operation of the document, each answer kept in the front-end's own types. */
export async function everyOperation() {
	const eurogames: { category: Category } = ok(await client.PUT("/category", { body: { name: "Eurogames" } }));
	const family: { category: Category } = ok(await client.PUT("/category", { body: { name: "Family" } }));
	const familyId = { path: { id: family.category.id } };
	const renamed: 1 = ok(await client.PUT("/category/{id}", { params: familyId, body: { name: "Family games" } }));
	const categories: Category[] = ok(await client.GET("/category", { params: { query: { name: "euro" } } }));
	const sameCategories: Category[] = ok(await client.GET("/category", { params: { query: { name: "euro" } } }));
	const category: Category = ok(await client.GET("/category/{id}", { params: { path: { id: eurogames.category.id } } }));

	const knizia: { author: Author } = ok(await client.PUT("/author", { body: { name: "Reiner Knizia", nationality: "German" } }));
	const rosenberg: { author: Author } = ok(await client.PUT("/author", { body: { name: "Uwe Rosenberg", nationality: "Germany" } }));
	const rosenbergId = { path: { id: rosenberg.author.id } };
	const changed: 1 = ok(await client.PUT("/author/{id}", { params: rosenbergId, body: { name: "Uwe Rosenberg", nationality: "German" } }));
	const authors: Author[] = ok(await client.GET("/author"));
	const sameAuthors: Author[] = ok(await client.GET("/author"));
	const authorPage: Page<Author> = ok(
		await client.POST("/author", { body: { pageable: { pageNumber: 0, pageSize: 5, sort: [{ property: "nationality", direction: "desc" }] } } }),
	);
	const sameAuthorPage: Page<Author> = ok(await client.POST("/author", { body: { pageable: { pageNumber: "1", pageSize: 0 } } }));
	const author: Author = ok(await client.GET("/author/{id}", { params: { path: { id: knizia.author.id } } }));

	const body = { title: "Tigris & Euphrates", age: 12, category: { id: category.id }, author: { id: author.id } };
	const tigris: { game: Game } = ok(await client.PUT("/game", { body }));
	const lostCities: { game: Game } = ok(await client.PUT("/game", { body: { ...body, title: "Lost Cities", age: "10" } }));
	const lostCitiesId = { path: { id: lostCities.game.id } };
	const replaced: 1 = ok(await client.PUT("/game/{id}", { params: lostCitiesId, body: { ...body, title: "Lost Cities", age: 10 } }));
	const games: ListedGame[] = ok(await client.GET("/game", { params: { query: { title: "tigris", idCategory: category.id } } }));
	const sameGames: ListedGame[] = ok(await client.GET("/game"));
	const anySegment: ListedGame[] = ok(await client.GET("/game/{id}", { params: { path: { id: "ignored" } } }));
	const gamePage: Page<ListedGame> = ok(await client.POST("/game", { body: { pageable: { pageNumber: 0, pageSize: 10 }, title: "lost" } }));
	const sameGamePage: Page<ListedGame> = ok(await client.POST("/game", { body: { pageable: { pageNumber: 1, pageSize: 1 } } }));
	const [first] = games;
	const firstListed: { category: string; nationality: string } = { category: first.category.name, nationality: first.author.nationality };

	const removedGame: { game: Game } = ok(await client.DELETE("/game/{id}", { params: lostCitiesId }));
	const removedCategory: { category: Category } = ok(await client.DELETE("/category/{id}", { params: familyId }));
	const removedAuthor: { author: Author } = ok(await client.DELETE("/author/{id}", { params: rosenbergId }));

	const live: "live" = ok(await client.GET("/health/live")).status;
	const ready: "ready" = ok(await client.GET("/health/ready")).status;
	const document = ok(await client.GET("/openapi.json"));
	const documented: { openapi: string; title: string; tags: string[]; paths: string[] } = {
		openapi: document.openapi,
		title: document.info.title,
		tags: document.tags.map(tag => tag.name),
		paths: Object.keys(document.paths),
	};
	const feed = ok(await client.GET("/asyncapi.json"));
	const described: { asyncapi: string; channels: string[] } = { asyncapi: feed.asyncapi, channels: Object.keys(feed.channels) };
	const changes = await client.GET("/changes", { params: { query: { kinds: "game" } }, parseAs: "stream" });
	const following: ReadableStream<Uint8Array> | null = changes.response.body;
	await following?.cancel();
	const docsPage: string = ok(await client.GET("/docs", { parseAs: "text" }));
	const docsScript: string = ok(await client.GET("/docs/docs.js", { parseAs: "text" }));

	return {
		categories: [eurogames.category, family.category, category, ...categories, ...sameCategories, removedCategory.category],
		authors: [knizia.author, rosenberg.author, author, ...authors, ...sameAuthors, ...authorPage.content, ...sameAuthorPage.content],
		games: [tigris.game, lostCities.game, removedGame.game],
		listed: [...games, ...sameGames, ...anySegment, ...gamePage.content, ...sameGamePage.content].map(shown),
		changes: [renamed, changed, replaced],
		totals: [authorPage.totalElements, gamePage.totalElements, sameGamePage.pageable.pageNumber],
		firstListed,
		gateway: { live, ready, documented, described, docs: docsPage.length + docsScript.length },
		removedAuthor: removedAuthor.author,
	};
}
`;

/** A front-end's setup: strict, ES modules through a bundler, the browser's fetch; the generated types and openapi-fetch's are checked too. */
const COMPILER_OPTIONS: ts.CompilerOptions = {
	strict: true,
	noEmit: true,
	target: ts.ScriptTarget.ES2023,
	module: ts.ModuleKind.Preserve,
	moduleResolution: ts.ModuleResolutionKind.Bundler,
	lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
	types: [],
	skipDefaultLibCheck: true,
};

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** Every operation of the document, as `GET /game/{id}`. */
const operationsOf = (document: { paths: Record<string, object> }) =>
	Object.entries(document.paths)
		.flatMap(([route, item]) =>
			Object.keys(item).flatMap(method => (METHODS.includes(method) ? [`${method.toUpperCase()} ${route}`] : [])),
		)
		.sort();

/** Every node of the program's source. */
function nodesOf(source: string): ts.Node[] {
	const nodes: ts.Node[] = [];
	const visit = (node: ts.Node): void => {
		nodes.push(node);
		ts.forEachChild(node, visit);
	};
	visit(ts.createSourceFile("program.ts", source, ts.ScriptTarget.ES2023, true));
	return nodes;
}

/** Every operation the program calls: each `client.GET("/game/{id}", ...)`. */
function callsOf(source: string): string[] {
	const calls = nodesOf(source).flatMap(node => {
		if (
			!ts.isCallExpression(node) ||
			!ts.isPropertyAccessExpression(node.expression) ||
			node.expression.expression.getText() !== "client"
		)
			return [];
		const [route] = node.arguments;
		return [`${node.expression.name.text} ${ts.isStringLiteral(route) ? route.text : route.getText()}`];
	});
	return [...new Set(calls)].sort();
}

/** Every cast in the program: `x as T` (`as const` included), `<T>x` and the non-null assertion `x!`. */
const castsOf = (source: string) =>
	nodesOf(source)
		.filter(node => ts.isAsExpression(node) || ts.isTypeAssertionExpression(node) || ts.isNonNullExpression(node))
		.map(node => node.getText());

/** A diagnostic with where it is and the line of source it is about. */
function described(diagnostic: ts.Diagnostic): string {
	const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
	if (!diagnostic.file || diagnostic.start === undefined) return message;
	const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
	const text = diagnostic.file.text.split("\n")[line].trim();
	return `${path.basename(diagnostic.file.fileName)}:${line + 1}:${character + 1} ${message}\n    ${text}`;
}

let catalogue: Catalogue;
/** GET /openapi.json as served, its text. */
let served: string;
/** Under the project's node_modules, so that the program finds openapi-fetch there, as an application would. */
let folder: string;

/**
 * Generates the types of `document` (its JSON) with openapi-typescript's API beside the program, in
 * a folder of their own, and type-checks the program: its diagnostics. The API runs in Node
 * (support/openapi-types.mts): Jest cannot load it.
 */
async function typeCheck(name: string, document: string): Promise<string[]> {
	const dir = path.join(folder, name);
	await mkdir(dir);
	await writeFile(path.join(dir, "openapi.json"), document);
	const script = path.join(__dirname, "../support/openapi-types.mts");
	await promisify(execFile)(process.execPath, [script, path.join(dir, "openapi.json"), path.join(dir, "catalogue.d.ts")]);
	await writeFile(path.join(dir, "program.ts"), PROGRAM);
	return ts.getPreEmitDiagnostics(ts.createProgram([path.join(dir, "program.ts")], COMPILER_OPTIONS)).map(described);
}

beforeAll(async () => {
	const cache = path.resolve(__dirname, "../../node_modules/.cache");
	await mkdir(cache, { recursive: true });
	folder = await mkdtemp(path.join(cache, "typed-client-"));
	catalogue = await startCatalogue({ topology: "one-broker" });
	const response = await fetch(`${catalogue.api.url}/openapi.json`);
	expect(response.status).toBe(200);
	served = await response.text();
});
afterAll(async () => {
	await catalogue?.stop();
	if (folder) await rm(folder, { recursive: true, force: true });
});

test("the program calls every operation of the document, and only those", () => {
	expect(callsOf(PROGRAM)).toEqual(operationsOf(JSON.parse(served)));
});

test("the program type-checks against the client generated from /openapi.json, without a cast", async () => {
	expect(castsOf(PROGRAM)).toEqual([]);
	const diagnostics = await typeCheck("served", served);
	if (diagnostics.length > 0) throw new Error(`the program does not type-check:\n\n${diagnostics.join("\n\n")}`);
});

test("with a listed game's category and author optional again, it does not", async () => {
	const document = JSON.parse(served);
	const listedGame = document.components.schemas.ListedGame;
	listedGame.required = listedGame.required.filter((field: string) => field !== "category" && field !== "author");
	const diagnostics = await typeCheck("optional-references", JSON.stringify(document));
	expect(diagnostics.join("\n")).toContain("Type 'undefined' is not assignable to type 'Category'.");
});
