import type { IncomingMessage } from "node:http";
import { ServiceBroker } from "moleculer";
import type { RateLimitStore } from "moleculer-web";
import { rateLimitClient, rateLimitSettings, windowStart } from "../../lib/http/rate-limit";

// The rate limit's counts in a gateway's memory, as a gateway without Redis keeps them, and the
// keys it counts by (docs/security.md). Counting in Redis: test/integration/rate-limit.test.ts.

const WINDOW_MS = 60_000;
/** A time 10 s into a window. */
const IN_A_WINDOW = windowStart(Date.UTC(2030, 0, 1, 12), WINDOW_MS) + 10_000;

let broker: ServiceBroker;
beforeAll(() => (broker = new ServiceBroker({ logger: false })));
afterEach(() => jest.useRealTimers());

/** The store moleculer-web builds for a route, as it builds it. */
function storeOf(route: string): RateLimitStore {
	const settings = rateLimitSettings({ limit: 3, windowMs: WINDOW_MS }, route, (req: IncomingMessage) => req.socket.remoteAddress ?? "");
	const Store = settings.StoreFactory as unknown as new (window: number, opts: unknown, broker: ServiceBroker) => RateLimitStore;
	return new Store(WINDOW_MS, settings, broker);
}

describe("the counts in memory", () => {
	test("each client is counted on its own, and from one again when the clock reaches the next window", async () => {
		jest.useFakeTimers({ now: IN_A_WINDOW });
		const store = storeOf("catalogue");
		expect([await store.inc("203.0.113.1"), await store.inc("203.0.113.1"), await store.inc("203.0.113.2")]).toEqual([1, 2, 1]);
		expect(store.resetTime).toBe(IN_A_WINDOW - 10_000 + WINDOW_MS);
		jest.setSystemTime(store.resetTime - 1);
		expect(await store.inc("203.0.113.1")).toBe(3);
		jest.setSystemTime(store.resetTime);
		expect(await store.inc("203.0.113.1")).toBe(1);
	});

	test("windows follow the clock, not the gateway's start: gateways started apart end each window together", () => {
		jest.useFakeTimers({ now: IN_A_WINDOW });
		const first = storeOf("catalogue");
		jest.setSystemTime(IN_A_WINDOW + 35_000);
		expect(storeOf("catalogue").resetTime).toBe(first.resetTime);
	});
});

describe("rateLimitClient", () => {
	test("an IPv4 address is its own client, as sent or seen as IPv6", () => {
		expect(rateLimitClient("203.0.113.1")).toBe("203.0.113.1");
		expect(rateLimitClient("::ffff:203.0.113.1")).toBe("203.0.113.1");
	});

	test("an IPv6 address counts as its /64: one subscriber cannot take a fresh budget with every address of its block", () => {
		expect(rateLimitClient("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
		expect(rateLimitClient("2001:0db8:0001:0002:0:0:0:1")).toBe("2001:db8:1:2::/64");
		expect(rateLimitClient("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
		expect(rateLimitClient("::1")).toBe("::/64");
	});

	test("a port some proxies forward with the address is no new client", () => {
		expect(rateLimitClient("203.0.113.1:4711")).toBe("203.0.113.1");
		expect(rateLimitClient("[2001:db8:1:2::1]:4711")).toBe("2001:db8:1:2::/64");
	});

	test("anything else is named by its digest: never empty (moleculer-web would not count it), never long", () => {
		const keys = ["", "unknown", "x".repeat(10_000), "203.0.113.1:", "[203.0.113.1]"].map(rateLimitClient);
		for (const key of keys) expect(key).toMatch(/^#[\w-]{43}$/);
		expect(new Set(keys).size).toBe(keys.length);
	});
});
