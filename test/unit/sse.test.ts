import { pipeline, Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { texts } from "../../lib/catalogue/errors";
import { ChangeStream, frame, HEARTBEAT_MS, STREAM_BUFFER_BYTES, WAITING_CHANGES } from "../../lib/feed/sse";
import { gameChange } from "../support/sse";

const start = { authors: 0, categories: 0, games: 0 };
const everything = new Set(["authors", "categories", "games"] as const);

/** What the client reads of `stream` now: all it was sent. */
function streamed(stream: ChangeStream): string {
	const chunks: Buffer[] = [];
	for (let chunk = stream.body.read() as Buffer | null; chunk !== null; chunk = stream.body.read() as Buffer | null) chunks.push(chunk);
	return Buffer.concat(chunks).toString();
}

describe("frame", () => {
	test("one JSON line, U+2028 and U+2029 escaped, the id and event named", () => {
		const text = frame("reset", "games:3", { title: "a\u2028b\u2029c\nd" });
		expect(text).toBe('event: reset\nid: games:3\ndata: {"title":"a\\u2028b\\u2029c\\nd"}\n\n');
		expect(text.slice(0, -2)).not.toMatch(/[\u2028\u2029]|\n\n/);
	});
});

describe("ChangeStream", () => {
	test("changes handed over while catching up wait, then go once each, in order, after the ready event", () => {
		const stream = new ChangeStream({ ...start }, everything, () => undefined);
		stream.offer(gameChange(2));
		stream.offer(gameChange(3));
		stream.send(gameChange(1));
		stream.send(gameChange(2));
		stream.caughtUp();
		const text = streamed(stream);
		const ids = [...text.matchAll(/^id: (.*)$/gm)].map(match => match[1]);
		expect(ids).toEqual([
			"authors:0,categories:0,games:1",
			"authors:0,categories:0,games:2",
			"authors:0,categories:0,games:2",
			"authors:0,categories:0,games:3",
		]);
		expect(text.match(/^event: ready$/gm)).toHaveLength(1);
		stream.close();
	});

	test("a kind not followed is not sent", () => {
		const stream = new ChangeStream({ ...start }, new Set(["authors"] as const), () => undefined);
		stream.caughtUp();
		stream.offer(gameChange(1));
		expect(streamed(stream)).not.toContain('data: {"id"');
		stream.close();
	});

	test("a live stream whose client reads slower than the changes come falls behind at its bound, once, and is not closed", () => {
		const stream = new ChangeStream({ ...start }, everything, () => undefined);
		stream.caughtUp();
		const title = "x".repeat(1000);
		let seq = 0;
		let behind = false;
		while (!behind && seq < 10_000) behind = stream.offer(gameChange(++seq, title));
		expect(behind).toBe(true);
		// The frames written before it fell behind: the bound, and at most one frame more; the change it fell behind at is not sent.
		const each = frame(undefined, "authors:0,categories:0,games:1000", gameChange(1, title)).length;
		expect((seq - 1) * each).toBeGreaterThan(STREAM_BUFFER_BYTES - 2 * each);
		expect((seq - 1) * each).toBeLessThan(STREAM_BUFFER_BYTES + 2 * each);
		expect(stream.at("games")).toBe(seq - 1);
		// Behind, it holds the next changes back for the round that catches it up, and says so only once.
		expect(stream.offer(gameChange(seq + 1, title))).toBe(false);
		expect(stream.closed).toBe(false);
		stream.close();
	});

	test(`a stream catching up holds back ${WAITING_CHANGES} live changes; past them it lets them go, and needs another round`, () => {
		const stream = new ChangeStream({ ...start }, everything, () => undefined);
		for (let seq = 1; seq <= WAITING_CHANGES + 1; seq++) stream.offer(gameChange(seq));
		expect(stream.closed).toBe(false);
		// The round's reads from the feed stopped short of the changes let go: no `ready` yet, and another round.
		for (let seq = 1; seq <= 10; seq++) stream.send(gameChange(seq));
		expect(stream.caughtUp()).toBe(false);
		expect(streamed(stream)).not.toContain("event: ready");
		// The next round reads them all; the changes offered during it are handed over after `ready`.
		for (let seq = 11; seq <= WAITING_CHANGES + 1; seq++) stream.send(gameChange(seq));
		stream.offer(gameChange(WAITING_CHANGES + 2));
		expect(stream.caughtUp()).toBe(true);
		const text = streamed(stream);
		expect(text.match(/^event: ready$/gm)).toHaveLength(1);
		expect([...text.matchAll(/"seq":(\d+)/g)].map(match => Number(match[1]))).toEqual(
			Array.from({ length: WAITING_CHANGES - 8 }, (_, index) => index + 11),
		);
		stream.close();
	});

	test("changes held back that its client cannot take at once are not handed over past the bound: another round reads them", () => {
		const stream = new ChangeStream({ ...start }, everything, () => undefined);
		const title = "x".repeat(1000);
		for (let seq = 1; seq <= 400; seq++) stream.offer(gameChange(seq, title));
		expect(stream.caughtUp()).toBe(false);
		expect(stream.closed).toBe(false);
		const sent = stream.at("games");
		expect(sent).toBeGreaterThan(200);
		expect(sent).toBeLessThan(400);
		// Once its client has read, the next round reads the rest, and the stream is live; `ready` went once, before the first change.
		const text = streamed(stream);
		expect(text.indexOf("event: ready")).toBeLessThan(text.indexOf('"seq":1,'));
		for (let seq = sent + 1; seq <= 400; seq++) {
			stream.send(gameChange(seq, title));
			if (stream.full) streamed(stream);
		}
		expect(stream.caughtUp()).toBe(true);
		expect(streamed(stream)).not.toContain("event: ready");
		expect(stream.offer(gameChange(401))).toBe(false);
		expect(stream.at("games")).toBe(401);
		stream.close();
	});

	test("a sign-in that ends later than a timer can wait (30 days) does not end the stream at once; one that ends soon does", () => {
		jest.useFakeTimers();
		try {
			const day = 24 * 3600_000;
			const later = new ChangeStream({ ...start }, everything, () => undefined, { signedIn: true, until: Date.now() + 30 * day });
			const soon = new ChangeStream({ ...start }, everything, () => undefined, { signedIn: true, until: Date.now() + 1000 });
			// Node runs a timer of more than 2^31 - 1 ms after 1 ms.
			jest.advanceTimersByTime(1000);
			expect(soon.closed).toBe(true);
			expect(later.closed).toBe(false);
			later.close();
		} finally {
			jest.useRealTimers();
		}
	});

	test("an idle stream gets a comment line every HEARTBEAT_MS", () => {
		jest.useFakeTimers();
		try {
			const stream = new ChangeStream({ ...start }, everything, () => undefined);
			stream.caughtUp();
			streamed(stream);
			for (let beat = 0; beat < 3; beat++) {
				jest.advanceTimersByTime(HEARTBEAT_MS);
				expect(streamed(stream)).toBe(": heartbeat\n\n");
			}
			expect(stream.closed).toBe(false);
			stream.close();
		} finally {
			jest.useRealTimers();
		}
	});

	test("a stream nobody reads (its request answered at its timeout while it was being made) is closed at a heartbeat, counted out", async () => {
		let closes = 0;
		jest.useFakeTimers();
		try {
			const stream = new ChangeStream({ ...start }, everything, () => closes++);
			stream.caughtUp();
			jest.advanceTimersByTime(HEARTBEAT_MS);
			expect(stream.closed).toBe(true);
		} finally {
			jest.useRealTimers();
		}
		// The body's close event comes on the next tick.
		await new Promise(resolve => setImmediate(resolve));
		expect(closes).toBe(1);
	});

	test("a stream closed while its client does not read (a catch-up that failed, a gateway that stops) is cut off at a heartbeat", async () => {
		jest.useFakeTimers();
		try {
			const stream = new ChangeStream({ ...start }, everything, () => undefined);
			const client = new Writable({ highWaterMark: 1024, write: () => undefined });
			pipeline(stream.body, client, () => undefined);
			for (let seq = 1; seq <= 100; seq++) stream.send(gameChange(seq, "x".repeat(500)));
			stream.close();
			jest.advanceTimersByTime(HEARTBEAT_MS - 1);
			expect(stream.body.destroyed).toBe(false);
			jest.advanceTimersByTime(1);
			expect(stream.body.destroyed).toBe(true);
		} finally {
			jest.useRealTimers();
		}
		await new Promise(resolve => setImmediate(resolve));
	});

	test("a stream closed after its client read everything ends, and leaves no timer behind", async () => {
		jest.useFakeTimers({ doNotFake: ["nextTick", "setImmediate", "queueMicrotask"] });
		try {
			const stream = new ChangeStream({ ...start }, everything, () => undefined);
			stream.caughtUp();
			stream.send(gameChange(1));
			stream.close();
			expect(jest.getTimerCount()).toBe(1);
			stream.body.resume();
			await finished(stream.body);
			await new Promise(resolve => setImmediate(resolve));
			expect(jest.getTimerCount()).toBe(0);
		} finally {
			jest.useRealTimers();
		}
	});

	test(`a stream catching up holds back only the kinds it follows: ${WAITING_CHANGES} changes of another kind are not let go`, () => {
		const stream = new ChangeStream({ ...start }, new Set(["categories"] as const), () => undefined);
		for (let seq = 1; seq <= WAITING_CHANGES + 1; seq++) stream.offer(gameChange(seq));
		expect(stream.caughtUp()).toBe(true);
		stream.close();
	});

	test("while catching up, a stream is full past half its bound, and has room again once its client has read", () => {
		const stream = new ChangeStream({ ...start }, everything, () => undefined);
		const title = "x".repeat(1000);
		let seq = 0;
		while (!stream.full) stream.send(gameChange(++seq, title));
		expect(stream.closed).toBe(false);
		// Frames of about 1.2 KB: full at about half of the bound's 256 KB.
		expect(seq).toBeGreaterThan(100);
		expect(seq).toBeLessThan(120);
		streamed(stream);
		expect(stream.full).toBe(false);
		stream.close();
	});

	test("a reset moves the position to where the feed is, and says so", () => {
		const stream = new ChangeStream({ ...start, games: 40 }, everything, () => undefined);
		stream.reset("games", 12);
		expect(stream.at("games")).toBe(12);
		expect(streamed(stream)).toContain(
			`event: reset\nid: authors:0,categories:0,games:12\ndata: {"msg":${JSON.stringify(texts.startAgain)},"kind":"game"}\n`,
		);
		stream.close();
	});
});
