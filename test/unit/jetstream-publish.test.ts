import type { Msg, NatsConnection } from "nats";
import { publishChanges } from "../../lib/feed/jetstream";
import type { Change } from "../../lib/feed/changes";
import { gameChange } from "../support/sse";

// The relay's publishing (lib/feed/jetstream.ts) on a stand-in connection: a page of changes is sent at once, its
// acknowledgements come to one inbox, a record's changes go in waves, and after a failure the mark stops before it, however many
// after it were stored. Every test ends with no subscription and no timer left.

/** What the stand-in JetStream answers a publish: stored, a duplicate, an error of its own, a status (503), or nothing. */
type Answer = "stored" | "duplicate" | { error: string } | 503 | "none";

/** Each stand-in connection's open subscriptions, by inbox. */
const connections: Map<string, unknown>[] = [];

beforeEach(() => {
	connections.length = 0;
	jest.useFakeTimers({ doNotFake: ["setImmediate", "nextTick", "queueMicrotask"] });
});

afterEach(() => {
	try {
		expect({ subscriptions: connections.reduce((open, inboxes) => open + inboxes.size, 0), timers: jest.getTimerCount() }).toEqual({
			subscriptions: 0,
			timers: 0,
		});
	} finally {
		jest.useRealTimers();
	}
});

/**
 * A connection whose JetStream answers each publish by its change's id, once every publish sent in the same turn has gone: `events`
 * lists what was sent and answered, in order. It refuses the publishes of `refused` (as nats.js refuses a message too large), takes
 * `subscriptions` subscriptions before it is closed, and hands the subscription nats.js's error instead of the answer to `failing`.
 */
function connection(
	answer: (msgID: string) => Answer,
	{ refused = "", subscriptions = Infinity, failing = "" }: { refused?: string; subscriptions?: number; failing?: string } = {},
) {
	const events: string[] = [];
	const inboxes = new Map<string, (err: Error | null, msg: Msg) => void>();
	connections.push(inboxes);
	const subscribed: string[] = [];
	/** A message as nats.js hands a subscription one: its subject, data, headers, and its data read as JSON. */
	const deliver = (to: string, err: Error | null, msg?: { data: Uint8Array; headers?: object }) =>
		inboxes.get(to.slice(0, to.lastIndexOf(".")))?.(err, {
			subject: to,
			...msg,
			json: () => JSON.parse(new TextDecoder().decode(msg?.data)) as unknown,
		} as unknown as Msg);
	const reply = (to: string, msgID: string) => {
		if (msgID === failing) return deliver(to, new Error("PERMISSIONS_VIOLATION"));
		const answered = answer(msgID);
		if (answered === "none") return;
		events.push(`answered ${msgID}`);
		const headers = answered === 503 ? { hasError: true, code: 503 } : undefined;
		const body =
			typeof answered === "object"
				? { error: { code: 500, description: answered.error } }
				: { stream: "S", seq: 1, duplicate: answered === "duplicate" };
		// Twice: an answer comes again (a retransmission), and counts once.
		for (const _ of [1, 2]) deliver(to, null, { data: new TextEncoder().encode(JSON.stringify(body)), headers });
	};
	/** A message of another to `to`: not an answer to any publish. */
	const stray = (to: string) => deliver(to, null, { data: new TextEncoder().encode("{}") });
	const nats = {
		options: { inboxPrefix: "_INBOX_games" },
		subscribe(subject: string, { callback }: { callback: (err: Error | null, msg: Msg) => void }) {
			if (subscribed.length >= subscriptions) throw new Error("CONNECTION_CLOSED");
			const inbox = subject.slice(0, -2);
			subscribed.push(subject);
			inboxes.set(inbox, callback);
			return { unsubscribe: () => inboxes.delete(inbox) };
		},
		publish(subject: string, data: string, options: { reply: string; headers: { get(key: string): string } }) {
			const msgID = options.headers.get("Nats-Msg-Id");
			if (msgID === refused) throw new Error("MAX_PAYLOAD_EXCEEDED");
			const { id } = JSON.parse(data) as Change;
			events.push(`sent ${msgID} to ${subject}${id === msgID ? "" : " under another id"}`);
			setImmediate(() => {
				// Before each answer, messages to the same inbox that answer nothing: not taken for answers.
				const inbox = options.reply.slice(0, options.reply.lastIndexOf("."));
				for (const token of ["x", "-1", "99"]) stray(`${inbox}.${token}`);
				// And one to its own reply subject that is no acknowledgement, for a publish JetStream does not answer.
				if (answer(msgID) === "none") stray(options.reply);
				reply(options.reply, msgID);
			});
		},
	};
	return { nats: nats as unknown as NatsConnection, events, subscribed };
}

/** A change of its own record (gameChange's are all of one). */
const ofRecord = (seq: number) => ({ ...gameChange(seq), record: { id: `game-${seq}`, title: `Title ${seq}` } });

const subject = "catalogue.changes.game.updated";

test("a page goes out at once, in order, with each change's id as its de-duplication id, answered to the node's own inbox", async () => {
	const changes = [1, 2, 3, 4].map(ofRecord);
	const { nats, events, subscribed } = connection(msgID => (msgID === "change-2" ? "duplicate" : "stored"));
	expect(await publishChanges(nats, changes)).toEqual({ last: 4, stored: 3 });
	expect(events).toEqual([
		...changes.map(change => `sent ${change.id} to ${subject}`),
		...changes.map(change => `answered ${change.id}`),
	]);
	// One subscription for the page, under the prefix the broker's access rules let a games node read.
	expect(subscribed).toEqual([expect.stringMatching(/^_INBOX_games\.\w+\.\*$/)]);
});

test("a failure in the middle: the mark stops before it, and JetStream's reason is told", async () => {
	const changes = [1, 2, 3, 4].map(ofRecord);
	const { nats } = connection(msgID => (msgID === "change-3" ? { error: "insufficient resources" } : "stored"));
	const { failure, ...result } = await publishChanges(nats, changes);
	expect({ ...result, failure: failure?.message }).toEqual({ last: 2, stored: 2, failure: "insufficient resources" });
});

test("a failure of the first: nothing is marked", async () => {
	const { nats } = connection(msgID => (msgID === "change-7" ? 503 : "stored"));
	const { failure, ...result } = await publishChanges(nats, [ofRecord(7), ofRecord(8)]);
	expect({ ...result, failure: failure?.message }).toEqual({ last: undefined, stored: 0, failure: "503" });
});

test("a publish not answered in time fails as a timeout, and the ones before it are marked", async () => {
	const { nats } = connection(msgID => (msgID === "change-2" ? "none" : "stored"));
	const publishing = publishChanges(nats, [1, 2, 3].map(ofRecord));
	await new Promise(resolve => setImmediate(resolve));
	await jest.advanceTimersByTimeAsync(5000);
	const { failure, ...result } = await publishing;
	expect({ ...result, failure: failure?.message }).toEqual({ last: 1, stored: 1, failure: "TIMEOUT" });
});

test("a publish nats.js refuses in the middle of a page: none of the page is marked, and the failure is told", async () => {
	const { nats, events } = connection(() => "stored", { refused: "change-3" });
	const { failure, ...result } = await publishChanges(nats, [1, 2, 3, 4].map(ofRecord));
	expect({ ...result, failure: failure?.message }).toEqual({ last: undefined, stored: 0, failure: "MAX_PAYLOAD_EXCEEDED" });
	expect(events).toEqual([`sent change-1 to ${subject}`, `sent change-2 to ${subject}`]);
});

test("an error nats.js hands the subscription: the page fails with it at once", async () => {
	const { nats } = connection(() => "stored", { failing: "change-2" });
	const { failure, ...result } = await publishChanges(nats, [1, 2, 3].map(ofRecord));
	expect({ ...result, failure: failure?.message }).toEqual({ last: 1, stored: 1, failure: "PERMISSIONS_VIOLATION" });
});

test("a record's change waits for its record's change before it to be stored, and is not sent after that one failed", async () => {
	// The changes 1 and 3 are of one record, 2 and 4 of another.
	const changes = [gameChange(1), ofRecord(2), gameChange(3), { ...ofRecord(4), record: { id: "game-2", title: "Title 4" } }];
	const stored = connection(() => "stored");
	expect(await publishChanges(stored.nats, changes)).toEqual({ last: 4, stored: 4 });
	expect(stored.events).toEqual([
		`sent change-1 to ${subject}`,
		`sent change-2 to ${subject}`,
		"answered change-1",
		"answered change-2",
		`sent change-3 to ${subject}`,
		`sent change-4 to ${subject}`,
		"answered change-3",
		"answered change-4",
	]);
	const failed = connection(msgID => (msgID === "change-1" ? 503 : "stored"));
	const { last, failure } = await publishChanges(failed.nats, changes);
	expect({ last, failure: failure?.message }).toEqual({ last: undefined, failure: "503" });
	// Change 3 would have been stored before change 1, which goes again at the next try.
	expect(failed.events).toEqual([`sent change-1 to ${subject}`, `sent change-2 to ${subject}`, "answered change-1", "answered change-2"]);
});

test("a connection closed before the page: it fails at once", async () => {
	const { nats } = connection(() => "stored", { subscriptions: 0 });
	const { failure, ...result } = await publishChanges(nats, [ofRecord(1)]);
	expect({ ...result, failure: failure?.message }).toEqual({ last: undefined, stored: 0, failure: "CONNECTION_CLOSED" });
});

test("a connection closed between two waves: the first wave's changes are marked", async () => {
	// 1 and 3 are changes of one record, 2 of another: 3 goes in the second wave.
	const { nats } = connection(() => "stored", { subscriptions: 1 });
	const { failure, ...result } = await publishChanges(nats, [gameChange(1), ofRecord(2), gameChange(3)]);
	expect({ ...result, failure: failure?.message }).toEqual({ last: 2, stored: 2, failure: "CONNECTION_CLOSED" });
});

test("a change not sent, after a wave that failed, stops the mark even when the failure came later in the feed", async () => {
	// 1 and 2 are changes of one record, 3 of another, which fails: 2 would go in the second wave, which is not sent.
	const { nats, events } = connection(msgID => (msgID === "change-3" ? 503 : "stored"));
	const { failure, ...result } = await publishChanges(nats, [gameChange(1), gameChange(2), ofRecord(3)]);
	expect({ ...result, failure: failure?.message }).toEqual({ last: 1, stored: 1, failure: "503" });
	expect(events).not.toContain(`sent change-2 to ${subject}`);
});
