import type { NatsConnection, PubAck } from "nats";
import { publishChanges } from "../../lib/feed/jetstream";
import { gameChange } from "../support/sse";

// The relay's publishing (lib/feed/jetstream.ts) on a stand-in connection: a page of changes is sent at once and acknowledged
// together, and after a failure the mark stops before it, however many after it were stored.

/** A connection whose JetStream answers each publish with `answer(index)`, once every publish of the page has been sent. */
function connection(count: number, answer: (index: number) => PubAck | Error) {
	const sent: { subject: string; msgID?: string }[] = [];
	let allSent!: () => void;
	const everySent = new Promise<void>(resolve => (allSent = resolve));
	const publish = async (subject: string, _data: string, options: { msgID?: string }) => {
		const index = sent.push({ subject, msgID: options.msgID }) - 1;
		if (sent.length === count) allSent();
		await everySent;
		const result = answer(index);
		if (result instanceof Error) throw result;
		return result;
	};
	return { nats: { jetstream: () => ({ publish }) } as unknown as NatsConnection, sent };
}

const ack = (duplicate = false) => ({ duplicate }) as PubAck;

/** A change of its own record (gameChange's are all of one). */
const ofRecord = (seq: number) => ({ ...gameChange(seq), record: { id: `game-${seq}`, title: `Title ${seq}` } });

test("a page goes out at once, in order, with each change's id as its de-duplication id", async () => {
	const changes = [1, 2, 3, 4].map(ofRecord);
	const { nats, sent } = connection(changes.length, index => ack(index === 1));
	expect(await publishChanges(nats, changes)).toEqual({ last: 4, stored: 3 });
	expect(sent).toEqual(changes.map(change => ({ subject: "catalogue.changes.game.updated", msgID: change.id })));
});

test("a failure in the middle: the mark stops before it, and the failure is told", async () => {
	const changes = [1, 2, 3, 4].map(ofRecord);
	const timeout = new Error("TIMEOUT");
	const { nats } = connection(changes.length, index => (index === 2 ? timeout : ack()));
	expect(await publishChanges(nats, changes)).toEqual({ last: 2, stored: 2, failure: timeout });
});

test("a failure of the first: nothing is marked", async () => {
	const { nats } = connection(2, index => (index === 0 ? new Error("503") : ack()));
	expect(await publishChanges(nats, [ofRecord(7), ofRecord(8)])).toMatchObject({ last: undefined, stored: 0 });
});

test("a record's change waits for its record's change before it, and is not sent after that one failed", async () => {
	const sent: string[] = [];
	const answers = new Map<string, () => void>();
	const publish = (_subject: string, _data: string, { msgID }: { msgID: string }) => {
		sent.push(msgID);
		return new Promise<PubAck>((resolve, reject) =>
			answers.set(msgID, () => (msgID === "change-1" ? reject(new Error("503")) : resolve(ack()))),
		);
	};
	const nats = { jetstream: () => ({ publish }) } as unknown as NatsConnection;
	// The changes 1 and 3 are of one record, 2 of another.
	const changes = [gameChange(1), ofRecord(2), gameChange(3)];
	const publishing = publishChanges(nats, changes);
	await new Promise(resolve => setImmediate(resolve));
	expect(sent).toEqual(["change-1", "change-2"]);
	answers.get("change-2")!();
	answers.get("change-1")!();
	const { last, failure } = await publishing;
	expect({ last, failure: failure?.message }).toEqual({ last: undefined, failure: "503" });
	// Change 3 would have been stored before change 1, which goes again at the next try.
	expect(sent).toEqual(["change-1", "change-2"]);
});
