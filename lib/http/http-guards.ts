import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { Errors } from "moleculer";
import helmet from "helmet";
import ApiGateway from "moleculer-web";
import { isUtf8 } from "node:buffer";
import { methodNotAllowed, NOT_UTF8, texts } from "../catalogue/errors";
import { dropPrototypeKeys, isNestedDeeperThan } from "./json";
import { answerBegun } from "./connections";
import { isRead, isRouted, literalSegments, methodsAt, type GatewayAlias } from "./methods";

/**
 * The JSON body parser's `verify`: a body said to be UTF-8 (or saying nothing) whose bytes are not (Latin-1 names, say) is a 400,
 * where the parser would store U+FFFD in place of each letter it could not read. Other charsets (UTF-16) are the parser's to decode.
 */
export function utf8Only(_req: IncomingMessage, _res: ServerResponse, body: Buffer, encoding: string): void {
	if (encoding.toLowerCase() === "utf-8" && !isUtf8(body)) throw Object.assign(new Error(texts.bodyNotUtf8), { type: NOT_UTF8 });
}

/** Connect-style middleware, as moleculer-web runs them in a route's `use`. */
type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** The longest URL served: room for a 200-character title filter of 4-byte characters, percent-encoded, and an id. */
export const MAX_URL_LENGTH = 4096;

/** The deepest JSON body accepted; the deepest the catalogue reads is 4 (`pageable.sort[0].property`). */
const MAX_JSON_DEPTH = 32;

/** A refused request: a 4xx whose message the gateway sends as `msg` (lib/http/failures.ts). */
const refused = (status: number, text: string, type: string) => new Errors.MoleculerClientError(text, status, type);

/** 414 for a URL longer than MAX_URL_LENGTH, before the action sees any of it. */
export const limitUrlLength: Middleware = (req, _res, next) =>
	next((req.url ?? "").length > MAX_URL_LENGTH ? refused(414, texts.urlTooLong, "URL_TOO_LONG") : undefined);

/**
 * 400 for a body nested deeper than MAX_JSON_DEPTH (passing it between nodes would recurse that deep); otherwise drops the keys
 * naming Object.prototype's members (lib/http/json.ts) before the gateway copies the body into the params.
 */
export const checkJsonBody: Middleware = (req, _res, next) => {
	const { body } = req as { body?: unknown };
	if (isNestedDeeperThan(body, MAX_JSON_DEPTH)) return next(refused(400, texts.bodyTooDeep, "BODY_TOO_DEEP"));
	dropPrototypeKeys(body);
	next();
};

/** The methods whose operations take a body (the OpenAPI document lists their 413 and 415). */
const BODY_METHODS = new Set(["PUT", "POST"]);

/**
 * 415 for a PUT or POST whose body is not sent as JSON (text/plain, a form, no Content-Type): the body parser reads only
 * `application/json` and leaves any other body unread, so the action would answer for a body it never saw. A request without
 * a body passes, and so does one its path does not take (the 404 or 405 says more).
 */
export const jsonBodyOnly: Middleware = (req, _res, next) => {
	const sent = Number(req.headers["content-length"]) > 0 || req.headers["transfer-encoding"] !== undefined;
	const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
	const refuse = sent && type !== "application/json" && BODY_METHODS.has(req.method ?? "") && isRouted(req);
	next(refuse ? refused(415, texts.bodyNotJson, "BODY_NOT_JSON") : undefined);
};

/**
 * Each request takes its parameters from one place: a read (GET, HEAD) from its query string (the list filters), a write or a
 * search from its body. moleculer-web merges the two, so `PUT /author?name=Mallory` would otherwise store a name the body never
 * sent, and a GET with a body would answer for filters its URL does not show (a cache keyed by the URL would keep that answer).
 */
export const paramsFromOnePlace: Middleware = (req, _res, next) => {
	if (isRead(req.method)) (req as { body?: unknown }).body = {};
	else (req as { query?: unknown }).query = {};
	next();
};

/**
 * No 304 on this route: the conditional headers are dropped. For the change stream (GET /changes), which moleculer-web would
 * otherwise answer 304 to `If-None-Match: *` while piping the stream into an answer that has no body: the client would wait for ever.
 */
export const unconditional: Middleware = (req, _res, next) => {
	delete req.headers["if-none-match"];
	delete req.headers["if-modified-since"];
	next();
};

/** Only GET and HEAD answer 304: a write or a search always runs and sends its answer, as in Express; moleculer-web would compare them all. */
export const conditionalOnlyForReads: Middleware = (req, res, next) => (isRead(req.method) ? next() : unconditional(req, res, next));

/**
 * OPTIONS is a CORS preflight (it names an Access-Control-Request-Method) on a route with CORS on, and a 404 otherwise. moleculer-web
 * routes an OPTIONS as the method it names, or as a GET when it names none, and runs that action unless CORS answers it: an OPTIONS
 * naming PUT would create a record, one naming nothing would send a list, the docs page or a change stream.
 */
export const optionsOnlyAsPreflight =
	(cors: boolean): Middleware =>
	(req, _res, next) => {
		const preflight = cors && req.headers["access-control-request-method"] !== undefined;
		next(req.method === "OPTIONS" && !preflight ? refused(404, texts.notFound, "NOT_FOUND") : undefined);
	};

/** An `X-Request-ID` taken as sent: short, and only characters that are safe in logs and headers. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request its id first: the client's `X-Request-ID` when sane, else a new UUID. moleculer carries it through every call
 * and it goes back in the answer's `X-Request-ID`; `X-Correlation-ID`, which moleculer-web would prefer, is dropped.
 */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): void {
	const sent = req.headers["x-request-id"];
	const id = typeof sent === "string" && REQUEST_ID.test(sent) ? sent : randomUUID();
	req.headers["x-request-id"] = id;
	delete req.headers["x-correlation-id"];
	res.setHeader("X-Request-ID", id);
}

/**
 * Security headers for a JSON API (helmet): nothing in an answer may run, load or be framed, and
 * browsers must not sniff it as another type. HSTS is left to whatever terminates TLS.
 */
export const securityHeaders: Middleware = helmet({
	contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
	frameguard: { action: "deny" },
	strictTransportSecurity: false,
});

/** The docs page's headers, over those above: Swagger UI's scripts, styles, data: images and API calls from the gateway's origin only. */
export const docsSecurityHeaders: Middleware = helmet.contentSecurityPolicy({
	useDefaults: false,
	directives: {
		defaultSrc: ["'none'"],
		scriptSrc: ["'self'"],
		styleSrc: ["'self'"],
		imgSrc: ["'self'", "data:"],
		connectSrc: ["'self'"],
		baseUri: ["'none'"],
		formAction: ["'none'"],
		frameAncestors: ["'none'"],
	},
});

/** What moleculer-web keeps of a route's rate limit (RATE_LIMIT) on the request it routes. */
interface RoutedForLimit {
	$route?: {
		rateLimit?: {
			limit: number;
			headers?: boolean;
			key(req: IncomingMessage): string;
			store: { inc(key: string): number | Promise<number>; resetTime: number };
		};
	};
}

/**
 * Spends one request of the route's rate limit, with its headers; false once the budget is gone. moleculer-web checks it
 * only for aliases, so files a route's middleware serves would otherwise pass unlimited.
 */
async function withinRateLimit(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
	const limit = (req as RoutedForLimit).$route?.rateLimit;
	const key = limit?.key(req);
	if (!limit || !key) return true;
	const remaining = limit.limit - (await limit.store.inc(key));
	if (limit.headers) {
		res.setHeader("X-Rate-Limit-Limit", limit.limit);
		res.setHeader("X-Rate-Limit-Remaining", Math.max(0, remaining));
		res.setHeader("X-Rate-Limit-Reset", limit.store.resetTime);
	}
	return remaining >= 0;
}

/**
 * Runs `serve` (serve-static) for these file names only, within the route's rate limit (a 429 past
 * it, as for the route's aliases); every other path goes on to the route's aliases.
 */
export function serveOnly(names: string[], serve: Middleware): Middleware {
	const paths = new Set(names.map(name => `/${name}`));
	return (req, res, next) => {
		if (!paths.has((req.url ?? "").split("?")[0])) return next();
		withinRateLimit(req, res).then(
			allowed => (allowed ? serve(req, res, next) : next(new ApiGateway.Errors.RateLimitExceeded("RATE_LIMIT_EXCEEDED"))),
			next,
		);
	};
}

/**
 * The raw answer to a request Node could not parse as HTTP (the `clientError` event): JSON with a
 * `msg` like every other failure, instead of Node's bare status line. A connection whose answer has
 * begun is closed without one.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
	if (err.code === "ECONNRESET" || !socket.writable || answerBegun(socket)) {
		socket.destroy();
		return;
	}
	const [status, reason, text] =
		err.code === "HPE_HEADER_OVERFLOW"
			? [431, "Request Header Fields Too Large", texts.headersTooLarge]
			: err.code === "ERR_HTTP_REQUEST_TIMEOUT"
				? [408, "Request Timeout", texts.requestTooSlow]
				: [400, "Bad Request", texts.malformedRequest];
	answerOnSocket(socket, status, reason, text);
}

/** An answer written on the socket itself, for a request node's server hands to no route; the connection closes after it. */
function answerOnSocket(socket: Duplex, status: number, reason: string, text: string, more = ""): void {
	const body = JSON.stringify({ msg: text });
	socket.end(
		`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n${more}` +
			`Content-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
	);
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Whether an Authorization header carries `Bearer <token>`, compared in constant time on digests, so a wrong length does not show. */
export function carriesToken(authorization: string | undefined, token: string): boolean {
	const sent = bearerOf(authorization);
	return sent !== null && timingSafeEqual(digest(sent), digest(token));
}

/** The token of an `Authorization: Bearer <token>` header (RFC 6750's one place for it); null for any other header. */
export function bearerOf(authorization: string | undefined): string | null {
	return /^Bearer +(\S+) *$/i.exec(authorization ?? "")?.[1] ?? null;
}

/**
 * Answers a CONNECT, a proxy's method, which node's server gives to no route (without a listener it drops the connection): the 405
 * of its path with `Allow`, or a 404 for a path no alias has.
 */
export function answerConnect(aliases: () => readonly GatewayAlias[]) {
	return (req: IncomingMessage, socket: Duplex): void => {
		const path = (req.url ?? "").split("?")[0].replace(/(.)\/+$/, "$1");
		const allowed = path.startsWith("/") ? methodsAt(aliases(), literalSegments(path)) : [];
		if (allowed.length === 0) answerOnSocket(socket, 404, "Not Found", texts.notFound);
		else
			answerOnSocket(
				socket,
				405,
				"Method Not Allowed",
				methodNotAllowed("CONNECT", allowed).message,
				`Allow: ${allowed.join(", ")}\r\n`,
			);
	};
}
