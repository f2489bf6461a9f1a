import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ConfigError, readConfig } from "../../lib/config/config";

describe("readConfig", () => {
	test("defaults: port 3000, ./data, SQLite under DATA_DIR, one process, info logs", () => {
		expect(readConfig({})).toEqual({
			port: 3000,
			dataDir: path.resolve("data"),
			storage: "file",
			transporter: null,
			namespace: "",
			logLevel: "info",
			bodyLimit: "100kb",
			services: ["api", "authors", "categories", "games"],
			mongoUri: null,
			startTimeoutMs: 30_000,
			requestTimeoutMs: 10_000,
			claimLeaseMs: 20_000,
			healthPort: null,
			corsOrigins: [],
			rateLimit: null,
			// The total is the open-file limit less 256, at most 10,000: below.
			connections: { total: expect.any(Number), perClient: 256, headersTimeoutMs: 5000, keepAliveTimeoutMs: 5000 },
			trustProxy: null,
			redisUrl: null,
			cacheMaxBytes: 64 * 1024 * 1024,
			apiToken: null,
			signIn: null,
			production: false,
			metricsPort: null,
			logFormat: "text",
			tracing: null,
			changeFeed: true,
			feedReplicas: 1,
			natsAccess: false,
		});
	});

	test("reads every setting", () => {
		const config = readConfig({
			PORT: "8080",
			DATA_DIR: "/tmp/catalogue",
			STORAGE: "memory",
			TRANSPORTER: "nats://127.0.0.1:4222",
			NAMESPACE: "staging",
			LOGLEVEL: "debug",
			BODY_LIMIT: "1mb",
			SERVICES: " games, api ",
			MONGO_URI: "mongodb://mongo:27017/catalogue",
			START_TIMEOUT: "5",
			REQUEST_TIMEOUT: "2",
			HEALTH_PORT: "3001",
			CORS_ORIGINS: "https://app.example.com, http://localhost:5173",
			RATE_LIMIT: "100",
			RATE_LIMIT_WINDOW: "10",
			TRUST_PROXY: "10.0.0.0/8, loopback",
			MAX_CONNECTIONS: "500",
			MAX_CONNECTIONS_PER_CLIENT: "8",
			HEADERS_TIMEOUT: "3",
			KEEP_ALIVE_TIMEOUT: "2",
			REDIS_URL: "redis://cache:6379/2",
			CACHE_MAX_MB: "16",
			API_TOKEN: "0123456789abcdef-token",
			METRICS_PORT: "3030",
			LOG_FORMAT: "text",
			NODE_ENV: "production",
			TRACE_EXPORTER: "zipkin",
			ZIPKIN_URL: "http://zipkin:9411/",
			CHANGE_FEED: "off",
			CHANGE_FEED_REPLICAS: "3",
			NATS_ACCESS: "on",
		});
		expect(config).toEqual({
			port: 8080,
			dataDir: "/tmp/catalogue",
			storage: "memory",
			transporter: "nats://127.0.0.1:4222",
			namespace: "staging",
			logLevel: "debug",
			bodyLimit: "1mb",
			services: ["games", "api"],
			mongoUri: "mongodb://mongo:27017/catalogue",
			startTimeoutMs: 5000,
			requestTimeoutMs: 2000,
			claimLeaseMs: 4000,
			healthPort: 3001,
			corsOrigins: ["https://app.example.com", "http://localhost:5173"],
			rateLimit: { limit: 100, windowMs: 10_000 },
			connections: { total: 500, perClient: 8, headersTimeoutMs: 3000, keepAliveTimeoutMs: 2000 },
			trustProxy: { proxies: ["10.0.0.0/8", "loopback"] },
			redisUrl: "redis://cache:6379/2",
			cacheMaxBytes: 16 * 1024 * 1024,
			apiToken: "0123456789abcdef-token",
			signIn: null,
			production: true,
			metricsPort: 3030,
			logFormat: "text",
			tracing: { exporter: "zipkin", url: "http://zipkin:9411" },
			changeFeed: false,
			feedReplicas: 3,
			natsAccess: true,
		});
	});

	test("MAX_CONNECTIONS defaults to the open-file limit less 256 (room for NATS, Redis, the store, the probes), at most 10,000", () => {
		const limit = Number(/^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))![1]);
		expect(readConfig({}).connections.total).toBe(Math.max(64, Math.min(10_000, limit - 256)));
		expect(() => readConfig({ MAX_CONNECTIONS_PER_CLIENT: "0" })).toThrow(
			'MAX_CONNECTIONS_PER_CLIENT must be a whole number from 1 to 1000000; got "0"',
		);
		expect(() => readConfig({ HEADERS_TIMEOUT: "never" })).toThrow('HEADERS_TIMEOUT must be a whole number from 1 to 30; got "never"');
	});

	test("a node without the gateway may give its health port the number PORT would have; the machine's own issuer over http is taken", () => {
		expect(readConfig({ SERVICES: "games", PORT: "4000", HEALTH_PORT: "4000" }).healthPort).toBe(4000);
		const local = { NODE_ENV: "production", AUTH_AUDIENCE: "catalogue" };
		expect(readConfig({ ...local, AUTH_ISSUER: "http://127.0.0.1:8080/realms/games" }).signIn?.issuer).toBe(
			"http://127.0.0.1:8080/realms/games",
		);
		expect(readConfig({ NAMESPACE: "catalogue-eu_2" }).namespace).toBe("catalogue-eu_2");
	});

	test("BODY_LIMIT takes bytes, kb or mb, from 1 byte to 64mb, as the body parser reads them", () => {
		for (const limit of ["1", "512b", "100KB", "64mb"]) expect(readConfig({ BODY_LIMIT: limit }).bodyLimit).toBe(limit);
	});

	test("RATE_LIMIT 0 is off, and CORS_ORIGINS may be *", () => {
		expect(readConfig({ RATE_LIMIT: "0" }).rateLimit).toBeNull();
		expect(readConfig({ RATE_LIMIT: "5" }).rateLimit).toEqual({ limit: 5, windowMs: 60_000 });
		expect(readConfig({ CORS_ORIGINS: "*" }).corsOrigins).toEqual(["*"]);
	});

	test("TRUST_PROXY: a number of hops, or the proxies' addresses, subnets and proxy-addr's names; 0 trusts none", () => {
		expect(readConfig({ TRUST_PROXY: "1" }).trustProxy).toEqual({ hops: 1 });
		expect(readConfig({ TRUST_PROXY: " 2 " }).trustProxy).toEqual({ hops: 2 });
		expect(readConfig({ TRUST_PROXY: "0" }).trustProxy).toBeNull();
		expect(readConfig({ TRUST_PROXY: "" }).trustProxy).toBeNull();
		expect(readConfig({ TRUST_PROXY: "uniquelocal,linklocal,192.0.2.10,2001:db8::/32,10.0.0.0/255.0.0.0" }).trustProxy).toEqual({
			proxies: ["uniquelocal", "linklocal", "192.0.2.10", "2001:db8::/32", "10.0.0.0/255.0.0.0"],
		});
	});

	test("logs are JSON in production and text elsewhere unless LOG_FORMAT says", () => {
		expect(readConfig({ NODE_ENV: "production" }).logFormat).toBe("json");
		expect(readConfig({ NODE_ENV: "development" }).logFormat).toBe("text");
		expect(readConfig({ LOG_FORMAT: "json" }).logFormat).toBe("json");
	});

	test("console tracing goes with text logs", () => {
		expect(readConfig({ TRACE_EXPORTER: "console" }).tracing).toEqual({ exporter: "console" });
	});

	test.each([
		[{ PORT: "http" }, /PORT/],
		[{ PORT: "70000" }, /PORT/],
		[{ PORT: "" }, /PORT/],
		[{ STORAGE: "mongo" }, /STORAGE/],
		[{ LOGLEVEL: "loud" }, /LOGLEVEL/],
		[{ SERVICES: "games,gmes" }, /SERVICES must be one of api, authors, categories, games; got "gmes"/],
		[{ MONGO_URI: "localhost:27017" }, /MONGO_URI/],
		[{ START_TIMEOUT: "0" }, /START_TIMEOUT/],
		[{ START_TIMEOUT: "soon" }, /START_TIMEOUT/],
		[{ HEALTH_PORT: "none" }, /HEALTH_PORT/],
		[{ REQUEST_TIMEOUT: "-1" }, /REQUEST_TIMEOUT/],
		[
			{ CORS_ORIGINS: "app.example.com" },
			/CORS_ORIGINS must list origins such as https:\/\/app.example.com, or \*; got "app.example.com"/,
		],
		[{ CORS_ORIGINS: "https://app.example.com/path" }, /CORS_ORIGINS/],
		[{ RATE_LIMIT: "lots" }, /RATE_LIMIT/],
		[{ RATE_LIMIT: "10", RATE_LIMIT_WINDOW: "0" }, /RATE_LIMIT_WINDOW/],
		[
			{ TRUST_PROXY: "true" },
			/TRUST_PROXY must be a number of hops, or addresses and subnets of proxies .*got "true" \(invalid IP address: true\)/,
		],
		[{ TRUST_PROXY: "*" }, /TRUST_PROXY must be a number of hops/],
		[{ TRUST_PROXY: "loopback,proxy.example.com" }, /TRUST_PROXY .*invalid IP address: proxy.example.com/],
		[{ TRUST_PROXY: "10.0.0.0/33" }, /TRUST_PROXY .*invalid range on address: 10.0.0.0\/33/],
		[{ TRUST_PROXY: "1,loopback" }, /TRUST_PROXY takes a number of hops alone, not in a list; got "1,loopback"/],
		[{ TRUST_PROXY: "17" }, /TRUST_PROXY must be a whole number from 0 to 16; got "17"/],
		[{ REDIS_URL: "cache:6379" }, /REDIS_URL must start with redis:\/\/ or rediss:\/\//],
		...["-5", "abc", "1zb", "0", "65mb", "1.5mb", "100 kb"].map((limit): [NodeJS.ProcessEnv, RegExp] => [
			{ BODY_LIMIT: limit },
			new RegExp(`^BODY_LIMIT must be a size from 1 byte to 64mb, in bytes or with kb or mb, such as 100kb; got "${limit}"$`),
		]),
		[{ CACHE_MAX_MB: "64MB" }, /CACHE_MAX_MB must be a whole number from 0 to 65536; got "64MB"/],
		// Number() reads these as numbers: a port of 0x12a5 listened on 4773.
		...["0x12a5", "1e3", "4000.0", " 4000", "+4000"].map((port): [NodeJS.ProcessEnv, RegExp] => [
			{ PORT: port },
			new RegExp(`^PORT must be a whole number from 0 to 65535; got "${port.replace("+", "\\+")}"$`),
		]),
		// Node refuses a headers timeout over the whole request's 30 s: a crash at start.
		[{ HEADERS_TIMEOUT: "31" }, /^HEADERS_TIMEOUT must be a whole number from 1 to 30; got "31"$/],
		// moleculer-runner reads an empty item as the whole services folder.
		...["games,", "api,,games", ",games"].map((services): [NodeJS.ProcessEnv, RegExp] => [
			{ SERVICES: services },
			new RegExp(`^SERVICES lists an empty name: give names separated by single commas, such as api,games; got "${services}"$`),
		]),
		// A dot or a space splits NATS subjects; the runner reads 007 as 7, false as a boolean.
		...["prod.eu", "a b", "007", "false", "TRUE", "a*", "x".repeat(65)].map((namespace): [NodeJS.ProcessEnv, RegExp] => [
			{ NAMESPACE: namespace },
			new RegExp(
				`^NAMESPACE must be a name of letters, digits, - and _ that starts with a letter, such as catalogue-eu; got "${namespace.replace("*", "\\*")}"$`,
			),
		]),
		[{ PORT: "4000", HEALTH_PORT: "4000" }, /^PORT and HEALTH_PORT are both 4000: give each its own port$/],
		[
			{ HEALTH_PORT: "4001", METRICS_PORT: "4001", SERVICES: "games" },
			/^HEALTH_PORT and METRICS_PORT are both 4001: give each its own port$/,
		],
		[
			{ NODE_ENV: "production", AUTH_ISSUER: "http://id.example.com:99999/realms/games", AUTH_AUDIENCE: "catalogue" },
			/^AUTH_ISSUER must be the issuer's URL/,
		],
		// A host name that begins like this machine's address is not this machine.
		[
			{ NODE_ENV: "production", AUTH_ISSUER: "http://127.0.0.1.example.com/realms/games", AUTH_AUDIENCE: "catalogue" },
			/^AUTH_ISSUER must be an https URL when NODE_ENV=production/,
		],
		[{ CACHE_MAX_MB: "-1" }, /CACHE_MAX_MB/],
		[{ API_TOKEN: "short" }, /API_TOKEN must be at least 16 printable ASCII characters/],
		[{ API_TOKEN: "a token with spaces in it" }, /API_TOKEN/],
		[{ METRICS_PORT: "metrics" }, /METRICS_PORT must be a whole number from 1 to 65535/],
		[{ LOG_FORMAT: "yaml" }, /LOG_FORMAT must be one of json, text; got "yaml"/],
		[{ CHANGE_FEED: "false" }, /CHANGE_FEED must be one of on, off; got "false"/],
		[{ CHANGE_FEED_REPLICAS: "6" }, /CHANGE_FEED_REPLICAS must be a whole number from 1 to 5; got "6"/],
		[{ CHANGE_FEED_REPLICAS: "0" }, /CHANGE_FEED_REPLICAS must be a whole number from 1 to 5; got "0"/],
		[{ NATS_ACCESS: "yes" }, /NATS_ACCESS must be one of on, off; got "yes"/],
		[{ TRACE_EXPORTER: "jaeger" }, /TRACE_EXPORTER must be one of zipkin, console; got "jaeger"/],
		[{ TRACE_EXPORTER: "zipkin" }, /TRACE_EXPORTER=zipkin needs ZIPKIN_URL/],
		[
			{ TRACE_EXPORTER: "zipkin", ZIPKIN_URL: "zipkin:9411" },
			/ZIPKIN_URL, Zipkin's base URL such as http:\/\/zipkin:9411; got "zipkin:9411"/,
		],
		[{ ZIPKIN_URL: "http://zipkin:9411" }, /ZIPKIN_URL is only read with TRACE_EXPORTER=zipkin/],
		[
			{ TRACE_EXPORTER: "console", NODE_ENV: "production" },
			/TRACE_EXPORTER=console prints text between the JSON log lines: use it with LOG_FORMAT=text/,
		],
	])("refuses %p with a clear message", (env, message) => {
		expect(() => readConfig(env)).toThrow(ConfigError);
		expect(() => readConfig(env)).toThrow(message);
	});
});

describe(".env.example", () => {
	/** The TypeScript files of the catalogue and its scripts, those of `dir` and below. */
	const sources = (dir: string): string[] =>
		readdirSync(dir, { recursive: true, encoding: "utf8" })
			.filter(file => file.endsWith(".ts"))
			.map(file => path.join(dir, file));

	test("names every environment variable the catalogue and its scripts read", () => {
		const files = ["lib", "services", "mixins", "middlewares", "scripts", "repl"].flatMap(sources).concat("moleculer.config.ts");
		const read = new Set(
			files.flatMap(file => [...readFileSync(file, "utf8").matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map(([, name]) => name)),
		);
		const listed = new Set([...readFileSync(".env.example", "utf8").matchAll(/^(?:# )?([A-Z][A-Z0-9_]+)=/gm)].map(([, name]) => name));
		expect(read).toContain("MAX_CONNECTIONS");
		expect([...read].filter(name => !listed.has(name))).toEqual([]);
	});
});
