import { ServiceBroker } from "moleculer";
import type { FeedPage, Position } from "../../lib/feed/changes";
import { ChangeStream } from "../../lib/feed/sse";
import { changeStream } from "../../mixins/change-stream.mixin";
import { gameChange } from "../support/sse";

// The gateway's hub (mixins/change-stream.mixin.ts) under a burst: reads of a feed asked for while one is in progress share one read,
// so a burst of broadcasts cannot queue a read per change.

let broker: ServiceBroker;
const reads: number[] = [];
/** The games feed the stub answers from: seqs 1 to `feedLast`. */
let feedLast = 0;

beforeAll(async () => {
	broker = new ServiceBroker({ logger: false });
	for (const name of ["authors", "categories", "games"])
		broker.createService({
			name,
			actions: {
				async changes(ctx): Promise<FeedPage> {
					const { after } = ctx.params as { after: number };
					if (name !== "games") return { changes: [], first: 1, last: 0 };
					reads.push(after);
					await new Promise(resolve => setTimeout(resolve, 20));
					const changes = Array.from({ length: Math.max(0, feedLast - after) }, (_, index) => gameChange(after + index + 1));
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

test("a stream catching up past the hub's position (a change the hub has not read yet) gets it once, and no reset", async () => {
	type Hub = { hub: { position: Partial<Position> }; catchUp(stream: ChangeStream, follows: Set<string>): Promise<void> };
	const hub = broker.getLocalService("hub") as unknown as Hub;
	feedLast = 5;
	hub.hub.position = { authors: 0, categories: 0, games: 4 };
	const stream = new ChangeStream({ authors: 0, categories: 0, games: 2 }, new Set(["games"] as const), () => undefined);
	await hub.catchUp(stream, new Set(["games"]));
	stream.offer(gameChange(5));
	const text = String(stream.body.read());
	expect(text).not.toContain("event: reset");
	expect([...text.matchAll(/"seq":(\d+)/g)].map(match => Number(match[1]))).toEqual([3, 4, 5]);
	stream.close();
});
