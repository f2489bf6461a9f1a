import { metricsOptions } from "../../lib/observability/observability";
import { startCatalogue, type Api, type Catalogue } from "../support/catalogue";
import { freePort, waitFor } from "../support/process";

// Prometheus metrics of the gateway's node (docs/observability.md). moleculer counts every call
// the gateway makes (caller "api"): in one broker they are local, over NATS remote, and each
// node also keeps its own registry and port. The gateway's alone sees every request, so it is
// the one scraped here; the HTTP route series come from lib/http/access-log.ts.

let catalogue: Catalogue;
let api: Api;
let metricsUrl: string;

beforeAll(async () => {
	const port = await freePort();
	catalogue = await startCatalogue({ gatewayBroker: { metrics: metricsOptions({ metricsPort: port }) } });
	api = catalogue.api;
	metricsUrl = `http://127.0.0.1:${port}/metrics`;
});
afterAll(() => catalogue.stop());

/** The samples of `name` in Prometheus' text format, with their labels. */
async function scrape(name: string): Promise<{ labels: Record<string, string>; value: number }[]> {
	const text = await (await fetch(metricsUrl)).text();
	return text
		.split("\n")
		.filter(line => line.startsWith(`${name}{`))
		.map(line => {
			const [, labels, value] = /^[^{]+\{(.*)\} (\S+)$/.exec(line)!;
			return {
				labels: Object.fromEntries([...labels.matchAll(/(\w+)="([^"]*)"/g)].map(([, key, label]) => [key, label])),
				value: Number(value),
			};
		});
}

/** The value of the one sample of `name` whose labels include `labels`; 0 when there is none. */
async function valueOf(name: string, labels: Record<string, string>): Promise<number> {
	const matching = (await scrape(name)).filter(sample => Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
	if (matching.length > 1) throw new Error(`${matching.length} samples of ${name} match ${JSON.stringify(labels)}`);
	return matching[0]?.value ?? 0;
}

describe("GET /metrics on METRICS_PORT, after a create, two lists, a 400 and an unknown id", () => {
	beforeAll(async () => {
		expect((await api.put("/category", { name: "Eurogames" })).status).toBe(200);
		expect((await api.get("/game")).status).toBe(200);
		expect((await api.get("/game")).status).toBe(200);
		expect(await api.put("/category", { name: "" })).toMatchObject({ status: 400 });
		expect(await api.get("/category/nope")).toMatchObject({ status: 400, body: { msg: "There is no category with that Id" } });
	});

	const call = (action: string) => ({ action, caller: "api", type: catalogue.topology === "nats" ? "remote" : "local" });

	test("per action: how many calls and how long they took", async () => {
		expect(await valueOf("moleculer_request_total", call("games.list"))).toBe(2);
		expect(await valueOf("moleculer_request_time_count", call("games.list"))).toBe(2);
		expect(await valueOf("moleculer_request_time_bucket", { ...call("games.list"), le: "+Inf" })).toBe(2);
		expect(await valueOf("moleculer_request_total", call("categories.create"))).toBe(2);
		expect(await valueOf("moleculer_request_time_count", call("categories.get"))).toBe(1);
	});

	test("errors per action and type: the 400 is a validation error, the unknown id NOT_FOUND", async () => {
		expect(
			await valueOf("moleculer_request_error_total", {
				...call("categories.create"),
				errorName: "ValidationError",
				errorType: "VALIDATION_ERROR",
			}),
		).toBe(1);
		expect(await valueOf("moleculer_request_error_total", { ...call("categories.get"), errorType: "NOT_FOUND" })).toBe(1);
		expect(await valueOf("moleculer_request_error_total", call("games.list"))).toBe(0);
	});

	test("per HTTP route: requests by method, alias and status, and their times", async () => {
		// Counted when the answer is done, which the client may see a moment before the server does.
		await waitFor(
			"the gateway counted the five requests",
			async () => (await valueOf("catalogue_http_requests_total", { method: "GET", path: "/category/:id" })) === 1,
		);
		expect(await valueOf("catalogue_http_requests_total", { method: "GET", path: "/game", status: "200" })).toBe(2);
		expect(await valueOf("catalogue_http_requests_total", { method: "PUT", path: "/category", status: "200" })).toBe(1);
		expect(await valueOf("catalogue_http_requests_total", { method: "PUT", path: "/category", status: "400" })).toBe(1);
		expect(await valueOf("catalogue_http_requests_total", { method: "GET", path: "/category/:id", status: "400" })).toBe(1);
		expect(await valueOf("catalogue_http_request_time_count", { method: "GET", path: "/game", status: "200" })).toBe(2);
	});

	test("a path no alias matches is counted under path 'none', not under its URL", async () => {
		expect((await api.get("/nowhere")).status).toBe(404);
		await waitFor(
			"the 404 is counted",
			async () => (await valueOf("catalogue_http_requests_total", { method: "GET", path: "none", status: "404" })) === 1,
		);
		expect((await scrape("catalogue_http_requests_total")).some(sample => sample.labels.path === "/nowhere")).toBe(false);
	});
});
