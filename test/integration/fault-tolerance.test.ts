import type { Server } from "node:http";
import { Errors, type Middleware, type Service } from "moleculer";
import brokerOptions from "../../moleculer.config";
import { drainGateway } from "../../middlewares/drain.middleware";
import { forgetCachedAnswers, startCatalogue, stillPending, type Api, type Catalogue, type Topology } from "../support/catalogue";
import { waitFor } from "../support/process";

// The fault-tolerance settings of moleculer.config.ts at work: a fault is staged by a middleware,
// and the gateway's answer is what a client gets. Retries and the circuit breaker act on calls
// between nodes, so they run on four brokers over NATS; the bulkhead and the graceful stop act on
// one node, so they run on one broker, where a busy test machine cannot make a node miss
// heartbeats and be taken for lost. A fault on the caller's
// side stands for the network or a lost node (what the caller's retries and circuit breaker see); on
// the callee's side, for a slow handler (what its bulkhead sees).

type Fault = (attempt: number) => Error | Promise<void> | undefined;
type Side = "caller" | "callee";

/** Stages faults for one action, counting how often it is reached on that side. */
class Faults {
	private staged = new Map<string, { fault: Fault; side: Side }>();
	readonly reached = new Map<string, number>();

	stage(action: string, fault: Fault, side: Side = "caller") {
		this.staged.set(action, { fault, side });
		this.reached.set(action, 0);
	}

	clear() {
		this.staged.clear();
		this.reached.clear();
	}

	private wrap(side: Side): NonNullable<Middleware["localAction"]> {
		// The handler below runs with the service as `this`; the faults are reached through this name.
		// eslint-disable-next-line @typescript-eslint/no-this-alias
		const faults = this;
		return (next, action) =>
			async function (this: Service, ctx) {
				const name = String(action.name);
				const staged = faults.staged.get(name);
				if (staged?.side === side) {
					const attempt = (faults.reached.get(name) ?? 0) + 1;
					faults.reached.set(name, attempt);
					const outcome = staged.fault(attempt);
					if (outcome instanceof Error) throw outcome;
					await outcome;
				}
				return next.call(this, ctx);
			};
	}

	readonly middleware: Middleware = { localAction: this.wrap("callee"), remoteAction: this.wrap("caller") };
}

const faults = new Faults();
const lost = (action: string) => new Errors.RequestRejectedError({ action, nodeID: "games" });
type GameBody = { title: string; age: number; category: { id: string }; author: { id: string } };
let catalogue: Catalogue;
let api: Api;
let game: GameBody;

/** A catalogue of the describe's own, laid out as `topology` says, with a category and an author. */
function catalogueFor(topology: Topology) {
	beforeAll(async () => {
		catalogue = await startCatalogue({ middlewares: [faults.middleware, drainGateway(5000)], topology });
		api = catalogue.api;
		const [category, author] = [await api.category("Euro"), await api.author()];
		game = { title: "Agricola", age: 12, category: { id: category.id }, author: { id: author.id } };
	});
	// Each test's reads reach the services, where its faults are staged, not the cache.
	afterEach(async () => {
		faults.clear();
		await forgetCachedAnswers(catalogue);
	});
	afterAll(() => catalogue.stop());
}

/** A promise that a fault holds calls on, and the function that lets them go. */
function held(): [Promise<void>, () => void] {
	let open!: () => void;
	return [new Promise<void>(resolve => (open = resolve)), () => open()];
}

describe("retries (four brokers over NATS)", () => {
	catalogueFor("nats");

	test("a read whose node was lost mid-call is sent again and answers 200", async () => {
		faults.stage("games.list", attempt => (attempt === 1 ? lost("games.list") : undefined));
		expect((await api.get("/game")).status).toBe(200);
		expect(faults.reached.get("games.list")).toBe(2);
	});

	test("a write whose node was lost mid-call is not repeated: 503, and it reached games once", async () => {
		faults.stage("games.create", () => lost("games.create"));
		expect(await api.put("/game", game)).toMatchObject({ status: 503, body: { msg: "The service is temporarily unavailable" } });
		expect(faults.reached.get("games.create")).toBe(1);
	});

	test("a read that timed out is not repeated: 504", async () => {
		faults.stage("games.list", () => new Errors.RequestTimeoutError({ action: "games.list", nodeID: "games" }));
		expect((await api.get("/game")).status).toBe(504);
		expect(faults.reached.get("games.list")).toBe(1);
	});
});

describe("circuit breaker (four brokers over NATS)", () => {
	catalogueFor("nats");
	const { minRequestCount = 20, halfOpenTime = 5000 } = brokerOptions.circuitBreaker ?? {};

	test("after repeated server failures the node is no longer called: 503 at once; it is tried again later", async () => {
		let failing = true;
		faults.stage("authors.list", () => (failing ? new Errors.MoleculerError("disk on fire", 500, "BROKEN") : undefined));
		for (let sent = 0; sent < minRequestCount; sent++) expect((await api.get("/author")).status).toBe(500);
		const reached = faults.reached.get("authors.list");
		expect(await api.get("/author")).toMatchObject({ status: 503, body: { msg: "The service is temporarily unavailable" } });
		expect(faults.reached.get("authors.list")).toBe(reached);
		failing = false;
		await waitFor(
			"the circuit half-opens and the node answers again",
			async () => (await api.get("/author")).status === 200,
			[],
			halfOpenTime + 5000,
		);
	}, 20_000);
});

describe("bulkhead (one broker)", () => {
	catalogueFor("one-broker");
	const { concurrency = 32, maxQueueSize = 128 } = brokerOptions.bulkhead ?? {};

	test("beyond the calls a node runs and queues, a call is refused at once with 503; the others are answered", async () => {
		const [opened, open] = held();
		faults.stage("games.list", () => opened, "callee");
		// Requests the gateway has taken in: each is running or queued from that moment on.
		const server = (catalogue.broker.getLocalService("api") as unknown as { server: Server }).server;
		let arrived = 0;
		const count = () => arrived++;
		server.on("request", count);
		try {
			// Each a list of its own: the same list asked at once is made once (docs/caching.md, "Made once").
			const waiting = Array.from({ length: concurrency + maxQueueSize }, (_, i) => api.get(`/game?title=g${i}`));
			// On a busy machine some requests may still be on their way: the one over the limit
			// must come after all of them, or it would be queued behind the held calls.
			const full = () => arrived === concurrency + maxQueueSize && faults.reached.get("games.list") === concurrency;
			await waitFor("the gateway has taken in every request and games runs as many as it may", async () => full());
			expect(await api.get("/game?title=over")).toMatchObject({
				status: 503,
				body: { msg: "The service is temporarily unavailable" },
			});
			open();
			expect((await Promise.all(waiting)).map(answer => answer.status)).toEqual(waiting.map(() => 200));
		} finally {
			server.off("request", count);
			open();
		}
	}, 30_000);
});

describe("graceful stop of the gateway's node (one broker)", () => {
	catalogueFor("one-broker");

	test("a request in flight when the node stops is answered 200; a new one is refused at connect", async () => {
		const [opened, open] = held();
		faults.stage("games.create", () => opened, "callee");
		try {
			const inFlight = api.put("/game", game);
			await waitFor("the create reaches games", async () => faults.reached.get("games.create") === 1);
			const stopping = catalogue.broker.stop();
			await waitFor("the gateway stops listening", async () => (await api.get("/game").catch(() => "refused")) === "refused");
			expect(await stillPending(inFlight)).toBe(true);
			open();
			expect(await inFlight).toMatchObject({ status: 200, body: { game: { title: "Agricola" } } });
			await stopping;
		} finally {
			open();
		}
	}, 30_000);
});
