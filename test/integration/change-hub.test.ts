import { pipeline, Writable } from "node:stream";
import { ServiceBroker } from "moleculer";
import { FEED_PAGE, type FeedPage, type Position } from "../../lib/feed/changes";
import { ChangeStream, WAITING_CHANGES } from "../../lib/feed/sse";
import { CATCH_UP_PAGE, changeStream } from "../../mixins/change-stream.mixin";
import { gameChange } from "../support/sse";

// The gateway's hub (mixins/change-stream.mixin.ts) under a burst: reads of a feed asked for while one is in progress share one read,
// so a burst of broadcasts cannot queue a read per change.

let broker: ServiceBroker;
const reads: number[] = [];
/** The `limit` of each read. */
const limits: number[] = [];
/** The games feed the stub answers from: seqs 1 to `feedLast`, each game titled `feedTitle`. */
let feedLast = 0;
let feedTitle: string | undefined;
/** How long the stub takes to answer: a service in another process, or (0) one in the gateway's own, with no turn of I/O. */
let feedDelayMs = 20;

beforeAll(async () => {
	broker = new ServiceBroker({ logger: false });
	for (const name of ["authors", "categories", "games"])
		broker.createService({
			name,
			actions: {
				async changes(ctx): Promise<FeedPage> {
					const { after, limit = FEED_PAGE } = ctx.params as { after: number; limit?: number };
					if (name !== "games") return { changes: [], first: 1, last: 0 };
					reads.push(after);
					limits.push(limit);
					if (feedDelayMs > 0) await new Promise(resolve => setTimeout(resolve, feedDelayMs));
					const count = Math.min(limit, Math.max(0, feedLast - after));
					const changes = Array.from({ length: count }, (_, index) => gameChange(after + index + 1, feedTitle));
					return { changes, first: 1, last: feedLast };
				},
			},
		});
	broker.createService({ name: "hub", mixins: [changeStream()] });
	await broker.start();
});
afterAll(() => broker.stop());

test("200 reads asked during one in progress make one more read, and each caller waits for a read begun after its call", async () => {
	const hub = broker.getLocalService("hub") as unknown as { pull(service: string): Promise<void> };
	await hub.pull("games");
	reads.length = 0;
	const first = hub.pull("games");
	// The first read is under way (each takes 20 ms).
	await new Promise(resolve => setTimeout(resolve, 5));
	expect(reads).toHaveLength(1);
	const burst = Array.from({ length: 200 }, () => hub.pull("games"));
	await Promise.all([first, ...burst]);
	expect(reads).toHaveLength(2);
});

type Hub = {
	hub: { position: Partial<Position>; streams: Set<ChangeStream> };
	catchUp(stream: ChangeStream): Promise<void>;
	pull(service: string): Promise<void>;
};

test("a stream catching up past the hub's position (a change the hub has not read yet) gets it once, and no reset", async () => {
	const hub = broker.getLocalService("hub") as unknown as Hub;
	feedLast = 5;
	hub.hub.position = { authors: 0, categories: 0, games: 4 };
	const stream = new ChangeStream({ authors: 0, categories: 0, games: 2 }, new Set(["games"] as const), () => undefined);
	await hub.catchUp(stream);
	stream.offer(gameChange(5));
	const text = String(stream.body.read());
	expect(text).not.toContain("event: reset");
	expect([...text.matchAll(/"seq":(\d+)/g)].map(match => Number(match[1]))).toEqual([3, 4, 5]);
	stream.close();
});

describe("many changes to hand over, from a feed answered with no I/O (the gateway's own process), to a client that reads at once", () => {
	/** How many reads of the feed were made once the turn of the event loop begun now comes round. */
	const readsWithinATurn = () => new Promise<number>(resolve => setImmediate(() => resolve(reads.length)));

	beforeEach(() => {
		feedDelayMs = 0;
		reads.length = 0;
		limits.length = 0;
	});
	afterEach(() => {
		feedDelayMs = 20;
	});

	test(`a stream catching up reads ${CATCH_UP_PAGE} changes at a time, one read per turn of the event loop`, async () => {
		const hub = broker.getLocalService("hub") as unknown as Hub;
		feedLast = 1000;
		hub.hub.position = { authors: 0, categories: 0, games: 1000 };
		const stream = new ChangeStream({ authors: 0, categories: 0, games: 0 }, new Set(["games"] as const), () => undefined);
		stream.body.resume();
		const caughtUp = hub.catchUp(stream);
		expect(await readsWithinATurn()).toBeLessThanOrEqual(1);
		await caughtUp;
		expect(reads).toHaveLength(1000 / CATCH_UP_PAGE);
		expect(new Set(limits)).toEqual(new Set([CATCH_UP_PAGE]));
		expect(stream.at("games")).toBe(1000);
		stream.close();
	});

	test("20 streams catching up at once take turns: one read of the feed per turn of the event loop among them all", async () => {
		const hub = broker.getLocalService("hub") as unknown as Hub;
		feedLast = 200;
		hub.hub.position = { authors: 0, categories: 0, games: 200 };
		const streams = Array.from({ length: 20 }, () => {
			const stream = new ChangeStream({ authors: 0, categories: 0, games: 0 }, new Set(["games"] as const), () => undefined);
			stream.body.resume();
			return stream;
		});
		const caughtUp = Promise.all(streams.map(stream => hub.catchUp(stream)));
		expect(await readsWithinATurn()).toBeLessThanOrEqual(1);
		expect(await readsWithinATurn()).toBeLessThanOrEqual(2);
		await caughtUp;
		expect(reads).toHaveLength(20 * (200 / CATCH_UP_PAGE));
		for (const stream of streams) {
			expect(stream.at("games")).toBe(200);
			stream.close();
		}
	});

	test(`the hub reading a feed far behind its position reads a page per turn of the event loop`, async () => {
		const hub = broker.getLocalService("hub") as unknown as Hub;
		feedLast = 3 * FEED_PAGE;
		hub.hub.position = { authors: 0, categories: 0, games: 0 };
		const pulled = hub.pull("games");
		expect(await readsWithinATurn()).toBeLessThanOrEqual(1);
		await pulled;
		expect(hub.hub.position.games).toBe(feedLast);
	});
});

describe("a client that reads slower than the changes come (docs/followers.md, Bounds)", () => {
	/** A client reading `stream` a frame every `msPerFrame`, as over a slow link: what it has read. */
	function slowClient(stream: ChangeStream, msPerFrame = 1) {
		let text = "";
		const client = new Writable({
			highWaterMark: 16 * 1024,
			write(chunk, _encoding, done) {
				text += String(chunk);
				setTimeout(done, msPerFrame);
			},
		});
		pipeline(stream.body, client, () => undefined);
		return { seqs: () => [...text.matchAll(/"seq":(\d+)/g)].map(match => Number(match[1])), text: () => text };
	}

	/** Waits until `client` has read the change `seq`, up to 20 s. */
	async function readUpTo(client: ReturnType<typeof slowClient>, seq: number) {
		for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise(resolve => setTimeout(resolve, 20)))
			if (client.seqs().at(-1) === seq) return;
		throw new Error(`the client read up to ${client.seqs().at(-1)}, not ${seq}`);
	}

	const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);

	let hub: Hub;
	beforeEach(() => {
		hub = broker.getLocalService("hub") as unknown as Hub;
		feedTitle = "x".repeat(1000);
	});
	afterEach(() => {
		feedTitle = undefined;
		feedDelayMs = 20;
	});

	test.each([
		["a feed in another process", 20, 1],
		["a feed answered with no turn of I/O", 0, 1],
		["a client slower than the feed", 20, 5],
	])(
		"a live stream given a page of long changes at once (a read, not a broadcast) falls behind, then gets each in order, open: %s",
		async (_case, delay, msPerFrame) => {
			feedLast = 10;
			hub.hub.position = { authors: 0, categories: 0, games: 10 };
			const stream = new ChangeStream({ authors: 0, categories: 0, games: 10 }, new Set(["games"] as const), () => undefined);
			hub.hub.streams.add(stream);
			await hub.catchUp(stream);
			const client = slowClient(stream, msPerFrame);
			feedDelayMs = delay;
			// 500 changes of about 1.2 KB in one read of the feed: more than the stream holds.
			feedLast = 10 + FEED_PAGE;
			await hub.pull("games");
			await readUpTo(client, feedLast);
			expect(client.seqs()).toEqual(range(11, feedLast));
			expect(client.text().match(/^event: ready$/gm)).toHaveLength(1);
			expect(stream.closed).toBe(false);
			hub.hub.streams.delete(stream);
			stream.close();
		},
	);

	test(`a stream catching up while more than ${WAITING_CHANGES} changes are written gets each in order, in one stream`, async () => {
		feedLast = 1500;
		hub.hub.position = { authors: 0, categories: 0, games: 1500 };
		const stream = new ChangeStream({ authors: 0, categories: 0, games: 0 }, new Set(["games"] as const), () => undefined);
		hub.hub.streams.add(stream);
		const client = slowClient(stream);
		const caughtUp = hub.catchUp(stream);
		await new Promise(resolve => setTimeout(resolve, 100));
		feedLast += WAITING_CHANGES + 100;
		await hub.pull("games");
		await caughtUp;
		await readUpTo(client, feedLast);
		expect(client.seqs()).toEqual(range(1, feedLast));
		expect(stream.closed).toBe(false);
		hub.hub.streams.delete(stream);
		stream.close();
	}, 30_000);
});

test("a hub created again in the process quiets its logger's warnings once, not once more per creation", async () => {
	const first = broker.getLocalService("hub");
	const quietedWarn = first.logger.warn;
	await broker.destroyService(first);
	const again = broker.createService({ name: "hub", mixins: [changeStream()] });
	await broker.waitForServices("hub");
	// moleculer hands the service its logger of before, whose warn was wrapped then.
	expect(again.logger).toBe(first.logger);
	expect(again.logger.warn).toBe(quietedWarn);
});
