import { readFileSync } from "node:fs";
import { isIPv4 } from "node:net";
import path from "node:path";
import proxyaddr from "proxy-addr";
import { SERVICE_NAMES, type ServiceName } from "../catalogue/services";

/** Everything the catalogue reads from the environment, read and checked once at start-up. */
export interface CatalogueConfig {
	/** HTTP port of the gateway (`PORT`, default 3000; 0 picks a free port). */
	port: number;
	/** Where the embedded SQLite database lives (`DATA_DIR`, default ./data). */
	dataDir: string;
	/** `file` (the SQLite database of DATA_DIR, the default) or `memory` (nothing kept; for tests) (`STORAGE`). */
	storage: "file" | "memory";
	/** Moleculer transporter URL (`TRANSPORTER`); none runs every service in one process. */
	transporter: string | null;
	/** Separates clusters sharing one transporter (`NAMESPACE`). */
	namespace: string;
	/** Moleculer log level (`LOGLEVEL`, default info). */
	logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace";
	/** Largest JSON body the gateway accepts (`BODY_LIMIT`, default 100kb). */
	bodyLimit: string;
	/** The services this node runs (`SERVICES`, read by moleculer-runner; checked here). */
	services: ServiceName[];
	/** MongoDB connection string (`MONGO_URI`); when set, storage is MongoDB, not SQLite. */
	mongoUri: string | null;
	/** How long a node may take to reach NATS and its storage before it gives up (`START_TIMEOUT`, seconds, default 30). */
	startTimeoutMs: number;
	/** How long a call between services may take before it fails (`REQUEST_TIMEOUT`, seconds, default 10). */
	requestTimeoutMs: number;
	/** How long a delete, game draft or game change may stay in progress before another node deems it abandoned (docs/integrity.md). */
	claimLeaseMs: number;
	/** Port of the node's readiness probe (`HEALTH_PORT`); none when unset. */
	healthPort: number | null;
	/** Origins whose front ends may call the gateway from a browser (`CORS_ORIGINS`, comma-separated; `*` any); none when unset. */
	corsOrigins: string[];
	/** Requests a client address may send per window (`RATE_LIMIT`, `RATE_LIMIT_WINDOW` seconds, default 60); off when unset or 0. */
	rateLimit: RateLimit | null;
	/** What the gateway holds open at once, and how long a connection may wait (lib/http/connections.ts). */
	connections: ConnectionBounds;
	/** The proxies whose `X-Forwarded-For` names the client (`TRUST_PROXY`); none when unset: a client is its connection's address. */
	trustProxy: TrustProxy | null;
	/** Redis URL (`REDIS_URL`) of the read cache every node shares; none caches in memory in one process, and not at all in a cluster. */
	redisUrl: string | null;
	/** Bytes the in-memory cache of one process may hold (`CACHE_MAX_MB`, default 64; 0 turns it off). */
	cacheMaxBytes: number;
	/** The bearer token writes need (`API_TOKEN`); writes are open when unset. Never put into service settings. */
	apiToken: string | null;
	/** Sign-in with an identity provider's bearer tokens (`AUTH_*`, docs/security.md); off when AUTH_ISSUER is unset. */
	signIn: SignIn | null;
	/** `NODE_ENV=production`: JSON logs by default, and a warning at start when writes are open. */
	production: boolean;
	/** Port of the node's Prometheus metrics at /metrics (`METRICS_PORT`); metrics are off when unset. */
	metricsPort: number | null;
	/** `json` (one object per line) or `text` (`LOG_FORMAT`; default json when NODE_ENV=production, else text). */
	logFormat: LogFormat;
	/** Where spans go (`TRACE_EXPORTER`, `ZIPKIN_URL`); tracing is off when unset. */
	tracing: Tracing | null;
	/** Whether writes are recorded in the change feed (`CHANGE_FEED`, `on` or `off`, default on; docs/followers.md). */
	changeFeed: boolean;
	/**
	 * How many NATS servers keep the cluster's change stream (`CHANGE_FEED_REPLICAS`, 1 to 5, default 1): with 3 on a NATS cluster of
	 * 3, the feed takes writes with one server down (docs/followers.md).
	 */
	feedReplicas: number;
	/**
	 * Whether the cluster's NATS has nats-access.conf's rules (`NATS_ACCESS`, `on` or `off`, default off): the node then names
	 * itself by its kind, logs in as it, and NATS balances its calls per action (docs/security.md, "The broker").
	 */
	natsAccess: boolean;
}

export type LogFormat = "json" | "text";

/** Who may read and write when front ends sign in with an OpenID Connect provider (docs/security.md). */
export interface SignIn {
	/** The tokens' `iss`, exactly (`AUTH_ISSUER`); its /.well-known/openid-configuration names the keys. */
	issuer: string;
	/** The keys' URL (`AUTH_JWKS_URL`), for a provider without discovery; null reads it from the issuer's configuration. */
	jwksUrl: string | null;
	/** The tokens' `aud` must name this (`AUTH_AUDIENCE`): a token issued for another application is refused. */
	audience: string;
	/** Where the roles are in a token (`AUTH_ROLES_CLAIM`, a dotted path, default `roles`). */
	rolesClaim: string;
	/** The role that may write (`AUTH_WRITE_ROLE`, default `catalogue-editor`). */
	writeRole: string;
	/** `public` (the default): anyone reads; `user`: reads need a signed-in user too (`AUTH_READS`). */
	reads: "public" | "user";
}

/** moleculer's own exporters that need no other package: Zipkin (over HTTP) or the console (development). */
export type Tracing = { exporter: "zipkin"; url: string } | { exporter: "console" };

export interface RateLimit {
	limit: number;
	windowMs: number;
}

export interface ConnectionBounds {
	/** Connections at once (`MAX_CONNECTIONS`; default the open-file limit less 256 for the broker, the store and the probes, at most 10,000). */
	total: number;
	/** Connections at once from one client address (`MAX_CONNECTIONS_PER_CLIENT`, default 256); a trusted proxy's are not counted. */
	perClient: number;
	/** How long a request's headers may take to arrive (`HEADERS_TIMEOUT`, seconds, default 5). */
	headersTimeoutMs: number;
	/** How long a kept-alive connection may wait idle for its next request (`KEEP_ALIVE_TIMEOUT`, seconds, default 5). */
	keepAliveTimeoutMs: number;
}

/** As Express's "trust proxy": the proxies nearest the gateway, as a number of hops or as their addresses and subnets. */
export type TrustProxy = { hops: number } | { proxies: string[] };

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace"] as const;

export class ConfigError extends Error {
	override name = "ConfigError";
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
	if ((allowed as readonly string[]).includes(value)) return value as T;
	throw new ConfigError(`${name} must be one of ${allowed.join(", ")}; got "${value}"`);
}

function wholeNumber(name: string, value: string, min: number, max: number): number {
	// Digits only: Number() also reads 0x12a5, 1e3 and 5.0.
	const number = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
	if (!Number.isInteger(number) || number < min || number > max)
		throw new ConfigError(`${name} must be a whole number from ${min} to ${max}; got "${value}"`);
	return number;
}

/** BODY_LIMIT: a size as the gateway's body parser reads it, in bytes or in kb or mb, at most 64mb (a body is parsed whole in memory). */
function bodyLimit(value: string): string {
	const found = /^(\d{1,12})(b|kb|mb)?$/i.exec(value);
	const bytes = found ? Number(found[1]) * 1024 ** ["b", "kb", "mb"].indexOf((found[2] ?? "b").toLowerCase()) : 0;
	if (bytes < 1 || bytes > 64 * 1024 ** 2)
		throw new ConfigError(`BODY_LIMIT must be a size from 1 byte to 64mb, in bytes or with kb or mb, such as 100kb; got "${value}"`);
	return value;
}

/** The items of a comma-separated value, trimmed, without empty ones. */
const commaList = (value: string | undefined) =>
	(value ?? "")
		.split(",")
		.map(item => item.trim())
		.filter(Boolean);

function serviceList(value: string | undefined): ServiceName[] {
	const names = commaList(value);
	if (names.length === 0) return [...SERVICE_NAMES];
	// moleculer-runner would read an empty item as the whole services folder: every service.
	if (names.length !== value!.split(",").length)
		throw new ConfigError(`SERVICES lists an empty name: give names separated by single commas, such as api,games; got "${value}"`);
	return names.map(name => oneOf("SERVICES", name, SERVICE_NAMES));
}

/**
 * NAMESPACE is part of every NATS subject of the cluster (a dot or a space would split it, and the broker's access rules match one
 * token), and moleculer-runner reads a value that looks like a number or true/false as one: a name, then.
 */
function namespace(value: string | undefined): string {
	if (!value) return "";
	if (!/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(value) || /^(true|false)$/i.test(value))
		throw new ConfigError(
			`NAMESPACE must be a name of letters, digits, - and _ that starts with a letter, such as catalogue-eu; got "${value}"`,
		);
	return value;
}

function mongoUri(value: string | undefined): string | null {
	if (!value) return null;
	if (!/^mongodb(\+srv)?:\/\//.test(value)) throw new ConfigError(`MONGO_URI must start with mongodb:// or mongodb+srv://`);
	return value;
}

/** `*`, or origins such as `https://app.example.com` (moleculer-web also takes `*` inside one). */
function corsOrigins(value: string | undefined): string[] {
	const origins = commaList(value);
	for (const origin of origins)
		if (origin !== "*" && !/^https?:\/\/[^/?#\s]+$/.test(origin))
			throw new ConfigError(`CORS_ORIGINS must list origins such as https://app.example.com, or *; got "${origin}"`);
	return origins;
}

function rateLimit(limit: string | undefined, window: string | undefined): RateLimit | null {
	const requests = wholeNumber("RATE_LIMIT", limit || "0", 0, 1_000_000);
	const windowMs = wholeNumber("RATE_LIMIT_WINDOW", window || "60", 1, 86_400) * 1000;
	return requests === 0 ? null : { limit: requests, windowMs };
}

/**
 * A whole number of hops, or a list proxy-addr compiles (addresses, subnets, `loopback`, ...), not both, as Express keeps them apart.
 * Trusting every hop (Express's `true`) would let any client name itself, so it is not offered.
 */
function trustProxy(value: string | undefined): TrustProxy | null {
	const items = commaList(value);
	if (items.length === 0) return null;
	const hops = items.filter(item => /^\d+$/.test(item));
	if (hops.length > 0) {
		// proxy-addr would read a bare number in a list as an address (1 is 0.0.0.1).
		if (items.length > 1) throw new ConfigError(`TRUST_PROXY takes a number of hops alone, not in a list; got "${value}"`);
		const count = wholeNumber("TRUST_PROXY", hops[0], 0, 16);
		return count === 0 ? null : { hops: count };
	}
	try {
		proxyaddr.compile(items);
	} catch (err) {
		throw new ConfigError(
			`TRUST_PROXY must be a number of hops, or addresses and subnets of proxies (10.0.0.0/8, loopback, linklocal, uniquelocal), ` +
				`comma-separated; got "${value}" (${(err as Error).message})`,
		);
	}
	return { proxies: items };
}

/** What the process may hold open, by its soft open-file limit (Linux); null where it cannot be read. */
function openFileLimit(): number | null {
	try {
		const limit = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
		return limit === undefined ? null : Number(limit);
	} catch {
		return null;
	}
}

/** Room the gateway leaves below the open-file limit: NATS, Redis, the database, the metrics and health ports, logs. */
const FILES_KEPT = 256;

function connections(env: NodeJS.ProcessEnv): ConnectionBounds {
	const files = openFileLimit();
	const fallback = files === null ? 1000 : Math.max(64, Math.min(10_000, files - FILES_KEPT));
	return {
		total: wholeNumber("MAX_CONNECTIONS", env.MAX_CONNECTIONS || String(fallback), 1, 1_000_000),
		perClient: wholeNumber("MAX_CONNECTIONS_PER_CLIENT", env.MAX_CONNECTIONS_PER_CLIENT || "256", 1, 1_000_000),
		// Within the whole request's 30 s (REQUEST_ARRIVAL_MS in services/api.service.ts), as Node's server requires.
		headersTimeoutMs: wholeNumber("HEADERS_TIMEOUT", env.HEADERS_TIMEOUT || "5", 1, 30) * 1000,
		keepAliveTimeoutMs: wholeNumber("KEEP_ALIVE_TIMEOUT", env.KEEP_ALIVE_TIMEOUT || "5", 1, 300) * 1000,
	};
}

function redisUrl(value: string | undefined): string | null {
	if (!value) return null;
	if (!/^rediss?:\/\//.test(value)) throw new ConfigError("REDIS_URL must start with redis:// or rediss://");
	return value;
}

/** Long enough not to be guessed within any rate limit, and sendable in a header as it is. */
function apiToken(value: string | undefined): string | null {
	if (!value) return null;
	if (!/^[\x21-\x7e]{16,}$/.test(value)) throw new ConfigError("API_TOKEN must be at least 16 printable ASCII characters without spaces");
	return value;
}

const HTTP_URL = /^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/;

/** An http:// URL whose host is not this machine: what it fetches could be replaced on the way. */
function remoteHttp(url: string): boolean {
	if (!url.startsWith("http://")) return false;
	const host = new URL(url).hostname;
	return host !== "localhost" && host !== "[::1]" && !(isIPv4(host) && host.startsWith("127."));
}

/**
 * The AUTH_* variables: all of them need AUTH_ISSUER, and AUTH_ISSUER needs AUTH_AUDIENCE. In production the provider is reached over
 * https (OpenID Connect's issuer is an https URL): keys fetched over plain http could be swapped by anyone on the path, who could then
 * sign tokens of any editor. A provider on this machine is reached over http too.
 */
function signIn(env: NodeJS.ProcessEnv, production: boolean): SignIn | null {
	const { AUTH_ISSUER: issuer, AUTH_JWKS_URL: jwksUrl, AUTH_AUDIENCE: audience, AUTH_ROLES_CLAIM: rolesClaim } = env;
	if (!issuer) {
		const stray = ["AUTH_JWKS_URL", "AUTH_AUDIENCE", "AUTH_ROLES_CLAIM", "AUTH_WRITE_ROLE", "AUTH_READS"].find(name => env[name]);
		if (stray) throw new ConfigError(`${stray} is only read with AUTH_ISSUER, the identity provider's issuer URL`);
		return null;
	}
	if (!HTTP_URL.test(issuer) || !URL.canParse(issuer))
		throw new ConfigError(`AUTH_ISSUER must be the issuer's URL, such as https://id.example.com/realms/games; got "${issuer}"`);
	if (jwksUrl && (!HTTP_URL.test(jwksUrl) || !URL.canParse(jwksUrl)))
		throw new ConfigError(`AUTH_JWKS_URL must be an http(s) URL; got "${jwksUrl}"`);
	const plain =
		production && [["AUTH_ISSUER", issuer] as const, ["AUTH_JWKS_URL", jwksUrl ?? ""] as const].find(([, url]) => remoteHttp(url));
	if (plain)
		throw new ConfigError(
			`${plain[0]} must be an https URL when NODE_ENV=production (keys fetched over http could be replaced on the way); got "${plain[1]}"`,
		);
	if (!audience)
		throw new ConfigError(
			"AUTH_ISSUER needs AUTH_AUDIENCE, the audience (aud) of the catalogue's tokens: tokens issued for other applications are refused",
		);
	if (rolesClaim !== undefined && rolesClaim !== "" && !/^[^.\s]+(\.[^.\s]+)*$/.test(rolesClaim))
		throw new ConfigError(`AUTH_ROLES_CLAIM must be a claim name or a dotted path such as realm_access.roles; got "${rolesClaim}"`);
	return {
		issuer,
		jwksUrl: jwksUrl || null,
		audience,
		rolesClaim: rolesClaim || "roles",
		writeRole: env.AUTH_WRITE_ROLE || "catalogue-editor",
		reads: oneOf("AUTH_READS", env.AUTH_READS || "public", ["public", "user"] as const),
	};
}

function logFormat(value: string | undefined, production: boolean): LogFormat {
	return oneOf("LOG_FORMAT", value || (production ? "json" : "text"), ["json", "text"] as const);
}

/**
 * Not TRACING_*: moleculer-runner would set `tracing.exporter` from TRACING_EXPORTER. The console exporter prints span trees
 * to standard output, which JSON log lines cannot share.
 */
function tracing(exporter: string | undefined, url: string | undefined, format: LogFormat): Tracing | null {
	if (!exporter) {
		if (url) throw new ConfigError("ZIPKIN_URL is only read with TRACE_EXPORTER=zipkin");
		return null;
	}
	const chosen = oneOf("TRACE_EXPORTER", exporter, ["zipkin", "console"] as const);
	if (chosen === "console") {
		if (url) throw new ConfigError("ZIPKIN_URL is only read with TRACE_EXPORTER=zipkin");
		if (format === "json")
			throw new ConfigError("TRACE_EXPORTER=console prints text between the JSON log lines: use it with LOG_FORMAT=text");
		return { exporter: "console" };
	}
	if (!url || !HTTP_URL.test(url))
		throw new ConfigError(`TRACE_EXPORTER=zipkin needs ZIPKIN_URL, Zipkin's base URL such as http://zipkin:9411; got "${url ?? ""}"`);
	return { exporter: "zipkin", url: url.replace(/\/+$/, "") };
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): CatalogueConfig {
	const requestTimeoutMs = wholeNumber("REQUEST_TIMEOUT", env.REQUEST_TIMEOUT || "10", 1, 3600) * 1000;
	const production = env.NODE_ENV === "production";
	const format = logFormat(env.LOG_FORMAT, production);
	return distinctPorts({
		port: wholeNumber("PORT", env.PORT ?? "3000", 0, 65535),
		dataDir: path.resolve(env.DATA_DIR || "data"),
		storage: oneOf("STORAGE", env.STORAGE || "file", ["file", "memory"] as const),
		transporter: env.TRANSPORTER || null,
		namespace: namespace(env.NAMESPACE),
		logLevel: oneOf("LOGLEVEL", env.LOGLEVEL || "info", LOG_LEVELS),
		bodyLimit: bodyLimit(env.BODY_LIMIT || "100kb"),
		services: serviceList(env.SERVICES),
		mongoUri: mongoUri(env.MONGO_URI),
		startTimeoutMs: wholeNumber("START_TIMEOUT", env.START_TIMEOUT || "30", 1, 3600) * 1000,
		requestTimeoutMs,
		claimLeaseMs: 2 * requestTimeoutMs,
		healthPort: env.HEALTH_PORT ? wholeNumber("HEALTH_PORT", env.HEALTH_PORT, 1, 65535) : null,
		corsOrigins: corsOrigins(env.CORS_ORIGINS),
		rateLimit: rateLimit(env.RATE_LIMIT, env.RATE_LIMIT_WINDOW),
		connections: connections(env),
		trustProxy: trustProxy(env.TRUST_PROXY),
		redisUrl: redisUrl(env.REDIS_URL),
		cacheMaxBytes: wholeNumber("CACHE_MAX_MB", env.CACHE_MAX_MB || "64", 0, 65_536) * 1024 * 1024,
		apiToken: apiToken(env.API_TOKEN),
		signIn: signIn(env, production),
		production,
		metricsPort: env.METRICS_PORT ? wholeNumber("METRICS_PORT", env.METRICS_PORT, 1, 65535) : null,
		logFormat: format,
		tracing: tracing(env.TRACE_EXPORTER, env.ZIPKIN_URL, format),
		changeFeed: oneOf("CHANGE_FEED", env.CHANGE_FEED || "on", ["on", "off"] as const) === "on",
		feedReplicas: wholeNumber("CHANGE_FEED_REPLICAS", env.CHANGE_FEED_REPLICAS || "1", 1, 5),
		natsAccess: oneOf("NATS_ACCESS", env.NATS_ACCESS || "off", ["on", "off"] as const) === "on",
	});
}

/** `read`, whose ports each listen on their own: one given twice would be refused at start as "in use", by the node itself. */
function distinctPorts(read: CatalogueConfig): CatalogueConfig {
	const ports = [
		["PORT", read.services.includes("api") && read.port !== 0 ? read.port : null],
		["HEALTH_PORT", read.healthPort],
		["METRICS_PORT", read.metricsPort],
	] as const;
	for (const [index, [name, port]] of ports.entries()) {
		const same = ports.slice(index + 1).find(([, other]) => port !== null && other === port);
		if (same) throw new ConfigError(`${name} and ${same[0]} are both ${port}: give each its own port`);
	}
	return read;
}

export const config: CatalogueConfig = readConfig();
