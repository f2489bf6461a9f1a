import Redis from "ioredis";
import { ServiceBroker, type Middleware } from "moleculer";
import { cacherOptions } from "../../lib/cache/cache";
import brokerOptions from "../../moleculer.config";
import { actionCounter } from "../support/calls";
import { clusterMember, startCatalogue, type Api, type Catalogue } from "../support/catalogue";
import { waitFor } from "../support/process";
import { startRedis, type RedisServer } from "../support/redis";

// The catalogue over NATS sharing a Redis of this test's own, which the test stops and starts:
// a node that hears nothing of the writes serves nothing stale, a write never fails or hangs for
// its cache, and no read is stale across an outage (docs/caching.md).

let redis: RedisServer;
let catalogue: Catalogue;
let api: Api;

/** While set, the gateway's and the games node's events wait here: they hear of nothing. */
let heldNews: (() => void)[] | null = null;
const holdNews: Middleware = {
	localEvent(next, event) {
		return function (this: unknown, ctx) {
			const deaf = /^(api|games)-/.test(ctx.broker.nodeID) && !String(event.name).startsWith("$");
			if (heldNews && deaf && ctx.nodeID !== ctx.broker.nodeID)
				return new Promise(resolve => heldNews!.push(() => resolve(next.call(this, ctx))));
			return next.call(this, ctx);
		};
	},
};
/** How many times each action ran, on any node. */
const runs = actionCounter();

beforeAll(async () => {
	redis = await startRedis();
	process.env.CATALOGUE_TEST_REDIS = redis.url;
	catalogue = await startCatalogue({ topology: "nats", middlewares: [holdNews, runs.middleware] });
	api = catalogue.api;
});
afterAll(async () => {
	await catalogue?.stop();
	await redis?.stop();
});

const connected = () => catalogue.brokers.every(broker => broker.cacher?.connected === true);
/** The name of the author of the game titled `title`, as GET /game lists it. */
const authorOf = async (title: string): Promise<string> =>
	(await api.get("/game")).body.find((game: { title: string }) => game.title === title).author.name;

test("a gateway and a games node that hear of no write read every write at once: the generations come from Redis", async () => {
	const author = await api.author("Uwe Rosenberg", "German");
	const category = await api.category("Farming");
	await api.game("Agricola", category, author);
	expect(await authorOf("Agricola")).toBe("Uwe Rosenberg");
	heldNews = [];
	try {
		expect((await api.put(`/author/${author.id}`, { name: "U. Rosenberg", nationality: "German" })).status).toBe(200);
		expect(await authorOf("Agricola")).toBe("U. Rosenberg");
		expect((await api.put(`/category/${category.id}`, { name: "Farms" })).status).toBe(200);
		expect((await api.get("/game")).body.find((game: { title: string }) => game.title === "Agricola").category.name).toBe("Farms");
		expect((await api.get("/author")).body).toContainEqual({ id: author.id, name: "U. Rosenberg", nationality: "German" });
	} finally {
		const held = heldNews ?? [];
		heldNews = null;
		held.forEach(release => release());
	}
});

test("writes answer at once while Redis is down and after it comes back empty; no read is stale", async () => {
	const author = await api.author("Reiner Knizia", "German");
	const category = await api.category("Strategy");
	await api.game("Tigris & Euphrates", category, author);
	expect(await authorOf("Tigris & Euphrates")).toBe("Reiner Knizia");

	await redis.stop();
	await waitFor("every node notices Redis is gone", async () => !connected(), [], 15_000);
	const started = Date.now();
	expect((await api.put(`/author/${author.id}`, { name: "R. Knizia", nationality: "German" })).status).toBe(200);
	expect(Date.now() - started).toBeLessThan(2000);
	expect(await authorOf("Tigris & Euphrates")).toBe("R. Knizia");

	// Back, empty: its counter restarts below the generations the nodes have seen.
	await redis.start();
	await waitFor("every node reconnects to Redis", async () => connected(), [], 15_000);
	expect(await authorOf("Tigris & Euphrates")).toBe("R. Knizia");
	expect((await api.put(`/author/${author.id}`, { name: "Dr. Reiner Knizia", nationality: "German" })).status).toBe(200);
	expect(await authorOf("Tigris & Euphrates")).toBe("Dr. Reiner Knizia");
	expect(await authorOf("Tigris & Euphrates")).toBe("Dr. Reiner Knizia");
}, 60_000);

test("a write that Redis does not take in time answers within a second, and the nodes it tells keep off the old answers", async () => {
	const { id } = (await api.get("/author")).body.find((author: { name: string }) => author.name === "Dr. Reiner Knizia");
	expect((await api.get("/game")).status).toBe(200);
	// Redis holds every client's commands for 3 s: it is reachable, but late.
	const admin = new Redis(redis.url);
	await admin.call("CLIENT", "PAUSE", "3000", "WRITE");
	await admin.quit();
	const started = Date.now();
	expect((await api.put(`/author/${id}`, { name: "Knizia the Late", nationality: "German" })).status).toBe(200);
	expect(Date.now() - started).toBeLessThan(2500);
	expect(await authorOf("Tigris & Euphrates")).toBe("Knizia the Late");
}, 30_000);

test("a node without catalogue services (as `npm run repl` starts one) reads through the shared cache, and nothing stale", async () => {
	const repl = new ServiceBroker({
		...brokerOptions,
		// As the REPL joins a cluster whose NATS has the access rules (docs/security.md, "The broker").
		...clusterMember(catalogue.nats!, "repl", `repl.test-${process.pid}`),
		namespace: catalogue.namespace,
		cacher: cacherOptions({ mongoUri: null, redisUrl: redis.url, transporter: catalogue.nats!.url, cacheMaxBytes: 0 }),
		logger: false,
	});
	await repl.start();
	try {
		await repl.waitForServices(["authors"], 10_000);
		const author = await api.author("Vital Lacerda", "Portuguese");
		const names = async () => (await repl.call<{ name: string }[]>("authors.list")).map(each => each.name);
		expect(await names()).toContain("Vital Lacerda");
		runs.calls.clear();
		expect(await names()).toContain("Vital Lacerda");
		expect(runs.calls.get("authors.list")).toBeUndefined();
		expect((await api.put(`/author/${author.id}`, { name: "V. Lacerda", nationality: "Portuguese" })).status).toBe(200);
		expect(await names()).toContain("V. Lacerda");
		expect(await names()).not.toContain("Vital Lacerda");
	} finally {
		await repl.stop();
	}
});
