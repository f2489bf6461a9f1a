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

test("a page goes out at once, in order, with each change's id as its de-duplication id", async () => {
	const changes = [1, 2, 3, 4].map(seq => gameChange(seq));
	const { nats, sent } = connection(changes.length, index => ack(index === 1));
	expect(await publishChanges(nats, changes)).toEqual({ last: 4, stored: 3 });
	expect(sent).toEqual(changes.map(change => ({ subject: "catalogue.changes.game.updated", msgID: change.id })));
});

test("a failure in the middle: the mark stops before it, and the failure is told", async () => {
	const changes = [1, 2, 3, 4].map(seq => gameChange(seq));
	const timeout = new Error("TIMEOUT");
	const { nats } = connection(changes.length, index => (index === 2 ? timeout : ack()));
	expect(await publishChanges(nats, changes)).toEqual({ last: 2, stored: 2, failure: timeout });
});

test("a failure of the first: nothing is marked", async () => {
	const { nats } = connection(2, index => (index === 0 ? new Error("503") : ack()));
	expect(await publishChanges(nats, [gameChange(7), gameChange(8)])).toMatchObject({ last: undefined, stored: 0 });
});
