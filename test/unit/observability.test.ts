import type { IncomingMessage, ServerResponse } from "node:http";
import { format } from "node:util";
import { MetricReporters, ServiceBroker, TracerExporters, type BrokerOptions } from "moleculer";
import { config } from "../../lib/config/config";
import { accessEntry } from "../../lib/http/access-log";
import {
	jsonLogLine,
	loggerOptions,
	metricsOptions,
	textFields,
	tracingOptions,
	zipkinTraceId,
} from "../../lib/observability/observability";
import { apiService } from "../../services/api.service";
import { gatewayApi } from "../support/catalogue";
import { waitFor } from "../support/process";

describe("broker options from the configuration", () => {
	test("metrics: Prometheus on METRICS_PORT at /metrics, or nothing", () => {
		const metrics = metricsOptions({ metricsPort: 3030 }) as unknown as {
			enabled: boolean;
			reporter: InstanceType<typeof MetricReporters.Prometheus>;
		};
		expect(metrics.enabled).toBe(true);
		expect(metrics.reporter).toBeInstanceOf(MetricReporters.Prometheus);
		expect(metrics.reporter.opts).toMatchObject({ port: 3030, path: "/metrics" });
		expect(metricsOptions({ metricsPort: null })).toBeUndefined();
	});

	test("logs: moleculer's console format, with JSON lines for json and its own text otherwise", () => {
		expect(loggerOptions({ logFormat: "json" })).toEqual({ type: "Stream", options: { colors: false, formatter: jsonLogLine } });
		expect(loggerOptions({ logFormat: "text" })).toEqual({ type: "Stream", options: { objectPrinter: textFields } });
	});

	test("text lines print a plain object's fields as key=value, quoting values with spaces; anything else as util.inspect", () => {
		expect(textFields({ requestId: "abc-123", url: "/game?title=a b", status: 200, gone: undefined })).toBe(
			'requestId=abc-123 url="/game?title=a b" status=200',
		);
		expect(textFields([1, 2])).toBe("[ 1, 2 ]");
	});

	test("tracing: off, the console, or Zipkin at ZIPKIN_URL", () => {
		expect(tracingOptions({ tracing: null })).toBeUndefined();
		const zipkin = tracingOptions({ tracing: { exporter: "zipkin", url: "http://zipkin:9411" } }) as unknown as {
			exporter: { opts: { baseURL: string } };
		};
		expect(zipkin.exporter.opts.baseURL).toBe("http://zipkin:9411");
		const printing = tracingOptions({ tracing: { exporter: "console" } }) as { enabled: boolean; exporter: object };
		expect(printing.enabled).toBe(true);
		expect(printing.exporter).toBeInstanceOf(TracerExporters.Console);
	});

	test("every action's span names the request's sender (ctx.meta.user) beside its params", async () => {
		const spans: { name: string; tags: { params?: unknown; meta?: unknown } }[] = [];
		const broker = new ServiceBroker({
			logger: false,
			tracing: {
				...(tracingOptions({ tracing: { exporter: "console" } }) as object),
				exporter: { type: "Event", options: { interval: 0 } },
			},
		});
		broker.createService({ name: "categories", actions: { remove: () => 1 } });
		broker.createService({
			name: "spans",
			events: {
				"$tracing.spans": (ctx: { params: typeof spans }) => {
					spans.push(...ctx.params);
				},
			},
		});
		await broker.start();
		try {
			const user = { sub: "alice", via: "identity-provider", mayWrite: true };
			await broker.call("categories.remove", { id: "c1" }, { meta: { user, $statusCode: 200 } });
			await new Promise(resolve => setTimeout(resolve, 50));
			const span = spans.find(each => each.name === "action 'categories.remove'");
			expect(span?.tags).toMatchObject({ params: { id: "c1" }, meta: { user } });
			expect(span?.tags.meta).toEqual({ user });
		} finally {
			await broker.stop();
		}
	});

	test("a broker takes the Zipkin exporter and gives its spans Zipkin's ids", async () => {
		const broker = new ServiceBroker({
			logger: false,
			tracing: tracingOptions({ tracing: { exporter: "zipkin", url: "http://127.0.0.1:9" } }),
		});
		const [exporter] = (broker.tracer as unknown as { exporter: { convertID(id: string): string }[] }).exporter;
		expect(exporter.convertID("abc-123")).toBe(zipkinTraceId("abc-123"));
		await broker.stop();
	});
});

describe("a request's spans: its id is their trace id (docs/observability.md)", () => {
	type Span = { name: string; traceID: string; tags: { requestID?: string; params?: unknown } };
	const spans: Span[] = [];
	const printed: string[] = [];
	let broker: ServiceBroker;

	beforeAll(async () => {
		// The console exporter as TRACE_EXPORTER=console makes it, and moleculer's Event exporter to read the spans themselves.
		const { exporter: printer, ...options } = tracingOptions({ tracing: { exporter: "console" } }) as { exporter: object };
		jest.spyOn(printer as { log(...args: unknown[]): void }, "log").mockImplementation((...args) => void printed.push(format(...args)));
		broker = new ServiceBroker({
			logger: false,
			tracing: { ...options, exporter: [printer, { type: "Event", options: { interval: 0 } }] } as BrokerOptions["tracing"],
		});
		broker.createService(apiService({ ...config, port: 0 }));
		// A read that reaches a second service, as GET /game reaches categories and authors.
		broker.createService({ name: "categories", actions: { list: ctx => ctx.call("authors.list") } });
		broker.createService({ name: "authors", actions: { list: () => [] } });
		broker.createService({
			name: "spans",
			events: {
				"$tracing.spans": (ctx: { params: Span[] }) => {
					spans.push(...ctx.params);
				},
			},
		});
		await broker.start();
	});
	afterAll(async () => {
		await broker.stop();
		jest.restoreAllMocks();
	});

	/** The spans of the request answered with `requestId`, once its last one has been exported. */
	async function spansOf(requestId: string): Promise<Span[]> {
		await waitFor(`the spans of ${requestId}`, async () =>
			spans.some(span => span.tags.requestID === requestId && span.name.startsWith("GET")),
		);
		return spans.filter(span => span.tags.requestID === requestId);
	}

	test("X-Request-ID is the trace id of every span of the request, the gateway's and each service's", async () => {
		const answer = await gatewayApi(broker).send("GET", "/category", undefined, undefined, { "X-Request-ID": "trace-me-1" });
		expect(answer.status).toBe(200);
		const ofRequest = await spansOf("trace-me-1");
		expect(ofRequest.map(span => span.name).sort()).toEqual(["GET /category", "action 'authors.list'", "action 'categories.list'"]);
		expect(new Set(ofRequest.map(span => span.traceID))).toEqual(new Set(["trace-me-1"]));
	});

	test("without X-Request-ID, the id the gateway gives the request and answers is the trace id", async () => {
		const answer = await gatewayApi(broker).get("/category");
		const requestId = answer.headers.get("x-request-id")!;
		expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
		const ofRequest = await spansOf(requestId);
		expect(ofRequest.map(span => span.name)).toContain("action 'authors.list'");
		expect(new Set(ofRequest.map(span => span.traceID))).toEqual(new Set([requestId]));
	});

	test("a secret in the query reaches no span: the request's span is named by method and path, its URL tag masked as the log's", async () => {
		const secret = "s3cret-token-value";
		const answer = await gatewayApi(broker).send("GET", `/category?access_token=${secret}&page=1`, undefined, undefined, {
			"X-Request-ID": "trace-me-secret",
		});
		expect(answer.status).toBe(200);
		const ofRequest = await spansOf("trace-me-secret");
		expect(JSON.stringify(ofRequest)).not.toContain(secret);
		const request = ofRequest.find(span => span.name.startsWith("GET"))!;
		expect(request.name).toBe("GET /category");
		expect(request.tags).toMatchObject({ params: { req: { method: "GET", url: "/category?access_token=***&page=1" } } });
	});

	test("TRACE_EXPORTER=console heads each request's tree with its trace id, the request id", async () => {
		await gatewayApi(broker).send("GET", "/category", undefined, undefined, { "X-Request-ID": "trace-me-2" });
		await spansOf("trace-me-2");
		const lines = printed.map(line => line.replace(/\u001b\[[0-9;]*m/g, ""));
		const heading = lines.findIndex(line => /\bID: trace-me-2\b/.test(line));
		expect(heading).toBeGreaterThanOrEqual(0);
		expect(lines.slice(heading, heading + 6).join("\n")).toMatch(
			/GET \/category[\s\S]*action 'categories\.list'[\s\S]*action 'authors\.list'/,
		);
	});
});

describe("the Stream logger", () => {
	afterEach(() => jest.restoreAllMocks());

	/** What a broker with `logger` prints for an info line with fields and a warning, per stream. */
	function printed(logger: BrokerOptions["logger"]) {
		const lines: string[] = [];
		const written = (stream: string) => (chunk: unknown) => (lines.push(`${stream} ${String(chunk).replace(/\n$/, "")}`), true);
		jest.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(`console.log ${format(...args)}`));
		jest.spyOn(console, "warn").mockImplementation((...args: unknown[]) => void lines.push(`console.warn ${format(...args)}`));
		jest.spyOn(process.stdout, "write").mockImplementation(written("stdout"));
		jest.spyOn(process.stderr, "write").mockImplementation(written("stderr"));
		const broker = new ServiceBroker({ nodeID: "node-1", logger, logLevel: "info" });
		const log = broker.getLogger("api");
		log.info({ requestId: "r-1", status: 200 }, "request answered");
		log.warn("slow", 12);
		log.debug("not printed");
		// The time is the only thing that differs from one line to the next.
		return lines.map(line => line.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/, "<time>"));
	}

	test.each(["text", "json"] as const)(
		"prints in %s exactly what moleculer's console logger prints, warnings to stderr, without console",
		logFormat => {
			const options = (loggerOptions({ logFormat }) as { options: object }).options;
			const ours = printed(loggerOptions({ logFormat }));
			const consoles = printed({ type: "Console", options });
			expect(ours).toEqual(consoles.map(line => line.replace(/^console\.log/, "stdout").replace(/^console\.warn/, "stderr")));
			expect(ours.slice(-2)).toEqual([
				expect.stringMatching(/^stdout .*request answered/),
				expect.stringMatching(/^stderr .*slow 12/),
			]);
		},
	);
});

test("the Stream logger writes every secret it was given as ***, whoever logs it", () => {
	const lines: string[] = [];
	jest.spyOn(process.stdout, "write").mockImplementation(chunk => (lines.push(String(chunk)), true));
	jest.spyOn(process.stderr, "write").mockImplementation(chunk => (lines.push(String(chunk)), true));
	try {
		const broker = new ServiceBroker({
			nodeID: "node-1",
			logger: loggerOptions({ logFormat: "text" }, ["Pa55-w0rd", "abc"]),
			// At debug an error is printed with its fields (below it, one line: test/unit/error-line.test.ts).
			logLevel: "debug",
		});
		broker.getLogger("cacher").error(Object.assign(new Error("WRONGPASS"), { command: { name: "auth", args: ["Pa55-w0rd"] } }));
		broker.getLogger("api").info("short secrets are left alone: abc");
	} finally {
		jest.restoreAllMocks();
	}
	const printed = lines.join("");
	expect(printed).toContain("args: [ '***' ]");
	expect(printed).not.toContain("Pa55-w0rd");
	expect(printed).toContain("short secrets are left alone: abc");
});

test.each(["json", "text"] as const)(
	"a secret holding quotes and a backslash is written *** in %s lines too, where it is escaped",
	logFormat => {
		const secret = 'pa"ss\\w0rd';
		const lines: string[] = [];
		jest.spyOn(process.stdout, "write").mockImplementation(chunk => (lines.push(String(chunk)), true));
		jest.spyOn(process.stderr, "write").mockImplementation(chunk => (lines.push(String(chunk)), true));
		try {
			const broker = new ServiceBroker({ nodeID: "node-1", logger: loggerOptions({ logFormat }, [secret]), logLevel: "info" });
			broker.getLogger("cacher").warn(`WRONGPASS AUTH ${secret}`, { cmd: `AUTH ${secret}` });
		} finally {
			jest.restoreAllMocks();
		}
		const printed = lines.join("");
		expect(printed).toContain("WRONGPASS AUTH ***");
		for (const written of [secret, JSON.stringify(secret).slice(1, -1), 'pa\\"ss']) expect(printed).not.toContain(written);
	},
);

describe("jsonLogLine", () => {
	const bindings = { nodeID: "node-1", ns: "", mod: "api", svc: "api" };
	const line = (args: unknown[]) => JSON.parse(jsonLogLine("info", args, bindings)[0]);

	test("one JSON object: time, level, the logger's bindings, and the message", () => {
		expect(line(["Broker started", 3, "services"])).toEqual({
			time: expect.any(String),
			level: "info",
			...bindings,
			msg: "Broker started 3 services",
		});
	});

	test("a plain object logged first gives its keys as fields", () => {
		expect(line([{ requestId: "abc-123", status: 200 }, "GET /game 200"])).toMatchObject({
			requestId: "abc-123",
			status: 200,
			msg: "GET /game 200",
		});
	});

	test("the logger's own keys win over a field of the same name", () => {
		expect(line([{ level: "fake", mod: "fake" }, "hello"])).toMatchObject({ level: "info", mod: "api" });
	});

	test("an Error is printed whole in msg, on one line", () => {
		const [text] = jsonLogLine("error", [new Error("disk unavailable")], bindings);
		expect(text).not.toContain("\n");
		expect(JSON.parse(text).msg).toMatch(/Error: disk unavailable\n\s+at /);
	});
});

describe("zipkinTraceId", () => {
	test("a hex id (a UUID) keeps its first 16 hex digits, as moleculer sends it", () => {
		expect(zipkinTraceId("0F8FAD5B-D9CB-469F-A165-70867728950E")).toBe("0f8fad5bd9cb469f");
	});

	test("any other id becomes 16 hex digits of its SHA-256, the same each time", () => {
		expect(zipkinTraceId("abc-123")).toMatch(/^[0-9a-f]{16}$/);
		expect(zipkinTraceId("abc-123")).toBe(zipkinTraceId("abc-123"));
		expect(zipkinTraceId("abc-123")).not.toBe(zipkinTraceId("abc-124"));
	});
});

describe("accessEntry", () => {
	const request = (more: object) =>
		({ method: "GET", url: "/game/catan", headers: { "x-request-id": "abc-123" }, ...more }) as unknown as IncomingMessage;
	const answer = (more: object = {}) =>
		({ statusCode: 200, headersSent: true, writableFinished: true, ...more }) as unknown as ServerResponse;

	test("the request's id, method, URL, alias, status and time", () => {
		const req = request({ originalUrl: "/game/catan?x=1", $alias: { fullPath: "/game/:id" } });
		expect(accessEntry(req, answer(), 3.14159)).toEqual({
			requestId: "abc-123",
			method: "GET",
			url: "/game/catan?x=1",
			path: "/game/:id",
			status: 200,
			durationMs: 3.142,
		});
	});

	test("a request no alias matched is under path 'none'; one the client left is marked aborted", () => {
		expect(accessEntry(request({}), answer({ statusCode: 404, writableFinished: false }), 1)).toMatchObject({
			path: "none",
			status: 404,
			aborted: true,
		});
	});

	test("a request the client left before any answer is 499, not the 200 Node holds until an answer is written", () => {
		expect(accessEntry(request({}), answer({ headersSent: false, writableFinished: false }), 1)).toMatchObject({
			status: 499,
			aborted: true,
		});
	});
});
