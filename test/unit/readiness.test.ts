import { createServer } from "node:net";
import { ServiceBroker } from "moleculer";
import { texts, writesRefused } from "../../lib/catalogue/errors";
import { config } from "../../lib/config/config";
import { readinessProbe } from "../../middlewares/readiness.middleware";
import { apiService } from "../../services/api.service";
import { startNats, type NatsServer } from "../support/nats";
import { freePort } from "../support/process";

interface Probe {
	status: number;
	body: { status: string; nodeID: string; msg?: string; waitingFor?: string[] };
}

/** What the probe's `path` answers, or undefined while nothing listens on the port. */
async function probe(port: number, path = "/health/ready"): Promise<Probe | undefined> {
	try {
		const response = await fetch(`http://127.0.0.1:${port}${path}`);
		return { status: response.status, body: await response.json() };
	} catch {
		return undefined;
	}
}

/** Asks the probe until it answers `status`; fails with the last answer after `timeoutMs`. */
async function probeUntil(port: number, status: number, timeoutMs = 10_000): Promise<Probe> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const answer = await probe(port);
		if (answer?.status === status) return answer;
		if (Date.now() > deadline)
			throw new Error(`the probe did not answer ${status} within ${timeoutMs} ms; last: ${JSON.stringify(answer)}`);
		await new Promise(resolve => setTimeout(resolve, 50));
	}
}

/** Nothing listens on `port` any more: it can be bound again. */
function portIsFree(port: number): Promise<boolean> {
	return new Promise(resolve => {
		const server = createServer()
			.once("error", () => resolve(false))
			.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
	});
}

/** A promise and the function that settles it, so the test decides when a lifecycle step ends. */
function gate() {
	let open!: () => void;
	const opened = new Promise<void>(resolve => (open = resolve));
	return { open, opened };
}

describe("readiness probe of a node without a transporter", () => {
	test("503 while the services start, 200 ready with the nodeID once started, 503 while stopping, port released after", async () => {
		const port = await freePort();
		const starting = gate();
		const stopping = gate();
		const broker = new ServiceBroker({ nodeID: "probe-local", logger: false, middlewares: [readinessProbe(port)] });
		broker.createService({ name: "slow", started: () => starting.opened, stopped: () => stopping.opened });
		try {
			const started = broker.start();
			expect(await probeUntil(port, 503)).toEqual({
				status: 503,
				body: { status: "not ready", msg: texts.unavailable, waitingFor: ["node"], nodeID: "probe-local" },
			});
			expect(await probe(port, "/health/live")).toEqual({ status: 200, body: { status: "live", nodeID: "probe-local" } });
			starting.open();
			await started;
			expect(await probe(port)).toEqual({ status: 200, body: { status: "ready", nodeID: "probe-local" } });

			const stopped = broker.stop();
			expect((await probeUntil(port, 503)).body.status).toBe("not ready");
			stopping.open();
			await stopped;
			expect(await probe(port)).toBeUndefined();
			expect(await portIsFree(port)).toBe(true);
		} finally {
			starting.open();
			stopping.open();
			await broker.stop();
		}
	});
});

describe("health paths of the probe", () => {
	test("only GET and HEAD of /health/live and /health/ready are answered; anything else is 404 { msg }", async () => {
		const port = await freePort();
		const broker = new ServiceBroker({ nodeID: "probe-paths", logger: false, middlewares: [readinessProbe(port)] });
		await broker.start();
		try {
			expect(await probe(port, "/")).toEqual({ status: 404, body: { msg: "Not found", nodeID: "probe-paths" } });
			expect(await probe(port, "/health/ready?x=1")).toMatchObject({ status: 404 });
			const post = await fetch(`http://127.0.0.1:${port}/health/ready`, { method: "POST" });
			expect(post.status).toBe(404);
			const head = await fetch(`http://127.0.0.1:${port}/health/live`, { method: "HEAD" });
			expect({ status: head.status, body: await head.text() }).toEqual({ status: 200, body: "" });
		} finally {
			await broker.stop();
		}
	});
});

/** A catalogue service whose `ready` answers as mixins/db.mixin.ts's does: `check` throws what its store's failure would. */
const catalogueService = (name: string, check: () => void) => ({
	name,
	actions: {
		ready() {
			check();
			return { status: "ready" };
		},
	},
});

describe("readiness of a node with catalogue services", () => {
	test("503 with what it waits for: a service its own need (games needs categories) and a store that fails; 200 once all answer", async () => {
		const port = await freePort();
		const broker = new ServiceBroker({ nodeID: "probe-needs", logger: false, middlewares: [readinessProbe(port)] });
		let gamesStoreAnswers = false;
		const service = (name: string, answers: () => boolean) =>
			catalogueService(name, () => {
				if (!answers()) throw new Error("disk unavailable");
			});
		broker.createService(service("authors", () => true));
		broker.createService(service("games", () => gamesStoreAnswers));
		await broker.start();
		try {
			expect(await probe(port)).toEqual({
				status: 503,
				body: { status: "not ready", msg: texts.unavailable, waitingFor: ["categories", "games"], nodeID: "probe-needs" },
			});
			broker.createService(service("categories", () => true));
			await broker.waitForServices("categories", 5000);
			expect(await probe(port)).toEqual({
				status: 503,
				body: { status: "not ready", msg: texts.unavailable, waitingFor: ["games"], nodeID: "probe-needs" },
			});
			gamesStoreAnswers = true;
			expect(await probe(port)).toEqual({ status: 200, body: { status: "ready", nodeID: "probe-needs" } });
		} finally {
			await broker.stop();
		}
	});
});

describe("readiness of a node whose store refuses writes", () => {
	test("503 waiting for `games storage` while the games store answers reads but refuses writes (a full disk); 200 once it takes them", async () => {
		const port = await freePort();
		const broker = new ServiceBroker({ nodeID: "probe-full", logger: false, middlewares: [readinessProbe(port)] });
		let refused: string | undefined = "ENOSPC: no space left on device, write";
		for (const name of ["authors", "categories", "games"])
			broker.createService(
				catalogueService(name, () => {
					if (name === "games" && refused) throw writesRefused(refused);
				}),
			);
		await broker.start();
		try {
			expect(await probe(port)).toEqual({
				status: 503,
				body: { status: "not ready", msg: texts.unavailable, waitingFor: ["games storage"], nodeID: "probe-full" },
			});
			refused = undefined;
			expect(await probe(port)).toEqual({ status: 200, body: { status: "ready", nodeID: "probe-full" } });
		} finally {
			await broker.stop();
		}
	});
});

describe("the gateway's health paths", () => {
	test("answer exactly as the probe of the gateway's node does, 503 included", async () => {
		const [probePort, gatewayPort] = [await freePort(), await freePort()];
		const broker = new ServiceBroker({ nodeID: "probe-gateway", logger: false, middlewares: [readinessProbe(probePort)] });
		let gamesStoreAnswers = false;
		for (const name of ["authors", "categories", "games"])
			broker.createService({
				name,
				actions: {
					ready: () =>
						name !== "games" || gamesStoreAnswers ? { status: "ready" } : Promise.reject(new Error("disk unavailable")),
				},
			});
		broker.createService(apiService({ ...config, port: gatewayPort }));
		await broker.start();
		const both = async (path: string) => [await probe(probePort, path), await probe(gatewayPort, path)];
		try {
			const notReady = {
				status: 503,
				body: { status: "not ready", msg: texts.unavailable, waitingFor: ["games"], nodeID: "probe-gateway" },
			};
			expect(await both("/health/ready")).toEqual([notReady, notReady]);
			const live = { status: 200, body: { status: "live", nodeID: "probe-gateway" } };
			expect(await both("/health/live")).toEqual([live, live]);
			gamesStoreAnswers = true;
			const ready = { status: 200, body: { status: "ready", nodeID: "probe-gateway" } };
			expect(await both("/health/ready")).toEqual([ready, ready]);
		} finally {
			await broker.stop();
		}
	});
});

describe("readiness probe of a node in a cluster", () => {
	let nats: NatsServer;
	let port: number;
	let node: ServiceBroker;
	// Another node of the cluster: its calls show when the probed node is reachable over NATS.
	let peer: ServiceBroker;

	beforeAll(async () => {
		nats = await startNats();
		port = await freePort();
		const cluster = { transporter: { type: "NATS", options: { url: nats.url } }, logger: false } as const;
		node = new ServiceBroker({ ...cluster, nodeID: "probe-cluster", middlewares: [readinessProbe(port)] });
		node.createService({ name: "echo", actions: { hello: () => "hello" } });
		peer = new ServiceBroker({ ...cluster, nodeID: "probe-peer" });
		await Promise.all([node.start(), peer.start()]);
		await peer.waitForServices("echo", 10_000);
	});

	afterAll(async () => {
		await Promise.all([node?.stop(), peer?.stop()]);
		await nats?.stop();
	});

	/** Calls the probed node from its peer until a call gets through (bounded). */
	async function reachableOverNats(timeoutMs = 20_000): Promise<void> {
		const deadline = Date.now() + timeoutMs;
		while (
			!(await peer.call("echo.hello", {}, { nodeID: "probe-cluster", timeout: 1000 }).then(
				() => true,
				() => false,
			))
		) {
			if (Date.now() > deadline) throw new Error(`probe-cluster was not reachable over NATS within ${timeoutMs} ms`);
			await new Promise(resolve => setTimeout(resolve, 100));
		}
	}

	test("200 ready once started and connected to NATS", async () => {
		expect(await probe(port)).toEqual({ status: 200, body: { status: "ready", nodeID: "probe-cluster" } });
	});

	test("503 while the NATS server is down, 200 again once the node has reconnected", async () => {
		await nats.stop();
		try {
			expect(await probeUntil(port, 503, 5000)).toEqual({
				status: 503,
				body: { status: "not ready", msg: texts.unavailable, waitingFor: ["node"], nodeID: "probe-cluster" },
			});
		} finally {
			// Back in any case: stopping a broker whose NATS connection is down fails half-way.
			await nats.start();
			await reachableOverNats();
		}
		expect((await probeUntil(port, 200)).body).toEqual({ status: "ready", nodeID: "probe-cluster" });
	}, 40_000);
});
