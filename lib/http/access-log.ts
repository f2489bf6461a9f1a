import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Logger, MetricRegistry } from "moleculer";

/** HTTP requests answered, per method, alias path and status (Prometheus: catalogue_http_requests_total). */
export const HTTP_REQUESTS = "catalogue.http.requests.total";
/** How long the answers took, in milliseconds, with the same labels (catalogue_http_request_time). */
export const HTTP_REQUEST_TIME = "catalogue.http.request.time";

/** The `path` label of a request no alias matched (a 404, or one refused before routing). */
const UNROUTED = "none";

/** The status of a request whose client left before any answer was sent (nginx's "client closed request"). */
const CLIENT_LEFT = 499;

/** What the gateway says of a request once it has ended. */
export interface AccessEntry {
	requestId: string | undefined;
	method: string | undefined;
	url: string | undefined;
	/** The alias the request matched, such as `/game/:id`: a bounded label, unlike the URL. */
	path: string;
	status: number;
	durationMs: number;
	/** Who sent it (lib/sign-in/sign-in.ts), when the request needed a sender. */
	user?: string;
	/** How the sender was known: `api-token` (API_TOKEN) or `identity-provider` (a signed token, whose `sub` may be any text). */
	via?: string;
	/** The client went away before the whole answer was sent. */
	aborted?: true;
}

/** The fields that tie a log line to its request: the id lib/http/http-guards.ts gave it. */
export const requestFields = (req: IncomingMessage) => ({ requestId: req.headers["x-request-id"] as string | undefined });

/** moleculer-web's notes on a request: its URL before routing, the alias it matched and its context (the sender in `meta.user`). */
type RoutedRequest = IncomingMessage & {
	originalUrl?: string;
	$alias?: { fullPath?: string };
	$ctx?: { meta?: { user?: { sub?: unknown; via?: unknown } | null } };
};

/** Query parameters whose names say they carry a secret (`access_token`, `api_key`, `code`, `password`, `signature`...). */
const SECRET_PARAMETER = /token|key|code|secret|passw|auth|sig|session|cookie|credential/i;

/** Whether a parameter's name says it carries a secret: its value is written `***` in logs and traces. */
export const isSecretName = (name: string) => SECRET_PARAMETER.test(name);

/**
 * The URL as logged and traced: the values of the query's secret-looking parameters written `***`. The gateway reads no credential
 * from a URL, but a client may send one there (a browser's EventSource cannot set headers), and a log or a trace store is read by
 * more people than the token's owner.
 */
export function maskedUrl(url: string | undefined): string | undefined {
	const at = url?.indexOf("?") ?? -1;
	if (url === undefined || at === -1) return url;
	const masked = url
		.slice(at + 1)
		.split("&")
		.map(pair => {
			const [name] = pair.split("=", 1);
			let decoded = name;
			try {
				decoded = decodeURIComponent(name.replace(/\+/g, " "));
			} catch {
				// A name that is not valid percent-encoding is matched as sent.
			}
			return isSecretName(decoded) && pair.includes("=") ? `${name}=***` : pair;
		});
	return `${url.slice(0, at)}?${masked.join("&")}`;
}

export function accessEntry(req: IncomingMessage, res: ServerResponse, durationMs: number): AccessEntry {
	const { originalUrl, $alias, $ctx } = req as RoutedRequest;
	const user = $ctx?.meta?.user?.sub;
	const via = $ctx?.meta?.user?.via;
	return {
		...requestFields(req),
		method: req.method,
		url: maskedUrl(originalUrl ?? req.url),
		path: $alias?.fullPath ?? UNROUTED,
		// Left before any answer: nginx's 499, not the 200 Node's response holds until one is written.
		status: res.headersSent ? res.statusCode : CLIENT_LEFT,
		durationMs: Math.round(durationMs * 1000) / 1000,
		...(typeof user === "string" && { user }),
		...(typeof via === "string" && { via }),
		...(res.writableFinished ? {} : { aborted: true as const }),
	};
}

function registerMetrics(metrics: MetricRegistry): void {
	const labelNames = ["method", "path", "status"];
	metrics.register({ name: HTTP_REQUESTS, type: "counter", labelNames, unit: "request", description: "HTTP requests answered" });
	metrics.register({
		name: HTTP_REQUEST_TIME,
		type: "histogram",
		labelNames,
		unit: "millisecond",
		buckets: true,
		quantiles: true,
		description: "HTTP answer times",
	});
}

/**
 * One info line per HTTP request when it ends (access log), and its count and time per route in
 * moleculer's metrics: moleculer counts the actions the gateway calls, not the HTTP routes.
 */
export function observeRequests(server: Server, logger: Logger, metrics: MetricRegistry): void {
	if (metrics.isEnabled()) registerMetrics(metrics);
	server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
		const started = process.hrtime.bigint();
		res.once("close", () => {
			const entry = accessEntry(req, res, Number(process.hrtime.bigint() - started) / 1e6);
			logger.info(entry, "request answered");
			const labels = { method: entry.method, path: entry.path, status: entry.status };
			metrics.increment(HTTP_REQUESTS, labels);
			metrics.observe(HTTP_REQUEST_TIME, entry.durationMs, labels);
		});
	});
}
