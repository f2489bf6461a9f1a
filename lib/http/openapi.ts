/**
 * The OpenAPI 3.1 document of the gateway, built from its alias tables, the actions' `params` (lib/http/json-schema.ts) and a
 * documentation entry per action, so nothing is typed twice; error texts come from lib/catalogue/errors.ts.
 */
import Validator from "fastest-validator";
import cloneDeep from "lodash/cloneDeep";
import { texts } from "../catalogue/errors";
import { objectSchema, ruleFields, textRuleSchema, type JsonSchema, type Params } from "./json-schema";
import { operationSecurity, securitySchemes, signInResponses, type SignInDoc } from "./openapi-security";

/** One route of the gateway: its path and its alias table ("PUT /game/:id": "games.update"). */
export interface Route {
	path: string;
	aliases: Record<string, string>;
}

/** What a reader needs to know of one action that the rules do not say. */
export interface OperationDoc {
	tag: string;
	summary: string;
	description?: string;
	/** The success answer (status 200). */
	answer: { description: string; schema: JsonSchema; example: unknown; contentType?: string };
	/** The `msg` texts of the 400s the contract names for it (unknown id, records in use, storage failure). */
	failures?: string[];
	/** A request that fails validation (its body, or its query for a GET): the 400 it gets is shown. */
	invalid?: Record<string, unknown>;
	/** What a path, query or body field means, where its rule does not say. */
	fields?: Record<string, string>;
	/** Answered by the gateway itself: no other service is needed (no 503 or 504). */
	local?: boolean;
	/** A stream that does not end (GET /changes): never a 304, 404 when the feed is off, and past its bounds a 429 or 503. */
	stream?: boolean;
}

export interface DocumentSources {
	info: { title: string; version: string; description: string };
	routes: Route[];
	/** Each action's `params`, by action name; none for an action without. */
	params: Record<string, Params | undefined>;
	operations: Record<string, OperationDoc>;
	/** Named schemas the answers refer to as `#/components/schemas/<name>`. */
	schemas: Record<string, JsonSchema>;
	/** Who may call what (lib/http/openapi-security.ts). */
	signIn: SignInDoc;
}

const WITH_BODY = new Set(["put", "post"]);

const failure = (description: string, example: string, headers?: JsonSchema): JsonSchema => ({
	description,
	...(headers && { headers }),
	content: { "application/json": { schema: { $ref: "#/components/schemas/Failure" }, example: { msg: example } } },
});

/** The failures every route may answer, referred to by the operations they apply to. */
const responses = {
	NotFound: failure("A route the gateway does not serve.", texts.notFound),
	FeedOff: failure("The catalogue was started with CHANGE_FEED=off: it keeps no change feed.", texts.feedOff),
	TooLarge: failure("A body over BODY_LIMIT (100 kB by default).", texts.bodyTooLarge),
	UnsupportedBody: failure(
		"A body not sent as `Content-Type: application/json`, or in a charset or a Content-Encoding the gateway cannot read; the `msg` says which.",
		'unsupported charset "KLINGON"',
	),
	UrlTooLong: failure("A URL, path and query string together, over 4096 characters.", texts.urlTooLong),
	TooManyRequests: failure(
		"Over RATE_LIMIT requests from this address in the window, when the gateway runs with one.",
		texts.tooManyRequests,
		{
			"Retry-After": { description: "Seconds until the window starts again.", schema: { type: "integer" } },
		},
	),
	Unavailable: failure(
		"A service the request needs cannot be reached, is stopping or is too busy; it may be sent again.",
		texts.unavailable,
	),
	TimedOut: failure("A service the request needs did not answer within REQUEST_TIMEOUT.", texts.unavailable),
	Internal: failure("A fault of the service; never a stack trace or a path.", texts.internal),
	NotModified: { description: "The `If-None-Match` names the answer's current ETag: nothing has changed, and no body is sent." },
};

/** What every GET takes and answers beyond its own fields: conditional requests (docs/caching.md). */
const conditionalGet = {
	parameter: {
		name: "If-None-Match",
		in: "header",
		required: false,
		description: "An ETag of an earlier answer: while it is still current, the answer is a 304 with no body.",
		schema: { type: "string" },
	},
	headers: {
		ETag: { description: "A weak tag of this answer; a write that changes the answer changes it.", schema: { type: "string" } },
	},
};

const failureSchema: JsonSchema = {
	type: "object",
	properties: {
		msg: { type: "string" },
		errors: {
			type: "array",
			description: "For a validation failure: every field refused; `msg` is the first one's message.",
			items: {
				type: "object",
				properties: { field: { type: "string" }, message: { type: "string" }, type: { type: "string" } },
				required: ["field", "message", "type"],
			},
		},
	},
	required: ["msg"],
};

/** The 400 a request that fails `params` gets from the gateway (lib/http/failures.ts), computed by fastest-validator itself. */
function validationAnswer(
	params: Params,
	request: Record<string, unknown>,
): { msg: string; errors: { field: string; message: string; type: string }[] } {
	// On copies: fastest-validator rewrites the schema it compiles (moleculer's validator copies it
	// too) and converts the values it checks.
	const result = new Validator({ useNewCustomCheckerFunction: true }).validate(cloneDeep(request), cloneDeep(params));
	if (!Array.isArray(result)) throw new Error(`the invalid example ${JSON.stringify(request)} passes validation`);
	const errors = result.map(({ field, message, type }) => ({ field: String(field), message: String(message), type: String(type) }));
	return { msg: errors[0].message, errors };
}

/** The 400 answers of one operation; path parameters are valid in its validation example, whatever the segment. */
function badRequest(doc: OperationDoc, params: Params | undefined, withBody: boolean, pathNames: string[]): JsonSchema | undefined {
	const examples: Record<string, { summary: string; value: unknown }> = {};
	const segments = Object.fromEntries(pathNames.map(name => [name, "x"]));
	if (params && doc.invalid)
		examples.validation = {
			summary: "A field that fails validation",
			value: validationAnswer(params, { ...segments, ...doc.invalid }),
		};
	if (withBody) examples.malformedJson = { summary: "A body that is not JSON", value: { msg: texts.malformedJson } };
	if (withBody) examples.tooDeep = { summary: "A body nested more than 32 levels deep", value: { msg: texts.bodyTooDeep } };
	for (const text of doc.failures ?? []) examples[text] = { summary: text, value: { msg: text } };
	if (Object.keys(examples).length === 0) return undefined;
	return {
		description: "Refused: the `msg` says why.",
		content: { "application/json": { schema: { $ref: "#/components/schemas/Failure" }, examples } },
	};
}

/** `/game/:id` as OpenAPI writes it, `/game/{id}`, with the names of its parameters. */
function openApiPath(routePath: string, aliasPath: string): { path: string; names: string[] } {
	const joined = `/${[routePath, aliasPath].join("/").split("/").filter(Boolean).join("/")}`;
	const names = [...joined.matchAll(/:(\w+)/g)].map(match => match[1]);
	return { path: joined.replace(/:(\w+)/g, "{$1}"), names };
}

function operation(alias: string, route: Route, action: string, sources: DocumentSources, operationId: string) {
	const doc = sources.operations[action];
	if (!doc) throw new Error(`"${alias}" leads to ${action}, which has no entry in the documentation (services/api.docs.ts)`);
	const [verb, aliasPath] = alias.split(" ");
	const method = verb.toLowerCase();
	const { path, names } = openApiPath(route.path, aliasPath);
	const params = sources.params[action];
	const describe = (name: string, schema: JsonSchema) => (doc.fields?.[name] ? { ...schema, description: doc.fields[name] } : schema);
	const ruleOf = (name: string) => ruleFields(params ?? {}).find(([field]) => field === name)?.[1];
	const pathParameters = names.map(name => ({
		name,
		in: "path",
		required: true,
		schema: describe(name, textRuleSchema(ruleOf(name) ?? "string") ?? { type: "string" }),
	}));
	const queryParameters =
		WITH_BODY.has(method) || !params
			? []
			: ruleFields(params, names).flatMap(([name, rule]) => {
					const schema = textRuleSchema(rule);
					return schema ? [{ name, in: "query", required: false, schema: describe(name, schema) }] : [];
				});
	const body = WITH_BODY.has(method) ? objectSchema(Object.fromEntries(ruleFields(params ?? {}, names))) : undefined;
	if (body?.properties)
		for (const name of Object.keys(body.properties))
			(body.properties as JsonSchema)[name] = describe(name, (body.properties as Record<string, JsonSchema>)[name]);
	const invalid = badRequest(doc, params, body !== undefined, names);
	const ref = (name: keyof typeof responses) => ({ $ref: `#/components/responses/${name}` });
	const read = method === "get" && !doc.stream;
	const signIn = operationSecurity(sources.signIn, method, action);
	const parameters = [...pathParameters, ...queryParameters, ...(read ? [conditionalGet.parameter] : [])];
	return {
		path,
		method,
		operation: {
			operationId,
			tags: [doc.tag],
			summary: doc.summary,
			...(doc.description && { description: doc.description }),
			...(parameters.length > 0 && { parameters }),
			...(body && { requestBody: { required: true, content: { "application/json": { schema: body } } } }),
			...(signIn.security && { security: signIn.security }),
			responses: {
				200: {
					description: doc.answer.description,
					...(read && { headers: conditionalGet.headers }),
					content: { [doc.answer.contentType ?? "application/json"]: { schema: doc.answer.schema, example: doc.answer.example } },
				},
				...(read && { 304: ref("NotModified") }),
				...(invalid && { 400: invalid }),
				...signIn.responses,
				...(doc.stream && { 404: ref("FeedOff") }),
				...(body && { 413: ref("TooLarge") }),
				414: ref("UrlTooLong"),
				...(body && { 415: ref("UnsupportedBody") }),
				429: ref("TooManyRequests"),
				500: ref("Internal"),
				...(!doc.local && { 503: ref("Unavailable"), 504: ref("TimedOut") }),
			},
		},
	};
}

/** The document; throws when an alias leads to an action without a documentation entry. */
export function openApiDocument(sources: DocumentSources): JsonSchema {
	const paths: Record<string, Record<string, unknown>> = {};
	const aliases = sources.routes.flatMap(route => Object.entries(route.aliases).map(([alias, action]) => ({ alias, action, route })));
	for (const { alias, action, route } of aliases) {
		const twice = aliases.filter(other => other.action === action).length > 1;
		const pathNames = openApiPath(route.path, alias.split(" ")[1]).names;
		const operationId = twice && pathNames.length > 0 ? `${action}.${pathNames.join(".")}` : action;
		const built = operation(alias, route, action, sources, operationId);
		paths[built.path] = { ...paths[built.path], [built.method]: built.operation };
	}
	const schemes = securitySchemes(sources.signIn);
	return {
		openapi: "3.1.0",
		info: sources.info,
		tags: [...new Set(Object.values(sources.operations).map(doc => doc.tag))].map(name => ({ name })),
		paths,
		components: {
			schemas: { ...sources.schemas, Failure: failureSchema },
			responses: { ...responses, ...signInResponses(sources.signIn) },
			// None when no operation asks a credential: an empty map would still show Swagger UI's "Authorize".
			...(Object.keys(schemes).length > 0 && { securitySchemes: schemes }),
		},
	};
}
