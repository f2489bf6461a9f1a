import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ServiceBroker } from "moleculer";
import { texts } from "../../lib/catalogue/errors";
import { config } from "../../lib/config/config";
import { loggerOptions } from "../../lib/observability/observability";
import { writeAudit } from "../../middlewares/write-audit.middleware";
import { apiService } from "../../services/api.service";
import { gatewayApi } from "../support/catalogue";
import { waitFor } from "../support/process";

// The gateway's own log lines in JSON (docs/observability.md): one per request, and the log of
// a failure it answers 500, each with the request's id. A categories service that breaks on
// purpose stands in for the real one. Writes need API_TOKEN here: who sent one is in its line, and
// in the line the data service writes (middlewares/write-audit.middleware.ts).

const TOKEN = "access-log-token-0123456789";

let broker: ServiceBroker;
const printed: string[] = [];

beforeAll(async () => {
	for (const stream of [process.stdout, process.stderr])
		jest.spyOn(stream, "write").mockImplementation(chunk => (printed.push(String(chunk).trimEnd()), true));
	broker = new ServiceBroker({ logger: loggerOptions({ logFormat: "json" }), logLevel: "info", middlewares: [writeAudit] });
	broker.createService(apiService({ ...config, port: 0, apiToken: TOKEN }));
	broker.createService({
		name: "categories",
		actions: {
			list: () => [],
			create: () => ({ category: { id: "c1", name: "Eurogames" } }),
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

test("a secret sent in the query string is logged as ***, the other parameters as sent", async () => {
	const api = gatewayApi(broker);
	const url = `/category?name=Euro&access_token=${TOKEN}&api%5Fkey=${TOKEN}&code=42&kinds=game`;
	await api.send("GET", url, undefined, undefined, { "X-Request-ID": "query-1" });
	await waitForLine("query-1");
	expect(linesOf("query-1")).toEqual([
		expect.objectContaining({ url: "/category?name=Euro&access_token=***&api%5Fkey=***&code=***&kinds=game" }),
	]);
	expect(printed.join("\n")).not.toContain(`=${TOKEN}`);
});

test("a write names its sender: in the gateway's line, and in the line of the service that made the change", async () => {
	const api = gatewayApi(broker);
	const headers = { "X-Request-ID": "write-1", Authorization: `Bearer ${TOKEN}` };
	expect((await api.send("PUT", "/category", { name: "Eurogames" }, undefined, headers)).status).toBe(200);
	await waitForLine("write-1", 2);
	expect(linesOf("write-1")).toEqual(
		expect.arrayContaining([
			expect.objectContaining({
				mod: "categories",
				user: "api-token",
				via: "api-token",
				id: "c1",
				msg: "categories.create by api-token",
			}),
			expect.objectContaining({ mod: "api", method: "PUT", status: 200, user: "api-token", via: "api-token" }),
		]),
	);
	// A read needs no sender: its line names none.
	await api.send("GET", "/category", undefined, undefined, { "X-Request-ID": "read-1", Authorization: `Bearer ${TOKEN}` });
	await waitForLine("read-1");
	expect(linesOf("read-1")[0].user).toBeUndefined();
});

test("a request answered 500 is logged as an error with its id, then as a request", async () => {
	const api = gatewayApi(broker);
	expect((await api.send("GET", "/category/1", undefined, undefined, { "X-Request-ID": "failing-1" })).status).toBe(500);
	await waitForLine("failing-1", 2);
	const [failure, request] = linesOf("failing-1");
	expect(failure).toMatchObject({ level: "error", msg: expect.stringMatching(/^Request failed: .*disk on fire/s) });
	expect(request).toMatchObject({ level: "info", status: 500, path: "/category/:id" });
});

test("a failure after the answer began is logged with the request's id and the answer cut off, not thrown", async () => {
	const api = broker.getLocalService("api");
	const { onError } = api.settings as { onError: (req: IncomingMessage, res: ServerResponse, err: Error) => void };
	let thrown: unknown;
	const server = createServer((req, res) => {
		req.headers["x-request-id"] = "mid-file-1";
		res.writeHead(200, { "Content-Type": "text/css" });
		res.write("body { ");
		try {
			onError.call(api, req, res, new Error("EIO: the file failed while it was read"));
		} catch (err) {
			thrown = err;
			res.destroy();
		}
	});
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	try {
		const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/docs/swagger-ui.css`;
		await expect(fetch(url).then(answer => answer.text())).rejects.toThrow();
		expect(thrown).toBeUndefined();
		expect(linesOf("mid-file-1")).toEqual([
			expect.objectContaining({ level: "error", msg: expect.stringMatching(/^Request failed after its answer began: .*EIO/s) }),
		]);
	} finally {
		server.close();
	}
});

test("refusals are one warning per kind a while, without a stack: 30 writes without the token, 30 reads of a service not running", async () => {
	const api = gatewayApi(broker);
	const ids = (prefix: string) => Array.from({ length: 30 }, (_, index) => `${prefix}-${index}`);
	const send = (method: string, path: string, id: string) =>
		api.send(method, path, method === "PUT" ? { name: "Eurogames" } : undefined, undefined, { "X-Request-ID": id });
	const statuses = [
		...(await Promise.all(ids("no-token").map(id => send("PUT", "/category", id)))),
		// No authors service runs here: 503.
		...(await Promise.all(ids("no-service").map(id => send("GET", "/author", id)))),
	].map(answer => answer.status);
	expect(new Set(statuses)).toEqual(new Set([401, 503]));
	await waitForLine("no-service-29");
	const lines = [...ids("no-token"), ...ids("no-service")].flatMap(linesOf).filter(line => line.level !== "info");
	expect(lines).toEqual([
		expect.objectContaining({ level: "warn", msg: `Refused: 401 ${texts.tokenRequired}: calling categories.create` }),
		expect.objectContaining({ level: "warn", msg: `Refused: 503 ${texts.unavailable}: Service unavailable, calling authors.list` }),
	]);
	for (const line of lines) expect(line.msg).not.toMatch(/\n\s+at /);
	// moleculer-web's own "Request error!" line with its stack is not written either.
	expect(printed.filter(line => line.includes("Request error"))).toEqual([]);
});
