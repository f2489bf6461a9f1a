// The "contract: one broker" project's check that the OpenAPI document never drifts from the
// answers: every answer a contract test receives through fetch is compared with what the document
// says of its operation (the status is listed, the content type is one of its content types, the
// body fits its schema), and a test that received an undocumented answer fails, naming it. The
// document is the one the gateway serves, built from the same sources (services/api.service.ts),
// with every sign-in on (API_TOKEN, a provider, reads for signed-in users): whichever a test's
// gateway runs with, its refusals are listed.
// Requests written to the socket by hand (support/raw-http.ts, the fuzz suite) are not seen here.
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import { openApiDocument } from "../../lib/http/openapi";
import { info, operations, params, schemas } from "../../services/api.docs";
import { routeAliases, signInDoc } from "../../services/api.routes";

type Response = { $ref?: string; content?: Record<string, { schema: object }> };
type Operation = { responses: Record<string, Response> };
type Document = { paths: Record<string, Record<string, Operation>>; components: { responses: Record<string, Response> } };

const everySignIn = signInDoc({
	apiToken: "checked-by-openapi-check",
	signIn: {
		issuer: "https://id.test",
		jwksUrl: null,
		audience: "catalogue",
		rolesClaim: "roles",
		writeRole: "catalogue-editor",
		reads: "user",
	},
});
const document = openApiDocument({ info, routes: routeAliases, params, operations, schemas, signIn: everySignIn }) as unknown as Document;

/** What the document says any route may answer, beside each operation's own list (its info.description). */
const ANY_ROUTE = ["403", "404", "408", "431"];

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ ...document, $id: "https://catalogue.test/openapi.json" });
const validators = new Map<string, ValidateFunction>();
const escape = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");
function validator(pointer: string): ValidateFunction {
	if (!validators.has(pointer)) validators.set(pointer, ajv.compile({ $ref: `https://catalogue.test/openapi.json#${pointer}` }));
	return validators.get(pointer)!;
}

/** The documented path `pathname` is served as: itself, a template it fills, or either without its trailing slash (the gateway serves both). */
function documentedPath(pathname: string): string | undefined {
	const templates = Object.keys(document.paths);
	const matches = (candidate: string) =>
		templates.find(path => path === candidate) ??
		templates.find(path => new RegExp(`^${path.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+")}$`).test(candidate));
	return matches(pathname) ?? (pathname.length > 1 && pathname.endsWith("/") ? matches(pathname.slice(0, -1)) : undefined);
}

/** What the document does not say of this answer; none when it describes it, or when no documented operation was asked. */
export function undocumented(method: string, url: string, status: number, contentType: string | null, body: string | null): string[] {
	const path = documentedPath(new URL(url).pathname);
	const verb = method.toLowerCase();
	const operation = path === undefined ? undefined : document.paths[path][verb];
	if (!path || !operation) return [];
	const listed = operation.responses[status];
	if (!listed && !ANY_ROUTE.includes(String(status)))
		return [`${status} is not an answer of ${verb.toUpperCase()} ${path} (it lists ${Object.keys(operation.responses).join(", ")})`];
	const name = listed?.$ref?.split("/").pop();
	const response = listed ? (name ? document.components.responses[name] : listed) : document.components.responses.NotFound;
	const pointerOf = listed
		? name
			? `/components/responses/${name}`
			: `/paths/${escape(path)}/${verb}/responses/${status}`
		: "/components/responses/NotFound";
	if (!response.content)
		return method === "HEAD" || body === "" ? [] : [`${status} of ${verb.toUpperCase()} ${path} has no body in the document`];
	if (method === "HEAD") return [];
	const type = (contentType ?? "").split(";")[0].trim();
	if (!response.content[type])
		return [
			`${status} of ${verb.toUpperCase()} ${path} is ${Object.keys(response.content).join(" or ")} in the document, not "${type}"`,
		];
	if (body === null) return [];
	let value: unknown = body;
	if (type === "application/json") {
		try {
			value = JSON.parse(body);
		} catch {
			return [`${status} of ${verb.toUpperCase()} ${path} is not JSON: ${body.slice(0, 80)}`];
		}
	}
	const validate = validator(`${pointerOf}/content/${escape(type)}/schema`);
	return validate(value)
		? []
		: (validate.errors ?? []).map(error => `${status} of ${verb.toUpperCase()} ${path}: body${error.instancePath} ${error.message}`);
}

const found: string[] = [];
const plainFetch = globalThis.fetch;

globalThis.fetch = async (input, init) => {
	const response = await plainFetch(input, init);
	const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
	const url = input instanceof Request ? input.url : String(input);
	// A stream (GET /changes) does not end: its status and content type are checked, its events in its own tests.
	const streaming = (response.headers.get("content-type") ?? "").startsWith("text/event-stream");
	const body = streaming ? null : await response.clone().text();
	for (const problem of undocumented(method, url, response.status, response.headers.get("content-type"), body))
		found.push(`${method} ${url.slice(0, 200)}: ${problem}`);
	return response;
};

afterEach(() => {
	const problems = found.splice(0);
	if (problems.length > 0) throw new Error(`answers the OpenAPI document does not describe:\n${problems.join("\n")}`);
});
