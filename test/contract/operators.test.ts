import type { Middleware, Service } from "moleculer";
import { startCatalogue, withBrokenStorage, type Api, type Catalogue } from "../support/catalogue";
import { waitFor } from "../support/process";

// What operators rely on through HTTP: the health paths and the request id (docs/http.md, "Health and request ids").

let catalogue: Catalogue;
let api: Api;

/** The request id each action ran with, on every node. */
const seen: { action: string; requestID: string | null }[] = [];
const recordRequestIds: Middleware = {
	localAction(next, action) {
		return function (this: Service, ctx) {
			seen.push({ action: String(action.name), requestID: ctx.requestID });
			return next.call(this, ctx);
		};
	},
};

beforeAll(async () => {
	catalogue = await startCatalogue({ middlewares: [recordRequestIds] });
	api = catalogue.api;
});
afterAll(() => catalogue.stop());

/** The answer of a health path, as the gateway gives it: the same as its node's HEALTH_PORT probe. */
const health = async (on: Api, path: string) => {
	const { status, body } = await on.get(path);
	return { status, body };
};

/** 503 while the gateway's node waits for `waitingFor`: a failure with `msg` that says what it waits for. */
const notReady = (nodeID: string, waitingFor: string[]) => ({
	status: 503,
	body: { status: "not ready", msg: "The service is temporarily unavailable", waitingFor, nodeID },
});

describe("GET /health/live and GET /health/ready", () => {
	test("live answers 200 { status: 'live' } with the gateway's node", async () => {
		expect(await health(api, "/health/live")).toEqual({ status: 200, body: { status: "live", nodeID: catalogue.broker.nodeID } });
	});

	test("ready answers 200 { status: 'ready' } once the gateway reaches authors, categories and games", async () => {
		expect(await health(api, "/health/ready")).toEqual({ status: 200, body: { status: "ready", nodeID: catalogue.broker.nodeID } });
	});

	test("ready answers 503 { status: 'not ready', msg, waitingFor } while the games store does not answer, 200 again once it does", async () => {
		const whileBroken = await withBrokenStorage(catalogue, ["games", "findOne"], () => health(api, "/health/ready"));
		expect(whileBroken).toEqual(notReady(catalogue.broker.nodeID, ["games"]));
		expect(await health(api, "/health/ready")).toEqual({ status: 200, body: { status: "ready", nodeID: catalogue.broker.nodeID } });
	});

	test("a 503 of ready carries no ETag: only a 200 is an answer to keep", async () => {
		const whileBroken = await withBrokenStorage(catalogue, ["games", "findOne"], () => api.get("/health/ready"));
		expect(whileBroken.status).toBe(503);
		expect(whileBroken.headers.get("etag")).toBeNull();
	});

	test("ready answers 503 once a service the gateway needs is gone; live still answers", async () => {
		const own = await startCatalogue();
		try {
			const host = own.brokers.find(broker => broker.getLocalService("games"))!;
			// Over NATS its node stops; in one broker the service alone goes.
			if (own.topology === "nats") await host.stop();
			else await host.destroyService(host.getLocalService("games"));
			await waitFor("the gateway notices games is gone", async () => (await own.api.get("/health/ready")).status === 503);
			expect(await health(own.api, "/health/ready")).toEqual(notReady(own.broker.nodeID, ["games"]));
			expect(await health(own.api, "/health/live")).toEqual({ status: 200, body: { status: "live", nodeID: own.broker.nodeID } });
		} finally {
			await own.stop();
		}
	});
});

describe("X-Request-ID", () => {
	const category = () => api.category(`Request ${seen.length}`);

	test("the id sent comes back, and every action the request ran on every node had it", async () => {
		const sent = `trace-${Date.now()}`;
		const author = await api.author("Alan R. Moon", "American");
		const cat = await category();
		seen.length = 0;
		const answer = await api.send("PUT", "/game", { title: "Ticket to Ride", age: 8, category: cat, author }, undefined, {
			"X-Request-ID": sent,
		});
		expect(answer.status).toBe(200);
		expect(answer.headers.get("x-request-id")).toBe(sent);
		const actions = seen.filter(call => call.requestID === sent).map(call => call.action);
		expect(actions).toEqual(expect.arrayContaining(["api.rest", "games.create", "categories.referable", "authors.referable"]));
		expect(seen.every(call => call.requestID === sent)).toBe(true);
	});

	test("without one, each request gets an id of its own, in the answer too", async () => {
		const [first, second] = [await api.get("/category"), await api.get("/category")];
		expect(first.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
		expect(second.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
	});

	test.each([
		["too long", "x".repeat(129)],
		["with spaces", "a b"],
		["with characters unsafe in logs", "id\u00e9;<script>"],
	])("one %s is replaced by an id of its own", async (_case, sent) => {
		const answer = await api.send("GET", "/category", undefined, undefined, { "X-Request-ID": sent });
		expect(answer.status).toBe(200);
		expect(answer.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
	});

	test("failures carry it too: a 400, a 404 and a refused body", async () => {
		for (const [method, path, body] of [
			["GET", "/author/unknown"],
			["GET", "/nowhere"],
			["PUT", "/author", "{"],
		] as const) {
			const answer = await api.send(method, path, undefined, body, { "X-Request-ID": "failing-1" });
			expect(answer.status).toBeGreaterThanOrEqual(400);
			expect(answer.headers.get("x-request-id")).toBe("failing-1");
		}
	});
});
