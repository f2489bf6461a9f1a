import type { IncomingMessage, RequestListener, Server, ServerResponse } from "node:http";
import type { Context, Service, ServiceSchema } from "moleculer";
import ApiGateway, { type ApiSettingsSchema } from "moleculer-web";
import { config, type CatalogueConfig } from "../lib/config/config";
import { DATA_SERVICE_NAMES } from "../lib/catalogue/services";
import { generationNews } from "../mixins/cache.mixin";
import { maskedUrl, observeRequests, requestFields } from "../lib/http/access-log";
import { clientAddressOf, isTrustedProxy } from "../lib/http/client-address";
import { boundedServer, limitConnectionsPerClient } from "../lib/http/connections";
import { RefusalLog } from "../lib/http/refusals";
import { rateLimitSettings } from "../lib/http/rate-limit";
import { docsActions, docsRoute } from "../lib/http/docs-page";
import { sentAnswer, wishOf, type ResponseMeta } from "../lib/http/sent-answers";
import { toFailure } from "../lib/http/failures";
import { literalSegments, unrouted, withHead, type GatewayAlias } from "../lib/http/methods";
import { UnlistedOrigins } from "../lib/http/origins";
import { texts } from "../lib/catalogue/errors";
import { portRefused } from "../lib/config/start-failures";
import type { HealthPath } from "../lib/http/health";
import { openApiDocument } from "../lib/http/openapi";
import { brokerHealth } from "../middlewares/readiness.middleware";
import { signInGate, type SignedIn } from "../lib/sign-in/sign-in";
import type { ProviderTiming } from "../lib/sign-in/provider-keys";
import {
	answerClientError,
	answerConnect,
	assignRequestId,
	checkJsonBody,
	conditionalOnlyForReads,
	unconditional,
	utf8Only,
	jsonBodyOnly,
	limitUrlLength,
	paramsFromOnePlace,
	optionsOnlyAsPreflight,
	securityHeaders,
} from "../lib/http/http-guards";
import { asyncApi, info, operations, params, schemas } from "./api.docs";
import { aliases, changesAliases, corsPolicy, docsAliases, needOf, retryAfter, routeAliases, signInDoc } from "./api.routes";
import { changeStream, type StreamMeta } from "../mixins/change-stream.mixin";

/** The node's answer to a health path, its status included: a 503 here is an answer, not a failure. */
async function health(service: Service, ctx: Context<unknown, ResponseMeta>, path: HealthPath) {
	const { status, body } = await brokerHealth(service.broker, path);
	if (status !== 200) ctx.meta.$statusCode = status;
	return body;
}

/** The answers logged as refusals, not failures. */
const REFUSED = new Set([401, 403, 429, 503]);

/** The methods of moleculer-web's that the gateway calls or replaces. */
interface MoleculerWebMethods {
	httpHandler: RequestListener;
	sendError(req: IncomingMessage, res: ServerResponse, err: Error): void;
}

/** A request whose sender was refused, with the reason the client is not told (lib/sign-in/sign-in.ts). */
type NotedRequest = IncomingMessage & { $refusedBecause?: string; $alias?: { action?: string } };

/** How long a request may take to arrive, headers and body; then 408 (lib/http/http-guards.ts). */
export const REQUEST_ARRIVAL_MS = 30_000;

/** What the gateway is built from: lib/config/config.ts, or a test's own values (and its identity provider's timing). */
export type GatewayOptions = Pick<
	CatalogueConfig,
	"port" | "bodyLimit" | "corsOrigins" | "rateLimit" | "connections" | "trustProxy" | "apiToken" | "signIn" | "production"
> & { providerTiming?: ProviderTiming };

/** What the gateway says at start, in production, when no API_TOKEN closes the writes. */
export const OPEN_WRITES_WARNING =
	"Writes are open: NODE_ENV=production, and neither API_TOKEN nor AUTH_ISSUER, so anyone who reaches this gateway can create, change and delete records. " +
	"Set API_TOKEN to a secret of 16 or more characters to require Authorization: Bearer <token> on every PUT and DELETE, " +
	"or AUTH_ISSUER and AUTH_AUDIENCE to require a signed-in editor (docs/security.md).";

/** The HTTP request of moleculer-web's `rest` action. */
const requestOf = (ctx: Context) => (ctx.params as { req: IncomingMessage }).req;

/** The gateway, with `options.apiToken` kept in this closure: settings travel to every node. */
export function apiService(options: GatewayOptions = config): ServiceSchema<ApiSettingsSchema> {
	const { apiToken, signIn, rateLimit } = options;
	const gate = signInGate(options, options.providerTiming);
	const checksSenders = apiToken !== null || signIn !== null;
	// The OpenAPI document of exactly these routes and this sign-in; it throws at start if an alias is undocumented.
	const document = openApiDocument({ info, routes: routeAliases, params, operations, schemas, signIn: signInDoc(options) });
	const cors = corsPolicy(options.corsOrigins);
	// Each route counts per client (lib/http/rate-limit.ts), known by its connection's address or, through the
	// proxies TRUST_PROXY declares, by the address they forwarded: X-Forwarded-For is otherwise whatever the client says.
	const clientAddress = clientAddressOf(options.trustProxy);
	const rateLimitPolicy = (route: string) => (rateLimit ? rateLimitSettings(rateLimit, route, clientAddress) : undefined);
	return {
		name: "api",
		// The gateway's node looks reads up in the cache itself (lib/cache/answers.ts), so it hears
		// of the writes Redis could not record, for every service.
		mixins: [ApiGateway, generationNews(DATA_SERVICE_NAMES), changeStream()],
		settings: {
			port: options.port,
			// Each request is logged once when it ends, with its id (lib/http/access-log.ts); moleculer-web's
			// own lines about it are for debugging.
			logRequest: "debug",
			logResponse: "debug",
			routes: [
				{
					path: "/",
					mappingPolicy: "restrict",
					autoAliases: false,
					// Every GET path answers HEAD too, with the GET's headers (docs/http.md).
					aliases: withHead(aliases),
					bodyParsers: { json: { limit: options.bodyLimit, verify: utf8Only } },
					use: [
						limitUrlLength,
						jsonBodyOnly,
						checkJsonBody,
						paramsFromOnePlace,
						conditionalOnlyForReads,
						optionsOnlyAsPreflight(cors !== undefined),
					],
					cors,
					rateLimit: rateLimitPolicy("catalogue"),
					// Who sends a write (or, with AUTH_READS=user, a read): lib/sign-in/sign-in.ts.
					authentication: checksSenders,
					authorization: checksSenders,
					// On stop the gateway waits for its own requests (middlewares/drain.middleware.ts);
					// tracked, their calls would make the broker wait for them before the gateway even
					// stops listening.
					callOptions: { tracking: false },
					// A cached read is looked up where it is called, and answers the gateway with its bytes as
					// sent; any other answer is tagged and compressed here (lib/http/sent-answers.ts).
					onBeforeCall(this: Service, ctx: Context<unknown, ResponseMeta>, _route: unknown, req: IncomingMessage) {
						if (this.broker.cacher) wishOf(ctx, req);
					},
					onAfterCall(
						ctx: Context<unknown, ResponseMeta>,
						_route: unknown,
						req: IncomingMessage,
						res: ServerResponse,
						data: unknown,
					) {
						return sentAnswer(ctx, req, res, data);
					},
				},
				{
					path: "/changes",
					mappingPolicy: "restrict",
					autoAliases: false,
					aliases: changesAliases,
					use: [limitUrlLength, unconditional, optionsOnlyAsPreflight(cors !== undefined)],
					cors,
					rateLimit: rateLimitPolicy("changes"),
					authentication: checksSenders,
					authorization: checksSenders,
					callOptions: { tracking: false },
					// The stream starts after the client's Last-Event-ID, and counts against its address's streams.
					onBeforeCall(ctx: Context<unknown, StreamMeta>, _route: unknown, req: IncomingMessage) {
						const lastEventId = req.headers["last-event-id"];
						if (typeof lastEventId === "string") ctx.meta.lastEventId = lastEventId;
						ctx.meta.clientAddress = clientAddress(req);
					},
				},
				docsRoute(withHead(docsAliases), rateLimitPolicy("docs")),
			],
			// Every failure, routed or not, answers JSON `{ msg }` with the status of lib/http/failures.ts.
			onError(
				this: Service & { refusals: RefusalLog; aliases: GatewayAlias[] },
				req: IncomingMessage,
				res: ServerResponse,
				err: Error,
			) {
				// An answer already begun (a file of the docs page that failed while it was sent) cannot become a failure: it is cut off.
				if (res.headersSent) {
					this.logger.error(requestFields(req), "Request failed after its answer began:", err);
					res.destroy();
					return;
				}
				// A method the path does not answer is a 405 with Allow (lib/http/methods.ts); only an unknown path is a 404.
				const { status, body, headers } = toFailure(unrouted(this.aliases, req, err));
				// A failed read has no tag: the one onBeforeCall set named the answer it did not get.
				res.removeHeader("ETag");
				// A refusal is one warning per kind a while (lib/http/refusals.ts); any other failure of the gateway's is a fault.
				if (REFUSED.has(status)) {
					const { $refusedBecause, $alias } = req as NotedRequest;
					const internal = (err as { data?: { reason?: unknown } }).data?.reason;
					const why =
						$refusedBecause ?? (typeof internal === "string" ? internal : err.message === body.msg ? undefined : err.message);
					const reason = [why, $alias?.action && `calling ${$alias.action}`].filter(Boolean).join(", ");
					this.refusals.note(`${status} ${body.msg}`, reason || undefined, requestFields(req));
				} else if (status >= 500) this.logger.error(requestFields(req), "Request failed:", err);
				if (status === 429) res.setHeader("Retry-After", retryAfter(req));
				for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
				res.setHeader("Content-Type", "application/json; charset=utf-8");
				res.writeHead(status);
				res.end(JSON.stringify(body));
			},
		},
		actions: {
			// A request's span: moleculer-web's names it by the URL and tags the URL as sent, so a secret in a query would reach the
			// trace store. Here it is named by method and path, and tagged with the URL as the access log writes it.
			rest: {
				tracing: {
					spanName: (ctx: Context) => `${requestOf(ctx).method} ${requestOf(ctx).url?.split("?", 1)[0]}`,
					tags: (ctx: Context) => ({ params: { req: { method: requestOf(ctx).method, url: maskedUrl(requestOf(ctx).url) } } }),
				},
			},

			// { status: "live" } while the process answers at all: the answer of HEALTH_PORT's probe.
			live: {
				visibility: "published",
				handler(this: Service, ctx: Context<unknown, ResponseMeta>) {
					return health(this, ctx, "/health/live");
				},
			},

			// { status: "ready" } once this node has started, reaches NATS (in a cluster), and every
			// service its paths lead to answers, its store included; 503 { status: "not ready", msg,
			// waitingFor } otherwise. The very answer of HEALTH_PORT's probe (middlewares/readiness).
			ready: {
				visibility: "published",
				handler(this: Service, ctx: Context<unknown, ResponseMeta>) {
					return health(this, ctx, "/health/ready");
				},
			},

			// moleculer-web's management of routes, kept to this node: from another node (anything that
			// reaches NATS) they would publish a route without authorization or take the API down.
			listAliases: { visibility: "protected" },
			addRoute: { visibility: "protected" },
			removeRoute: { visibility: "protected" },

			// GET /asyncapi.json: the change feed's document (docs/followers.md).
			asyncapi: { visibility: "published", handler: () => asyncApi },

			// GET /openapi.json, the docs page and its script (lib/http/docs-page.ts).
			...docsActions(document),
		},
		methods: {
			// What this gateway itself waits for before it is ready (middlewares/readiness.middleware.ts): the provider's keys.
			notReadyFor(): string[] {
				return gate.keysFetched() ? [] : ["sign-in"];
			},

			// moleculer-web's, with a path segment that is not percent-encoded UTF-8 read as the text it is (lib/http/methods.ts).
			parseQueryString(req: IncomingMessage): { url: string; query: unknown } {
				const parsed = (ApiGateway.methods!.parseQueryString as (req: IncomingMessage) => { url: string; query: unknown }).call(
					this,
					req,
				);
				return { ...parsed, url: literalSegments(parsed.url) };
			},

			// moleculer-web's, without its own log line and stack for each failure: onError logs them.
			errorHandler(req: IncomingMessage, res: ServerResponse, err: Error) {
				(this as unknown as MoleculerWebMethods).sendError(req, res, err);
			},

			// moleculer-web's server, made with Node's bounds on connections (lib/http/connections.ts): the whole request must
			// arrive within REQUEST_ARRIVAL_MS (Node's default is 5 minutes), its headers far sooner.
			createServer() {
				this.server = boundedServer(options.connections, REQUEST_ARRIVAL_MS, (this as unknown as MoleculerWebMethods).httpHandler);
				this.isHTTPS = false;
			},

			// The request's sender (ctx.meta.user, which every service called sees) when the request needs
			// one; throws 401 for a token that is not accepted, 503 when the identity provider cannot check it.
			async authenticate(
				_ctx: unknown,
				_route: unknown,
				req: IncomingMessage,
				_res: unknown,
				alias: { method: string; action?: unknown },
			) {
				// Told in the refusal's log line (onError).
				const note = (reason: string) => ((req as NotedRequest).$refusedBecause = reason);
				return gate.signedIn(req.headers.authorization, needOf(alias, options), note);
			},

			// Resolves when the sender may do what the alias does: an OPTIONS request is resolved as the
			// method it names. Throws 401 with no sender, 403 for a user without the write role.
			authorize(
				ctx: Context<unknown, { user?: SignedIn | null }>,
				_route: unknown,
				_req: unknown,
				_res: unknown,
				alias: { method: string; action?: unknown },
			) {
				gate.admit(ctx.meta.user, needOf(alias, options));
			},
		},
		created() {
			const server = this.server as Server;
			// Before moleculer-web's own listener, which logs the error with its stack: one line naming PORT, and exit code 1.
			server.prependListener("error", (err: NodeJS.ErrnoException) => {
				if (err.syscall !== "listen") return;
				this.logger.fatal(portRefused("PORT", options.port, err));
				process.exit(1);
			});
			const unlistedOrigins = new UnlistedOrigins(this.logger, options.corsOrigins);
			// Ahead of moleculer-web's own handler, so every answer carries the headers, 404s included.
			server.prependListener("request", (req, res) => {
				assignRequestId(req, res);
				securityHeaders(req, res, () => undefined);
				unlistedOrigins.note(req);
			});
			server.on("clientError", answerClientError);
			server.on(
				"connect",
				answerConnect(() => (this as unknown as { aliases?: GatewayAlias[] }).aliases ?? []),
			);
			const refusals = (this.refusals = new RefusalLog(this.logger));
			limitConnectionsPerClient(server, options.connections.perClient, isTrustedProxy(options.trustProxy), address =>
				refusals.note(
					`429 ${texts.tooManyConnections}`,
					`${address} holds ${options.connections.perClient} connections (MAX_CONNECTIONS_PER_CLIENT)`,
					{},
				),
			);
			observeRequests(server, this.logger, this.broker.metrics);
		},
		started() {
			if (options.production && !checksSenders) this.logger.warn(OPEN_WRITES_WARNING);
			gate.start(this.logger);
		},
		stopped() {
			gate.stop();
		},
	};
}

export default apiService();
