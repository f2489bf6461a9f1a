import { within } from "../../lib/async/within";

// lib/async/within.ts: the bound in time of the commands sent to Redis and of the NATS round trip.

afterEach(() => jest.useRealTimers());

test("an answer in time is the answer, and leaves no timer behind", async () => {
	jest.useFakeTimers();
	await expect(within(Promise.resolve("PONG"), 1000)).resolves.toBe("PONG");
	expect(jest.getTimerCount()).toBe(0);
});

test("a failure in time is that failure", async () => {
	jest.useFakeTimers();
	await expect(within(Promise.reject(new Error("connection is closed")), 1000)).rejects.toThrow("connection is closed");
	expect(jest.getTimerCount()).toBe(0);
});

test("no answer by then: a rejection that says how long it waited", async () => {
	jest.useFakeTimers();
	const waiting = within(new Promise(() => undefined), 250);
	jest.advanceTimersByTime(249);
	const settled = jest.fn();
	void waiting.then(settled, settled);
	await Promise.resolve();
	expect(settled).not.toHaveBeenCalled();
	jest.advanceTimersByTime(1);
	await expect(waiting).rejects.toThrow("no answer within 250 ms");
	expect(jest.getTimerCount()).toBe(0);
});
