import fc from "fast-check";
import { ServiceBroker } from "moleculer";
import { texts } from "../../lib/catalogue/errors";
import { FEED_RETENTION } from "../../lib/feed/changes";
import { config } from "../../lib/config/config";
import brokerOptions from "../../moleculer.config";
import { STREAM_LIMITS } from "../../mixins/change-stream.mixin";
import { apiService } from "../../services/api.service";
import { fuzzRuns, fuzzSeed } from "../support/fuzz";
import { clusterMember, gatewayApi, localService, startCatalogue, type Api, type Catalogue } from "../support/catalogue";
import { rawStart } from "../support/raw-http";
import { waitFor } from "../support/process";
import { openStream, type SseStream } from "../support/sse";

// GET /changes (docs/followers.md): the change feed as Server-Sent Events through the gateway, in both layouts.

let catalogue: Catalogue;
let api: Api;
const open: SseStream[] = [];

beforeAll(async () => {
	catalogue = await startCatalogue();
	api = catalogue.api;
});
afterEach(() => {
	for (const stream of open.splice(0)) stream.close();
});
afterAll(() => catalogue.stop());

async function follow(query = "", headers: Record<string, string> = {}, through = api): Promise<SseStream> {
	const stream = await openStream(`${through.url}/changes${query}`, headers);
	open.push(stream);
	return stream;
}

const isChange = (event: { event: string }) => event.event === "message";

/** Waits until the gateway has seen the streams the tests closed end. */
async function noStreamsLeft(): Promise<void> {
	const { hub } = localService<{ hub: { streams: Set<unknown> } }>(catalogue, "api");
	for (let tries = 0; hub.streams.size > 0 && tries < 100; tries++) await new Promise(resolve => setTimeout(resolve, 20));
	expect(hub.streams.size).toBe(0);
}

describe("GET /changes", () => {
	test("a stream that says where it is, then each write as it is stored", async () => {
		const stream = await follow();
		expect(stream.status).toBe(200);
		expect(stream.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
		expect(stream.headers.get("cache-control")).toBe("no-store");
		const ready = await stream.next();
		expect(ready).toMatchObject({ event: "ready", id: expect.stringMatching(/^authors:\d+,categories:\d+,games:\d+$/) });
		const category = await api.category("Streamed");
		const change = await stream.next(isChange);
		expect(change.data).toMatchObject({ kind: "category", type: "created", record: category });
		expect(change.id).toMatch(new RegExp(`categories:${change.data.seq}`));
	});

	test("a client that leaves ends its stream without a warning: moleculer-web's 'Stream got an error.' is logged at debug", async () => {
		// The gateway logs a line at one level or the other: at debug, it is not at warn.
		const { logger } = localService<{ logger: Record<"debug", (...args: unknown[]) => void> }>(catalogue, "api");
		const debug = jest.spyOn(logger, "debug");
		try {
			await noStreamsLeft();
			const stream = await follow();
			await stream.next();
			stream.close();
			await noStreamsLeft();
			const closedEarly = expect.objectContaining({ actionName: "api.changes" });
			await waitFor("the stream's end logged", () => Promise.resolve(debug.mock.calls.length > 0), [], 1000);
			expect(debug).toHaveBeenCalledWith("Stream got an error.", closedEarly);
		} finally {
			debug.mockRestore();
		}
	});

	test("conditional headers make no 304 of the stream: If-None-Match: * gets the stream", async () => {
		// Exactly this header: fetch would add Cache-Control: no-cache, which no 304 survives.
		const { status, headers, first } = await rawStart(`${api.url}/changes`, { "If-None-Match": "*" });
		expect({ status, type: headers["content-type"] }).toEqual({ status: 200, type: "text/event-stream; charset=utf-8" });
		expect(first.length).toBeGreaterThan(0);
	});

	test("Last-Event-ID resumes after the last event read: every change since, in order, once", async () => {
		const first = await follow();
		const { id } = await first.next(event => event.event === "ready");
		first.close();
		const author = await api.author("Resumed", "Finnish");
		await api.put(`/author/${author.id}`, { name: "Resumed 2", nationality: "Finnish" });
		await api.delete(`/author/${author.id}`);
		const resumed = await follow("", { "Last-Event-ID": id! });
		const types = [];
		for (let index = 0; index < 3; index++) types.push((await resumed.next(isChange)).data.type);
		expect(types).toEqual(["created", "updated", "removed"]);
		await resumed.next(event => event.event === "ready");
		expect(resumed.events.filter(isChange)).toHaveLength(3);
	});

	test("?lastEventId= for a client that cannot send the header", async () => {
		const first = await follow();
		const { id } = await first.next(event => event.event === "ready");
		const category = await api.category("By query");
		const resumed = await follow(`?lastEventId=${encodeURIComponent(id!)}`);
		expect((await resumed.next(isChange)).data.record).toEqual(category);
	});

	test("?kinds= keeps the kinds listed", async () => {
		const stream = await follow("?kinds=author,game");
		await stream.next(event => event.event === "ready");
		await api.category("Not followed");
		const author = await api.author("Followed");
		expect((await stream.next(isChange)).data).toMatchObject({ kind: "author", record: author });
		expect(stream.events.filter(isChange).map(event => event.data.kind)).toEqual(["author"]);
	});

	test.each([
		["a Last-Event-ID it did not give", "", { "Last-Event-ID": "games:1" }, texts.notAPosition],
		[
			"an unknown kind, named",
			"?kinds=game,player",
			{},
			"The 'kinds' field is 'game,player'; it must list kinds of record (category, author, game), separated by commas.",
		],
	])("%s: 400 with a msg", async (_case, query, headers, msg) => {
		const stream = await follow(query, headers);
		expect(stream.status).toBe(400);
		expect(stream.refusal).toEqual(expect.objectContaining({ msg }));
	});

	test("hostile kinds and positions, in the header and the query: a stream that starts, or a 400 with a msg; never a 5xx", async () => {
		const name = fc.constantFrom("authors", "categories", "games", "author", "game", "", "__proto__", "games ");
		const count = fc.oneof(fc.nat(5), fc.constantFrom("-1", "1e3", "0x10", "9".repeat(15), "9".repeat(16), " 1", "01", ""));
		const position = fc.oneof(
			fc.tuple(count, count, count).map(([a, c, g]) => `authors:${a},categories:${c},games:${g}`),
			fc.array(fc.tuple(name, count), { maxLength: 4 }).map(pairs => pairs.map(([n, c]) => `${n}:${c}`).join(",")),
			fc.string({ unit: "binary-ascii", maxLength: 40 }),
		);
		const kinds = fc.oneof(
			fc
				.array(fc.constantFrom("category", "author", "game", "games", "", "GAME", "game,", "constructor"), { maxLength: 4 })
				.map(list => list.join(",")),
			fc.string({ unit: "grapheme", maxLength: 20 }),
		);
		const request = fc.record(
			{ kinds, query: position, header: position.filter(text => /^[\x20-\x7e]*$/.test(text)) },
			{ requiredKeys: [] },
		);
		await fc.assert(
			fc.asyncProperty(request, async ({ kinds: listed, query, header }) => {
				const search = new URLSearchParams();
				if (listed !== undefined) search.set("kinds", listed);
				if (query !== undefined) search.set("lastEventId", query);
				const stream = await follow(search.size > 0 ? `?${search}` : "", header === undefined ? {} : { "Last-Event-ID": header });
				try {
					if (stream.status === 200) {
						expect(["ready", "reset", "message"]).toContain((await stream.next(() => true, 3000)).event);
						return;
					}
					expect(stream.status).toBe(400);
					expect(stream.refusal).toEqual(expect.objectContaining({ msg: expect.any(String) }));
				} finally {
					stream.close();
					open.splice(open.indexOf(stream), 1);
					await noStreamsLeft();
				}
			}),
			{ numRuns: fuzzRuns(60), seed: fuzzSeed() },
		);
	}, 60_000);

	test("a position whose changes are no longer kept gets a reset event, then the changes after it", async () => {
		const first = await follow();
		const { id } = await first.next(event => event.event === "ready");
		first.close();
		await api.category("Pruned away");
		const { adapter } = localService<{ adapter: { pruneChanges(retention: object): Promise<number> } }>(catalogue, "categories");
		expect(await adapter.pruneChanges({ ...FEED_RETENTION, maxChanges: 0 })).toBeGreaterThan(0);
		const resumed = await follow("", { "Last-Event-ID": id! });
		const reset = await resumed.next(event => event.event === "reset");
		expect(reset.data).toEqual({ msg: texts.startAgain, kind: "category" });
		await resumed.next(event => event.event === "ready");
		const category = await api.category("After the reset");
		expect((await resumed.next(isChange)).data.record).toEqual(category);
	});

	test("a well-formed position the feeds have not reached (another store's) gets a reset for each kind, then the changes after", async () => {
		const first = await follow();
		const { id } = await first.next(event => event.event === "ready");
		first.close();
		const ahead = id!.replace(/(\w+):(\d+)/g, (_, service: string, seq: string) => `${service}:${Number(seq) + 1000}`);
		const resumed = await follow("", { "Last-Event-ID": ahead });
		await resumed.next(event => event.event === "ready");
		const resets = resumed.events.filter(event => event.event === "reset").map(event => event.data.kind);
		expect(resets.sort()).toEqual(["author", "category", "game"]);
		const category = await api.category("After a position ahead");
		expect((await resumed.next(isChange)).data.record).toEqual(category);
	});

	test("a client further behind than a stream holds (pages of long names) catches up in one stream", async () => {
		const first = await follow("?kinds=author");
		const { id } = await first.next(event => event.event === "ready");
		first.close();
		// About 700 bytes a change: a page of the feed is more than the stream's bound.
		const names = Array.from({ length: 600 }, (_, i) => `${"日".repeat(190)}${String(i).padStart(5, "0")}`);
		for (const name of names) await catalogue.broker.call("authors.create", { name, nationality: "Japanese" });
		const resumed = await follow("?kinds=author", { "Last-Event-ID": id! });
		await resumed.next(event => event.event === "ready", 20_000);
		expect(resumed.events.filter(isChange).map(event => event.data.record.name)).toEqual(names);
	}, 60_000);

	test("a stream whose request was answered at its timeout while the feeds were read is not kept: its client's places are freed", async () => {
		const hub = localService<{ hub: { streams: Set<unknown>; perClient: Map<string, number> } }>(catalogue, "api").hub;
		const { adapter } = localService<{ adapter: { changesAfter(...args: unknown[]): Promise<unknown> } }>(catalogue, "authors");
		const changesAfter = adapter.changesAfter.bind(adapter);
		adapter.changesAfter = async (...args) => {
			await new Promise(resolve => setTimeout(resolve, 300));
			return changesAfter(...args);
		};
		await noStreamsLeft();
		try {
			const call = catalogue.broker.call("api.changes", {}, { timeout: 100, meta: { clientAddress: "192.0.2.7" } });
			await expect(call).rejects.toMatchObject({ name: "RequestTimeoutError" });
			await new Promise(resolve => setTimeout(resolve, 500));
		} finally {
			adapter.changesAfter = changesAfter;
		}
		expect(hub.perClient.has("192.0.2.7")).toBe(false);
		expect(hub.streams.size).toBe(0);
	});

	test("an IPv6 client is counted by its /64, as the rate limit counts it: fresh addresses of one block do not pass the limit", async () => {
		await noStreamsLeft();
		const hub = localService<{ hub: { perClient: Map<string, number> } }>(catalogue, "api").hub;
		const opened: { destroy(): void }[] = [];
		const openFrom = (address: string) =>
			catalogue.broker.call<{ destroy(): void }, object>("api.changes", {}, { meta: { clientAddress: address } });
		try {
			for (let i = 1; i <= STREAM_LIMITS.perClient; i++) opened.push(await openFrom(`2001:db8:0:7::${i.toString(16)}`));
			await expect(openFrom("2001:db8:0:7::ffff")).rejects.toMatchObject({ code: 429, message: texts.streamsPerClient });
			expect([...hub.perClient]).toEqual([["2001:db8:0:7::/64", STREAM_LIMITS.perClient]]);
			opened.push(await openFrom("2001:db8:0:8::1"));
		} finally {
			for (const stream of opened) stream.destroy();
		}
		await noStreamsLeft();
	});

	test(`one client holds ${STREAM_LIMITS.perClient} streams at most: 429 with a msg`, async () => {
		// Sent at once: the limit holds for requests that arrive together.
		const opened = await Promise.all(Array.from({ length: STREAM_LIMITS.perClient + 3 }, () => follow()));
		const streams = opened.filter(stream => stream.status === 200);
		const refused = opened.filter(stream => stream.status !== 200);
		expect(streams).toHaveLength(STREAM_LIMITS.perClient);
		expect(refused.map(stream => [stream.status, stream.refusal])).toEqual(refused.map(() => [429, { msg: texts.streamsPerClient }]));
		streams[0].close();
		for (let tries = 0; tries < 50; tries++) {
			const again = await follow();
			if (again.status === 200) return;
			again.close();
			await new Promise(resolve => setTimeout(resolve, 20));
		}
		throw new Error("a closed stream was not counted out");
	});
});

// One broker has one gateway: the four-broker project runs this case.
const overNats = process.env.CATALOGUE_TOPOLOGY === "nats" ? test : test.skip;

test("a gateway holds STREAM_LIMITS.total streams at most: 503 with a msg and Retry-After", async () => {
	await noStreamsLeft();
	const total = STREAM_LIMITS.total;
	STREAM_LIMITS.total = 2;
	try {
		const streams = [await follow(), await follow()];
		expect(streams.map(stream => stream.status)).toEqual([200, 200]);
		const refused = await follow();
		expect([refused.status, refused.refusal, refused.headers.get("retry-after")]).toEqual([503, { msg: texts.streamsFull }, "5"]);
	} finally {
		STREAM_LIMITS.total = total;
	}
});

test("a gateway followed by no one reads no feed", async () => {
	await noStreamsLeft();
	const { broker } = catalogue;
	const call = broker.call.bind(broker);
	const reads: string[] = [];
	const spy = jest.spyOn(broker, "call").mockImplementation(((action: unknown, ...rest: unknown[]) => {
		if (typeof action === "string") reads.push(action);
		return (call as (...args: unknown[]) => unknown)(action, ...rest);
	}) as typeof broker.call);
	try {
		await new Promise(resolve => setTimeout(resolve, 2500));
		expect(reads.filter(action => action.endsWith(".changes"))).toEqual([]);
		// Followed again, it reads the feeds.
		const stream = await follow();
		await stream.next(event => event.event === "ready");
		expect(reads.filter(action => action.endsWith(".changes")).length).toBeGreaterThan(0);
	} finally {
		spy.mockRestore();
	}
});

describe("two gateways", () => {
	overNats("send the same changes", async () => {
		const second = new ServiceBroker({
			...brokerOptions,
			...clusterMember(catalogue.nats!, "api", `api.second-${process.pid}`),
			namespace: catalogue.namespace,
			cacher: undefined,
			logger: false,
		});
		second.createService(apiService({ ...config, port: 0 }));
		await second.start();
		try {
			await second.waitForServices(["authors", "categories", "games"], 10_000);
			const [one, two] = [await follow(), await follow("", {}, gatewayApi(second))];
			await Promise.all([one.next(event => event.event === "ready"), two.next(event => event.event === "ready")]);
			const category = await api.category("Seen twice");
			const author = await gatewayApi(second).author("Seen twice");
			for (const stream of [one, two]) {
				const changes = [await stream.next(isChange), await stream.next(isChange)].map(event => event.data);
				expect(Object.fromEntries(changes.map(change => [change.kind, change.record]))).toEqual({ category, author });
			}
		} finally {
			await second.stop();
		}
	});
});
