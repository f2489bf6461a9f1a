import { ServiceBroker } from "moleculer";
import type { FeedPage } from "../../lib/feed/changes";
import { changeStream } from "../../mixins/change-stream.mixin";

// The gateway's hub (mixins/change-stream.mixin.ts) under a burst: reads of a feed asked for while one is in progress share one read,
// so a burst of broadcasts cannot queue a read per change.

let broker: ServiceBroker;
const reads: number[] = [];

beforeAll(async () => {
	broker = new ServiceBroker({ logger: false });
	for (const name of ["authors", "categories", "games"])
		broker.createService({
			name,
			actions: {
				async changes(ctx): Promise<FeedPage> {
					if (name === "games") reads.push((ctx.params as { after: number }).after);
					await new Promise(resolve => setTimeout(resolve, 20));
					return { changes: [], first: 1, last: 0 };
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
