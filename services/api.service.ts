import type { IncomingMessage, Server, ServerResponse } from "node:http";
import etag from "etag";
import fresh from "fresh";
import { Errors, type ActionSchema, type Context, type Service, type ServiceSchema } from "moleculer";
import ApiGateway, { type ApiSettingsSchema } from "moleculer-web";
import serveStatic from "serve-static";
import vary from "vary";
import { getAbsoluteFSPath } from "swagger-ui-dist";
import { config, type CatalogueConfig } from "../lib/config";
import { CACHED_SERVICES } from "../lib/cache";
import { cachedAnswerTag, generationNews } from "../mixins/cache.mixin";
import { observeRequests, requestFields } from "../lib/access-log";
import { texts } from "../lib/errors";
import { DOCS_ASSETS, DOCS_PAGE, DOCS_SCRIPT } from "../lib/docs-page";
import { chosenEncoding, compress, COMPRESS_FROM_BYTES } from "../lib/compression";
import { toFailure } from "../lib/failures";
import { openApiDocument } from "../lib/openapi";
import { readiness } from "../middlewares/readiness.middleware";
import {
	answerClientError,
	assignRequestId,
	carriesToken,
	checkJsonBody,
	conditionalOnlyForReads,
	docsSecurityHeaders,
	limitUrlLength,
	queryOnlyForReads,
	refuseOptions,
	securityHeaders,
	serveOnly,
} from "../lib/http-guards";
import { info, operations, params, schemas } from "./api.docs";

/** The whole HTTP surface: only these paths reach the services. */
const aliases = {
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
	"GET /game/:query": "games.list",
	"POST /game": "games.page",
	"DELETE /game/:id": "games.remove",

	"GET /health/live": "api.live",
	"GET /health/ready": "api.ready",
	"GET /openapi.json": "api.openapi",
};

/** The docs page's own paths, under /docs (with or without the trailing slash). */
const docsAliases = {
	"GET /": "api.docsPage",
	"GET /docs.js": "api.docsScript",
};

/** Each route's alias table, as the OpenAPI document (lib/openapi.ts) reads them. */
export const routeAliases = [
	{ path: "/", aliases },
	{ path: "/docs", aliases: docsAliases },
];

/** The OpenAPI document of exactly these routes, built once; it throws at start if an alias is undocumented. */
const document = openApiDocument({ info, routes: routeAliases, params, operations, schemas });

/** What an action or a hook tells moleculer-web about the answer. */
type ResponseMeta = { $responseType?: string; $responseHeaders?: Record<string, string> };

/** moleculer-web's notes on a routed request: the action it leads to and the params it merged. */
type RoutedRequest = IncomingMessage & { $action?: ActionSchema; $params?: unknown; $endpoint?: unknown };

/** The methods that change the catalogue (POST /author is a search): with API_TOKEN set they need it. */
const WRITES = new Set(["PUT", "DELETE"]);

/** How long a request may take to arrive, headers and body; then 408 (lib/http-guards.ts). */
export const REQUEST_ARRIVAL_MS = 30_000;

/** What the gateway is built from: lib/config.ts, or a test's own values. */
export type GatewayOptions = Pick<CatalogueConfig, "port" | "bodyLimit" | "corsOrigins" | "rateLimit" | "apiToken" | "production">;

/** What the gateway says at start, in production, when no API_TOKEN closes the writes. */
export const OPEN_WRITES_WARNING =
	"Writes are open: NODE_ENV=production and no API_TOKEN, so anyone who reaches this gateway can create, change and delete records. " +
	"Set API_TOKEN to a secret of 16 or more characters to require Authorization: Bearer <token> on every PUT and DELETE (README, Security).";

/** Allowed origins compared whole: moleculer-web's own check of a listed origin accepts any part of it. */
function corsPolicy(origins: string[]) {
	if (origins.length === 0) return undefined;
	return {
		origin: origins.includes("*") ? "*" : (origin: string) => origins.includes(origin),
		methods: ["GET", "PUT", "POST", "DELETE"],
		allowedHeaders: ["Content-Type", "Authorization"],
		exposedHeaders: ["Retry-After", "X-Rate-Limit-Limit", "X-Rate-Limit-Remaining", "X-Rate-Limit-Reset"],
		maxAge: 600,
	};
}

/** Seconds until the route's rate-limit window starts again (moleculer-web's store resets them all at once). */
function retryAfter(req: IncomingMessage): string {
	const { $route } = req as { $route?: { rateLimit?: { store?: { resetTime?: number } } } };
	const resetTime = $route?.rateLimit?.store?.resetTime ?? Date.now();
	return String(Math.max(1, Math.ceil((resetTime - Date.now()) / 1000)));
}

/** The gateway, with `options.apiToken` kept in this closure: settings travel to every node. */
export function apiService(options: GatewayOptions = config): ServiceSchema<ApiSettingsSchema> {
	const { apiToken, rateLimit } = options;
	const cors = corsPolicy(options.corsOrigins);
	// Keyed by the connection's address: X-Forwarded-For is whatever the client says.
	const rateLimitPolicy = rateLimit
		? { window: rateLimit.windowMs, limit: rateLimit.limit, headers: true, key: (req: IncomingMessage) => req.socket.remoteAddress ?? "" }
		: undefined;
	return {
		name: "api",
		// The gateway's node looks reads up in the shared cache itself (middlewares/remote-cache), so it
		// follows the writes' generations too.
		mixins: [ApiGateway, generationNews(CACHED_SERVICES)],
		settings: {
			port: options.port,
			// The whole request must arrive within this (Node's default is 5 minutes): a client
			// trickling bytes holds a connection for no longer.
			requestTimeout: REQUEST_ARRIVAL_MS,
			// Each request is logged once when it ends, with its id (lib/access-log.ts); moleculer-web's
			// own lines about it are for debugging.
			logRequest: "debug",
			logResponse: "debug",
			routes: [
				{
					path: "/",
					mappingPolicy: "restrict",
					autoAliases: false,
					aliases,
					bodyParsers: { json: { limit: options.bodyLimit } },
					use: [limitUrlLength, checkJsonBody, queryOnlyForReads, conditionalOnlyForReads, ...(cors ? [] : [refuseOptions])],
					cors,
					rateLimit: rateLimitPolicy,
					authorization: apiToken !== null,
					// On stop the gateway waits for its own requests (middlewares/drain.middleware.ts);
					// tracked, their calls would make the broker wait for them before the gateway even
					// stops listening.
					callOptions: { tracking: false },
					// A cached read's ETag comes from its cache key (README, "Caching"); when the client holds
					// it already, the answer is a 304 and no service is asked.
					onBeforeCall(this: Service, _ctx: Context, _route: unknown, req: RoutedRequest, res: ServerResponse) {
						if (req.method !== "GET" || !req.$action) return;
						const tag = cachedAnswerTag(this.broker, req.$action, req.$params);
						if (tag === null) return;
						res.setHeader("ETag", tag);
						if (fresh(req.headers, { etag: tag })) req.$endpoint = this.broker.findNextActionEndpoint("api.notModified");
					},
					// A GET the cache did not tag gets a weak tag of its JSON (as Express gives); JSON of 1 KB or
					// more goes compressed to a client whose Accept-Encoding asks for br or gzip
					// (lib/compression.ts). Other answers go as they are: a client that asks for no encoding gets
					// what it always did, and writes and searches, which never answer 304, are not hashed.
					async onAfterCall(ctx: Context<unknown, ResponseMeta>, _route: unknown, req: IncomingMessage, res: ServerResponse, data: unknown) {
						vary(res, "Accept-Encoding");
						const encoding = chosenEncoding(req.headers);
						const untagged = req.method === "GET" && !res.hasHeader("ETag");
						if ((encoding === null && !untagged) || data == null) return data;
						const json = JSON.stringify(data);
						ctx.meta.$responseType = "application/json; charset=utf-8";
						if (untagged) res.setHeader("ETag", etag(json, { weak: true }));
						if (encoding === null || Buffer.byteLength(json) < COMPRESS_FROM_BYTES) return json;
						ctx.meta.$responseHeaders = { ...ctx.meta.$responseHeaders, "Content-Encoding": encoding };
						return compress(json, encoding);
					},
				},
				{
					// The docs page and the swagger-ui-dist files it loads, under a Content-Security-Policy of its own.
					path: "/docs",
					mappingPolicy: "restrict",
					autoAliases: false,
					aliases: docsAliases,
					// The same URL limit as the catalogue's paths: the document lists 414 on every operation.
					use: [limitUrlLength, docsSecurityHeaders, serveOnly(DOCS_ASSETS, serveStatic(getAbsoluteFSPath(), { index: false }))],
					// The page and its script get moleculer-web's weak tag of their text; serve-static tags the files.
					etag: "weak",
					rateLimit: rateLimitPolicy,
					callOptions: { tracking: false },
				},
			],
			// Every failure, routed or not, answers JSON `{ msg }` with the status of lib/failures.ts.
			onError(this: Service, req: IncomingMessage, res: ServerResponse, err: Error) {
				const { status, body, headers } = toFailure(err);
				// A failed read has no tag: the one onBeforeCall set named the answer it did not get.
				res.removeHeader("ETag");
				if (status >= 500) this.logger.error(requestFields(req), "Request failed:", err);
				if (status === 429) res.setHeader("Retry-After", retryAfter(req));
				for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
				res.setHeader("Content-Type", "application/json; charset=utf-8");
				res.writeHead(status);
				res.end(JSON.stringify(body));
			},
		},
		actions: {
			// { status: "live" } while the process answers at all.
			live: {
				visibility: "published",
				handler: () => ({ status: "live" }),
			},

			// { status: "ready" } once this node has started, reaches NATS (in a cluster), and every
			// service its paths lead to answers, its store included; 503 otherwise.
			ready: {
				visibility: "published",
				async handler(this: Service) {
					if ((await readiness(this.broker)).ready) return { status: "ready" };
					throw new Errors.ServiceNotAvailableError({ action: "api.ready", nodeID: this.broker.nodeID });
				},
			},

			// moleculer-web's management of routes, kept to this node: from another node (anything that
			// reaches NATS) they would publish a route without authorization or take the API down.
			listAliases: { visibility: "protected" },
			addRoute: { visibility: "protected" },
			removeRoute: { visibility: "protected" },

			// Nothing, with status 304: what a cached read is sent instead when the client's tag is current.
			// Called only by onBeforeCall above: not on HTTP, nor from other nodes.
			notModified: {
				visibility: "protected",
				handler(ctx: Context<unknown, { $statusCode?: number }>) {
					ctx.meta.$statusCode = 304;
					return null;
				},
			},

			// The OpenAPI 3.1 document of every route above (lib/openapi.ts, services/api.docs.ts).
			openapi: {
				visibility: "published",
				handler: () => document,
			},

			// The docs page's HTML (lib/docs-page.ts).
			docsPage: {
				visibility: "published",
				handler: (ctx: Context<unknown, { $responseType?: string }>) => {
					ctx.meta.$responseType = "text/html; charset=utf-8";
					return DOCS_PAGE;
				},
			},

			// The docs page's script, which starts Swagger UI on /openapi.json.
			docsScript: {
				visibility: "published",
				handler: (ctx: Context<unknown, { $responseType?: string }>) => {
					ctx.meta.$responseType = "text/javascript; charset=utf-8";
					return DOCS_SCRIPT;
				},
			},
		},
		methods: {
			// Resolves for a read, or a write that carries the API token; otherwise throws 401. The alias,
			// not the request, says which: an OPTIONS request is resolved as the method it names.
			authorize(_ctx: unknown, _route: unknown, req: IncomingMessage, _res: unknown, alias: { method: string }) {
				if (apiToken !== null && WRITES.has(alias.method) && !carriesToken(req.headers.authorization, apiToken)) {
					const type = req.headers.authorization ? "INVALID_TOKEN" : "NO_TOKEN";
					throw new Errors.MoleculerClientError(texts.tokenRequired, 401, type);
				}
			},
		},
		created() {
			const server = this.server as Server;
			// Ahead of moleculer-web's own handler, so every answer carries the headers, 404s included.
			server.prependListener("request", (req, res) => {
				assignRequestId(req, res);
				securityHeaders(req, res, () => undefined);
			});
			server.on("clientError", answerClientError);
			observeRequests(server, this.logger, this.broker.metrics);
		},
		started() {
			if (options.production && apiToken === null) this.logger.warn(OPEN_WRITES_WARNING);
		},
	};
}

export default apiService();
