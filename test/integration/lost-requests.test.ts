import { ServiceBroker, type Logger, type Middleware } from "moleculer";
import { MemoryAnswers } from "../../lib/cache/memory-cacher";
import { natsConnection, natsTransporter } from "../../lib/config/transporter";
import { startNats, type NatsServer } from "../support/nats";
import { waitFor } from "../support/process";

// Calls NATS drops, on a real nats-server. With moleculer's disableBalancer (NATS_ACCESS=on) a call goes to its action's subject and
// nobody in particular: NATS drops it when nobody subscribes at that moment, and moleculer never settles it (it settles a call when
// its node leaves, and such a call names none); only the caller's timeout ends it. Neither may cost more than that one call.

let nats: NatsServer;
let brokers: ServiceBroker[] = [];

beforeAll(async () => {
	nats = await startNats();
});
afterEach(async () => {
	await Promise.all(brokers.map(broker => broker.stop()));
	brokers = [];
});
afterAll(async () => {
	await nats?.stop();
});

const namespace = () => `lost-${Math.random().toString(36).slice(2)}`;

async function node(options: ConstructorParameters<typeof ServiceBroker>[0]): Promise<ServiceBroker> {
	const broker = new ServiceBroker({ logger: false, disableBalancer: true, transporter: natsTransporter(nats.url, null), ...options });
	brokers.push(broker);
	return broker;
}

/** A node that never receives its first `drops` requests: they are lost on the way, as NATS loses one nobody subscribes to. */
type Receive = (cmd: string, data: Buffer, socket?: unknown) => unknown;
const dropping = (drops: number) =>
	({
		name: "DropRequests",
		transporterReceive:
			(next: Receive): Receive =>
			(cmd, data, socket) =>
				cmd === "REQ" && drops-- > 0 ? undefined : next(cmd, data, socket),
	}) as unknown as Middleware;

/** A node `shelf` whose service `shelf` counts 1, and a node `caller` that has heard of it; `both` is given to each. */
async function shelfAndCaller(
	shelfOptions: ConstructorParameters<typeof ServiceBroker>[0] = {},
	both: ConstructorParameters<typeof ServiceBroker>[0] = {},
) {
	const ns = namespace();
	const shelf = await node({ nodeID: "shelf", namespace: ns, ...both, ...shelfOptions });
	shelf.createService({ name: "shelf", actions: { count: () => 1 } });
	const caller = await node({ nodeID: "caller", namespace: ns, ...both });
	await Promise.all([shelf.start(), caller.start()]);
	await caller.waitForServices("shelf", 10_000);
	return { shelf, caller };
}

/** `shelf.count` called by `loops` callers in turn while `going()`: each call's answer, or its error's name. */
async function countWhile(caller: ServiceBroker, going: () => boolean, loops: number, timeout: number): Promise<string[]> {
	const outcomes: string[] = [];
	await Promise.all(
		Array.from({ length: loops }, async () => {
			while (going()) {
				outcomes.push(await caller.call("shelf.count", {}, { timeout }).then(String, (err: Error) => err.name));
				// A refusal comes back at once: let the timers run.
				await new Promise(resolve => setImmediate(resolve));
			}
		}),
	);
	return outcomes;
}

test("a cached read whose call was lost does not hold the reads of the same answer that come after it", async () => {
	const ns = namespace();
	const shelf = await node({ nodeID: "shelf", namespace: ns, middlewares: [dropping(1)] });
	let calls = 0;
	shelf.createService({
		name: "shelf",
		actions: {
			list: { params: { $$strict: "remove" }, cache: { from: ["shelf"] } as object, handler: () => [{ id: "1", calls: ++calls }] },
		},
	});
	const cacher = new MemoryAnswers({ maxBytes: 1024 * 1024, maxEntryBytes: 64 * 1024 });
	const gateway = await node({ nodeID: "gateway", namespace: ns, cacher });
	await Promise.all([shelf.start(), gateway.start()]);
	await gateway.waitForServices("shelf", 10_000);

	// The first call and one that joins it while it is made: both end at the timeout.
	const [first, joined] = await Promise.allSettled([
		gateway.call("shelf.list", {}, { timeout: 500 }),
		new Promise(resolve => setTimeout(resolve, 50)).then(() => gateway.call("shelf.list", {}, { timeout: 500 })),
	]);
	expect(first).toMatchObject({ status: "rejected", reason: { name: "RequestTimeoutError" } });
	expect(joined).toMatchObject({ status: "rejected", reason: { name: "RequestTimeoutError" } });
	// The next one is made afresh, and answered.
	expect(await gateway.call("shelf.list", {}, { timeout: 500 })).toEqual([{ id: "1", calls: 1 }]);
});

test("a node announcing its services again drops none of the calls sent meanwhile: its new subscriptions come before the old go", async () => {
	const { shelf, caller } = await shelfAndCaller();
	let announcing = true;
	const announced = (async () => {
		// What moleculer does at each change of a node's services, and after a reconnection.
		for (let i = 0; i < 40; i++) {
			await shelf.registry.discoverer.sendLocalNodeInfo();
			await new Promise(resolve => setTimeout(resolve, 10));
		}
		announcing = false;
	})();
	const outcomes = await countWhile(caller, () => announcing, 8, 1000);
	await announced;
	expect(outcomes.length).toBeGreaterThan(400);
	expect(outcomes.filter(outcome => outcome !== "1")).toEqual([]);
});

test("a node that tells another of a new service before announcing it takes the service's calls at once", async () => {
	const { shelf, caller } = await shelfAndCaller();
	// moleculer announces a service after a debounce of a second, but answers another node's discovery with it at once.
	shelf.createService({ name: "late", actions: { count: () => 2 } });
	await waitFor("the shelf runs late", async () => shelf.registry.hasService("late", "shelf"), [], 5000);
	void caller.registry.discoverer.discoverNode("shelf");
	await waitFor("the caller hears of late", async () => caller.registry.hasService("late", "shelf"), [], 5000);
	expect(await caller.call("late.count", {}, { timeout: 500 })).toBe(2);
});

test("calls sent while the only node of a service stops are answered or refused at once, none left to its timeout", async () => {
	const { shelf, caller } = await shelfAndCaller({ registry: { stopDelay: 300 } });
	let stopping = true;
	const stopped = new Promise(resolve => setTimeout(resolve, 100))
		.then(() => shelf.stop())
		.then(() => new Promise(resolve => setTimeout(resolve, 200)))
		.finally(() => (stopping = false));
	const outcomes = await countWhile(caller, () => stopping, 32, 2000);
	await stopped;
	brokers = brokers.filter(broker => broker !== shelf);
	expect(outcomes).toContain("1");
	expect(
		outcomes.filter(outcome => outcome !== "1" && outcome !== "ServiceNotAvailableError" && outcome !== "ServiceNotFoundError"),
	).toEqual([]);
});

test("a node that announces its services while NATS is away neither fails nor ends, and takes calls again once NATS is back", async () => {
	const away = await startNats();
	try {
		const { shelf, caller } = await shelfAndCaller({}, { transporter: natsTransporter(away.url, null) });
		await away.stop();
		// What moleculer's debounced announcement does, uncaught: its round trip to NATS fails when the client tries to reconnect.
		const announced = await shelf.registry.discoverer.sendLocalNodeInfo().then(
			() => "announced",
			(err: Error) => err.message,
		);
		await away.start();
		expect(announced).toBe("announced");
		const counted = () => caller.call("shelf.count", {}, { timeout: 500, retries: 0 }).then(String, (err: Error) => err.name);
		await waitFor("the shelf answers again", async () => (await counted()) === "1", [], 20_000);
	} finally {
		await Promise.all(brokers.map(broker => broker.stop()));
		brokers = [];
		await away.stop();
	}
}, 40_000);

test("a node whose NATS connection closed for good announces its services without failing, and says why", async () => {
	const { shelf } = await shelfAndCaller();
	const warn = jest.spyOn((shelf.transit!.tx as unknown as { logger: Logger }).logger, "warn");
	// As when NATS refuses the node's login twice: nats.js then stops reconnecting.
	await natsConnection(shelf)!.close();
	const announced = await shelf.registry.discoverer.sendLocalNodeInfo().then(
		() => "announced",
		(err: Error) => err.message,
	);
	expect(announced).toBe("announced");
	expect(warn).toHaveBeenCalledWith("The node's actions are not subscribed to on NATS:", "CONNECTION_CLOSED");
});
