import { ServiceBroker } from "moleculer";
import { config } from "../../lib/config/config";
import { loggerOptions } from "../../lib/observability/observability";
import { apiService } from "../../services/api.service";
import { gatewayApi } from "../support/catalogue";
import { waitFor } from "../support/process";

// The gateway's own log lines in JSON (docs/observability.md): one per request, and the log of
// a failure it answers 500, each with the request's id. A categories service that breaks on
// purpose stands in for the real one.

let broker: ServiceBroker;
const printed: string[] = [];

beforeAll(async () => {
	for (const stream of [process.stdout, process.stderr])
		jest.spyOn(stream, "write").mockImplementation(chunk => (printed.push(String(chunk).trimEnd()), true));
	broker = new ServiceBroker({ logger: loggerOptions({ logFormat: "json" }), logLevel: "info" });
	broker.createService(apiService({ ...config, port: 0 }));
	broker.createService({
		name: "categories",
		actions: {
			list: () => [],
			get: () => Promise.reject(new Error("disk on fire")),
		},
	});
	await broker.start();
});
afterAll(async () => {
	await broker.stop();
	jest.restoreAllMocks();
});

/** The JSON lines printed so far that carry `requestId`. */
const linesOf = (requestId: string) => printed.map(line => JSON.parse(line)).filter(line => line.requestId === requestId);

/** The line is printed once the answer is done, which the client may see a moment before the server does. */
const waitForLine = (requestId: string, count = 1) =>
	waitFor(`${count} line(s) carry ${requestId}`, async () => linesOf(requestId).length >= count);

test("every line the broker prints is one JSON object", () => {
	expect(printed.length).toBeGreaterThan(0);
	for (const line of printed) expect(() => JSON.parse(line)).not.toThrow();
});

test("a request ends with one info line: its id, method, URL, alias, status and time", async () => {
	const api = gatewayApi(broker);
	const answer = await api.send("GET", "/category", undefined, undefined, { "X-Request-ID": "abc-123" });
	expect(answer.headers.get("x-request-id")).toBe("abc-123");
	await waitForLine("abc-123");
	expect(linesOf("abc-123")).toEqual([
		expect.objectContaining({
			level: "info",
			mod: "api",
			method: "GET",
			url: "/category",
			path: "/category",
			status: 200,
			durationMs: expect.any(Number),
		}),
	]);
});

test("a request answered 500 is logged as an error with its id, then as a request", async () => {
	const api = gatewayApi(broker);
	expect((await api.send("GET", "/category/1", undefined, undefined, { "X-Request-ID": "failing-1" })).status).toBe(500);
	await waitForLine("failing-1", 2);
	const [failure, request] = linesOf("failing-1");
	expect(failure).toMatchObject({ level: "error", msg: expect.stringMatching(/^Request failed: .*disk on fire/s) });
	expect(request).toMatchObject({ level: "info", status: 500, path: "/category/:id" });
});
