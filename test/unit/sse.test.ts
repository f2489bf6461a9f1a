import { pipeline, Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { texts } from "../../lib/catalogue/errors";
import { ChangeStream, frame, HEARTBEAT_MS, STREAM_BUFFER_BYTES, WAITING_CHANGES } from "../../lib/feed/sse";
import { gameChange } from "../support/sse";

const start = { authors: 0, categories: 0, games: 0 };
const everything = new Set(["authors", "categories", "games"] as const);

function streamed(stream: ChangeStream): string {
	return String(stream.body.read() ?? "");
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

	test("a client that reads nothing is closed once the stream holds its bound, and counted out once", () => {
		let closes = 0;
		const stream = new ChangeStream({ ...start }, everything, () => closes++);
		stream.caughtUp();
		const title = "x".repeat(1000);
		let seq = 0;
		while (!stream.closed && seq < 10_000) stream.offer(gameChange(++seq, title));
		expect(stream.closed).toBe(true);
		// The frames written before it closed: the bound, and at most one frame more.
		const each = frame(undefined, "authors:0,categories:0,games:1000", gameChange(1, title)).length;
		expect((seq - 1) * each).toBeGreaterThan(STREAM_BUFFER_BYTES - 2 * each);
		expect((seq - 1) * each).toBeLessThan(STREAM_BUFFER_BYTES + 2 * each);
		stream.close();
		expect(closes).toBe(1);
	});

	test(`a stream still catching up holds back ${WAITING_CHANGES} live changes at most, then is closed`, () => {
		const stream = new ChangeStream({ ...start }, everything, () => undefined);
		for (let seq = 1; seq <= WAITING_CHANGES; seq++) stream.offer(gameChange(seq));
		expect(stream.closed).toBe(false);
		stream.offer(gameChange(WAITING_CHANGES + 1));
		expect(stream.closed).toBe(true);
		stream.close();
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

	test(`a stream catching up holds back only the kinds it follows: ${WAITING_CHANGES} changes of another kind do not close it`, () => {
		const stream = new ChangeStream({ ...start }, new Set(["categories"] as const), () => undefined);
		for (let seq = 1; seq <= WAITING_CHANGES + 1; seq++) stream.offer(gameChange(seq));
		expect(stream.closed).toBe(false);
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
