import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { texts } from "../../lib/catalogue/errors";
import type { ConnectionBounds } from "../../lib/config/config";
import { startCatalogue, type Catalogue } from "../support/catalogue";

// The gateway's bounds on connections (lib/http/connections.ts, docs/security.md "Connections"), against the attack of issue 39:
// one address opens more connections than its bound and trickles a header line into each, never ending its headers. Another
// client is on 127.0.0.2 (all of 127.0.0.0/8 is loopback on Linux).

const BOUNDS: ConnectionBounds = { total: 500, perClient: 20, headersTimeoutMs: 2000, keepAliveTimeoutMs: 1000 };

let catalogue: Catalogue;
let port: number;

beforeAll(async () => {
	catalogue = await startCatalogue({ topology: "one-broker", settings: { connections: BOUNDS } });
	port = Number(new URL(catalogue.api.url).port);
}, 30_000);
afterAll(() => catalogue.stop());

/** A raw connection from `from`: what it received, and when it closed (ms after it opened). */
interface Held {
	socket: Socket;
	received: string;
	closedAfterMs?: number;
}

function open(from: string): Promise<Held> {
	return new Promise((resolve, reject) => {
		const opened = Date.now();
		const socket = connect({ host: "127.0.0.1", port, localAddress: from });
		const held: Held = { socket, received: "" };
		socket.setEncoding("utf8").on("data", (chunk: string) => (held.received += chunk));
		socket.on("close", () => (held.closedAfterMs = Date.now() - opened));
		socket.on("error", () => undefined);
		socket.once("connect", () => resolve(held));
		socket.once("error", reject);
	});
}

/** A GET from `from` through Node's client, on a connection of its own: its status. */
function get(path: string, from: string): Promise<number> {
	return new Promise((resolve, reject) => {
		const sent = request({ host: "127.0.0.1", port, path, localAddress: from, agent: false }, response => {
			response.resume().on("end", () => resolve(response.statusCode!));
		});
		sent.on("error", reject);
		sent.end();
	});
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

test("one address past its bound, trickling headers: the extra connections get 429 at once, the rest 408 once their headers are late; another client is served throughout", async () => {
	const held = await Promise.all(Array.from({ length: 3 * BOUNDS.perClient }, () => open("127.0.0.1")));
	const trickle = setInterval(() => {
		for (const { socket } of held) if (socket.writable) socket.write(`X-Slow-${Date.now()}: 1\r\n`);
	}, 300);
	for (const { socket } of held) socket.write("GET /author HTTP/1.1\r\nHost: catalogue\r\n");
	const others: number[] = [];
	try {
		// While the connections are held: another client's reads and the liveness probe, every 100 ms.
		const until = Date.now() + BOUNDS.headersTimeoutMs + 1500;
		while (Date.now() < until) {
			others.push(await get("/author", "127.0.0.2"), await get("/health/live", "127.0.0.2"));
			await sleep(100);
		}
	} finally {
		clearInterval(trickle);
	}
	await sleep(500);
	expect(new Set(others)).toEqual(new Set([200]));
	expect(others.length).toBeGreaterThan(20);

	const refused = held.filter(({ received }) => received.startsWith("HTTP/1.1 429 "));
	const late = held.filter(({ received }) => received.startsWith("HTTP/1.1 408 "));
	expect({ refused: refused.length, late: late.length }).toEqual({ refused: 2 * BOUNDS.perClient, late: BOUNDS.perClient });
	for (const { received, closedAfterMs } of refused) {
		expect(JSON.parse(received.split("\r\n\r\n")[1])).toEqual({ msg: texts.tooManyConnections });
		expect(closedAfterMs).toBeLessThan(500);
	}
	for (const { received, closedAfterMs } of late) {
		expect(JSON.parse(received.split("\r\n\r\n")[1])).toEqual({ msg: texts.requestTooSlow });
		// Node checks its connections every second.
		expect(closedAfterMs).toBeGreaterThanOrEqual(BOUNDS.headersTimeoutMs - 100);
		expect(closedAfterMs).toBeLessThan(BOUNDS.headersTimeoutMs + 1500);
	}
	// Closed, the address may connect again.
	expect(await get("/health/live", "127.0.0.1")).toBe(200);
}, 30_000);

test("a connection that sends nothing is closed once the headers are late", async () => {
	const silent = await open("127.0.0.3");
	await sleep(BOUNDS.headersTimeoutMs + 1500);
	expect(silent.closedAfterMs).toBeGreaterThanOrEqual(BOUNDS.headersTimeoutMs - 100);
	expect(silent.closedAfterMs).toBeLessThan(BOUNDS.headersTimeoutMs + 1500);
});

test("a kept-alive connection idle after its answer is closed after KEEP_ALIVE_TIMEOUT", async () => {
	const kept = await open("127.0.0.4");
	kept.socket.write("GET /health/live HTTP/1.1\r\nHost: catalogue\r\n\r\n");
	// Node waits its keepAliveTimeoutBuffer (1 s) more, for a client's request already under way.
	await sleep(BOUNDS.keepAliveTimeoutMs + 2000);
	expect(kept.received).toMatch(/^HTTP\/1\.1 200 /);
	expect(kept.closedAfterMs).toBeGreaterThanOrEqual(BOUNDS.keepAliveTimeoutMs - 100);
	expect(kept.closedAfterMs).toBeLessThan(BOUNDS.keepAliveTimeoutMs + 2000);
});

describe("other gateways", () => {
	const started: Catalogue[] = [];
	afterAll(() => Promise.all(started.map(each => each.stop())));
	const gateway = async (settings: Parameters<typeof startCatalogue>[0]) => {
		const other = await startCatalogue({ topology: "one-broker", ...settings });
		started.push(other);
		return Number(new URL(other.api.url).port);
	};

	test("past MAX_CONNECTIONS in all, each new connection is closed at once", async () => {
		port = await gateway({ settings: { connections: { ...BOUNDS, total: 5, perClient: 100 } } });
		const held = await Promise.all(Array.from({ length: 5 }, () => open("127.0.0.5")));
		const extra = await open("127.0.0.6");
		await sleep(300);
		expect({ extra: extra.closedAfterMs !== undefined, received: extra.received }).toEqual({ extra: true, received: "" });
		expect(held.filter(each => each.closedAfterMs !== undefined)).toEqual([]);
		for (const { socket } of held) socket.destroy();
	});

	test("a proxy TRUST_PROXY declares is not held to one client's bound: it carries many", async () => {
		port = await gateway({ settings: { connections: { ...BOUNDS, perClient: 2 }, trustProxy: { proxies: ["127.0.0.7"] } } });
		const proxied = await Promise.all(Array.from({ length: 6 }, () => open("127.0.0.7")));
		const direct = await Promise.all(Array.from({ length: 3 }, () => open("127.0.0.8")));
		for (const { socket } of [...proxied, ...direct]) socket.write("GET /health/live HTTP/1.1\r\nHost: catalogue\r\n\r\n");
		await sleep(300);
		expect(proxied.map(each => each.received.slice(0, 12))).toEqual(Array(6).fill("HTTP/1.1 200"));
		expect(direct.map(each => each.received.slice(0, 12)).sort()).toEqual(["HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 429"]);
		for (const { socket } of [...proxied, ...direct]) socket.destroy();
	}, 30_000);
});
