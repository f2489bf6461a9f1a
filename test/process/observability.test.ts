import { createServer, type Server } from "node:http";
import { zipkinTraceId } from "../../lib/observability/observability";
import { startCluster, type Cluster } from "../support/cluster";
import { freePort, startProcess, waitFor, type RunningCatalogue } from "../support/process";

// The built service as `npm start` runs it, with logs, metrics and tracing chosen from the
// environment (docs/observability.md). LOGLEVEL=info: the request lines are info.

const withId = (node: RunningCatalogue, path: string, id: string) =>
	node.api.send("GET", path, undefined, undefined, { "X-Request-ID": id });
const lines = (node: RunningCatalogue) =>
	node
		.output()
		.split("\n")
		.filter(line => line.trim() !== "");

describe("NODE_ENV=production with METRICS_PORT", () => {
	let node: RunningCatalogue;
	let metricsPort: number;

	beforeAll(async () => {
		metricsPort = await freePort();
		node = await startProcess({ NODE_ENV: "production", LOGLEVEL: "info", METRICS_PORT: String(metricsPort) });
	});
	afterAll(() => node?.stop());

	test("every line printed is one JSON object; a request sent with X-Request-ID: abc-123 logs a line carrying it", async () => {
		expect((await withId(node, "/category", "abc-123")).status).toBe(200);
		const carrying = () => lines(node).filter(line => line.includes("abc-123"));
		await waitFor("a line carries abc-123", async () => carrying().length > 0, [node]);
		for (const line of lines(node)) expect(() => JSON.parse(line)).not.toThrow();
		expect(carrying().map(line => JSON.parse(line))).toEqual([
			expect.objectContaining({ requestId: "abc-123", level: "info", method: "GET", url: "/category", status: 200 }),
		]);
	});

	test("Prometheus reads the node at METRICS_PORT/metrics", async () => {
		const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
		expect(response.status).toBe(200);
		// startProcess asked GET /category until it answered.
		expect(await response.text()).toMatch(/^moleculer_request_total\{.*action="categories\.list".*\} [1-9]\d*$/m);
	});
});

test("LOG_FORMAT=text in production: readable lines, not JSON, the request id among them", async () => {
	const node = await startProcess({ NODE_ENV: "production", LOG_FORMAT: "text", LOGLEVEL: "info" });
	try {
		await withId(node, "/category", "abc-123");
		await waitFor("a line carries abc-123", async () => node.output().includes("abc-123"), [node]);
		const json = lines(node).filter(line => line.startsWith("{"));
		expect(json).toEqual([]);
		expect(node.output()).toMatch(
			/INFO .*API: requestId=abc-123 method=GET url=\/category path=\/category status=200 durationMs=[\d.]+ request answered$/m,
		);
	} finally {
		await node.stop();
	}
});

test("a standard output whose reader has gone (EPIPE): the node goes on serving, says so once on standard error, and stops cleanly", async () => {
	const node = await startProcess({ LOGLEVEL: "info" });
	try {
		node.child.stdout!.destroy();
		// Each request logs an info line to the closed pipe.
		for (let i = 0; i < 5; i++) expect((await node.api.get("/category")).status).toBe(200);
		const said = "The standard output failed (EPIPE): its log lines are dropped from now on.";
		await waitFor("the node says its output failed", async () => node.output().includes(said), [node]);
		expect(node.output().split(said)).toHaveLength(2);
		expect(node.child.exitCode).toBeNull();
	} finally {
		expect(await node.stop()).toBe(0);
	}
});

/** What moleculer's Zipkin exporter sends: the fields these tests read. */
interface Span {
	traceId: string;
	localEndpoint: { serviceName: string };
	tags: Record<string, string>;
}

describe("TRACE_EXPORTER=zipkin across four processes over NATS", () => {
	const spans: Span[] = [];
	let receiver: Server;
	let cluster: Cluster;

	beforeAll(async () => {
		// A stand-in for Zipkin: it keeps every span POSTed to /api/v2/spans.
		receiver = createServer((req, res) => {
			let body = "";
			req.on("data", chunk => (body += chunk));
			req.on("end", () => {
				if (req.url === "/api/v2/spans") spans.push(...(JSON.parse(body) as Span[]));
				res.writeHead(202).end();
			});
		});
		const port = await freePort();
		await new Promise<void>(resolve => receiver.listen(port, "127.0.0.1", resolve));
		cluster = await startCluster({ env: { TRACE_EXPORTER: "zipkin", ZIPKIN_URL: `http://127.0.0.1:${port}` } });
	}, 45_000);
	afterAll(async () => {
		await cluster?.stop();
		await new Promise(resolve => receiver?.close(resolve));
	});

	test("the spans of one request, from every service it reached, share its id as their trace id", async () => {
		const category = await cluster.api.category("Strategy");
		const author = await cluster.api.author("Uwe Rosenberg", "German");
		await cluster.api.game("Agricola", category, author, 12);
		expect((await cluster.api.send("GET", "/game", undefined, undefined, { "X-Request-ID": "abc-123" })).status).toBe(200);

		const ofRequest = () => spans.filter(span => span.tags.requestID === "abc-123");
		const services = () => new Set(ofRequest().map(span => span.localEndpoint.serviceName));
		// moleculer's Zipkin exporter sends what it has every 5 seconds.
		await waitFor(
			"spans from api, games, categories and authors",
			async () => services().size === 4,
			[...cluster.nodes.values()],
			20_000,
		);
		expect([...services()].sort()).toEqual(["api", "authors", "categories", "games"]);
		expect(new Set(ofRequest().map(span => span.traceId))).toEqual(new Set([zipkinTraceId("abc-123")]));
	}, 30_000);
});
