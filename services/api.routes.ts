/**
 * The gateway's routes: the alias tables (the whole HTTP surface) and the policies applied to
 * them. Not a `*.service.ts`, so moleculer-runner does not load it as a service.
 */
import type { IncomingMessage } from "node:http";
import type { CatalogueConfig } from "../lib/config/config";
import { WRITE_METHODS, type SignInDoc } from "../lib/http/openapi-security";
import { isListedOrigin } from "../lib/http/origins";
import type { Need } from "../lib/sign-in/sign-in";

/** The whole HTTP surface: only these paths reach the services. */
export const aliases = {
	"PUT /category": "categories.create",
	"PUT /category/:id": "categories.update",
	"GET /category": "categories.list",
	"GET /category/:id": "categories.get",
	"DELETE /category/:id": "categories.remove",

	"PUT /author": "authors.create",
	"PUT /author/:id": "authors.update",
	"GET /author": "authors.list",
	"POST /author": "authors.page",
	"GET /author/:id": "authors.get",
	"DELETE /author/:id": "authors.remove",

	"PUT /game": "games.create",
	"PUT /game/:id": "games.update",
	"GET /game": "games.list",
	"GET /game/:id": "games.list",
	"POST /game": "games.page",
	"DELETE /game/:id": "games.remove",

	"GET /health/live": "api.live",
	"GET /health/ready": "api.ready",
	"GET /openapi.json": "api.openapi",
	"GET /asyncapi.json": "api.asyncapi",
};

/** The docs page's own paths, under /docs (with or without the trailing slash). */
export const docsAliases = {
	"GET /": "api.docsPage",
	"GET /docs.js": "api.docsScript",
};

/** The change feed, a route of its own: its answer is a stream (docs/followers.md). */
export const changesAliases = { "GET /": "api.changes" };

/** Each route's alias table, as the OpenAPI document (lib/http/openapi.ts) reads them. */
export const routeAliases = [
	{ path: "/", aliases },
	{ path: "/changes", aliases: changesAliases },
	{ path: "/docs", aliases: docsAliases },
];

/**
 * What a request through `alias` needs of its sender (lib/sign-in/sign-in.ts): writes need API_TOKEN
 * or the write role once either is configured, reads a signed-in user with AUTH_READS=user; the
 * gateway's own paths (health, the document, the docs page) stay open to probes and browsers.
 */
export function needOf(
	alias: { method: string; action?: unknown },
	{ apiToken, signIn }: Pick<CatalogueConfig, "apiToken" | "signIn">,
): Need {
	// The change feed is read as the lists are.
	if (String(alias.action).startsWith("api.") && alias.action !== "api.changes") return "nothing";
	if (WRITE_METHODS.has(alias.method)) return apiToken !== null || signIn !== null ? "writer" : "nothing";
	return signIn?.reads === "user" ? "user" : "nothing";
}

/** The sign-in the OpenAPI document declares for a gateway run with `options`. */
export const signInDoc = (options: Pick<CatalogueConfig, "apiToken" | "signIn">): SignInDoc => ({
	apiToken: options.apiToken !== null,
	provider: options.signIn,
	need: alias => needOf(alias, options),
});

/** Allowed origins compared whole: moleculer-web's own check of a listed origin accepts any part of it. */
export function corsPolicy(origins: string[]) {
	if (origins.length === 0) return undefined;
	return {
		origin: origins.includes("*") ? "*" : (origin: string) => isListedOrigin(origins, origin),
		methods: ["GET", "PUT", "POST", "DELETE"],
		// Last-Event-ID: a fetch-based client of /changes resumes with it; X-Request-ID: a front end may name its requests.
		allowedHeaders: ["Content-Type", "Authorization", "Last-Event-ID", "X-Request-ID"],
		exposedHeaders: [
			"Retry-After",
			"WWW-Authenticate",
			"X-Rate-Limit-Limit",
			"X-Rate-Limit-Remaining",
			"X-Rate-Limit-Reset",
			"X-Request-ID",
		],
		maxAge: 600,
	};
}

/** Seconds until the route's rate-limit window starts again (moleculer-web's store resets them all at once). */
export function retryAfter(req: IncomingMessage): string {
	const { $route } = req as { $route?: { rateLimit?: { store?: { resetTime?: number } } } };
	const resetTime = $route?.rateLimit?.store?.resetTime ?? Date.now();
	return String(Math.max(1, Math.ceil((resetTime - Date.now()) / 1000)));
}
