import { randomUUID } from "node:crypto";
import { request } from "node:http";
import Redis from "ioredis";
import { ServiceBroker } from "moleculer";
import { cacherOptions } from "../../lib/cache/cache";
import { config } from "../../lib/config/config";
import { CLOCK_SKEW_MS, REDIS_COUNT_WAIT_MS, REDIS_RETRY_MS, windowStart } from "../../lib/http/rate-limit";
import { apiService } from "../../services/api.service";
import { gatewayApi } from "../support/catalogue";
import { startNats, type NatsServer } from "../support/nats";
import { waitFor } from "../support/process";
import { roomInWindow } from "../support/rate-limit";
import { startRedis, type RedisServer } from "../support/redis";

// Two gateways over one NATS sharing a Redis of this test's own, as a cluster runs them behind a
// load balancer (docs/security.md): one count per client whichever gateway it reaches, clients
// known through the proxy TRUST_PROXY declares (127.0.0.1) and no other, and every request still
// answered, limited per gateway, while Redis is late or gone. Clients come from addresses of
// 127.0.0.0/8, each test its own.

const LIMIT = 3;
/** A day: the longest window, so that no test runs across two windows (roomInWindow makes sure). */
const WINDOW_MS = 86_400_000;
/** The one proxy the gateways believe. */
const PROXY = "127.0.0.1";

let nats: NatsServer;
let redis: RedisServer;
const namespace = `rate-limit-${randomUUID()}`;
const gateways: ServiceBroker[] = [];
const urls: string[] = [];

beforeAll(async () => {
	[nats, redis] = await Promise.all([startNats(), startRedis()]);
	for (const name of ["a", "b"]) {
		const broker = new ServiceBroker({
			nodeID: `gateway-${name}-${process.pid}`,
			namespace,
			transporter: { type: "NATS", options: { url: nats.url } },
			cacher: cacherOptions({ mongoUri: null, redisUrl: redis.url, transporter: nats.url, cacheMaxBytes: 0 }),
			logger: false,
		});
		broker.createService(
			apiService({ ...config, port: 0, rateLimit: { limit: LIMIT, windowMs: WINDOW_MS }, trustProxy: { proxies: [PROXY] } }),
		);
		gateways.push(broker);
	}
	await Promise.all(gateways.map(broker => broker.start()));
	urls.push(...gateways.map(broker => gatewayApi(broker).url));
}, 30_000);
afterAll(async () => {
	await Promise.all(gateways.map(broker => broker.stop()));
	await Promise.all([nats?.stop(), redis?.stop()]);
});

interface Answer {
	status: number;
	remaining: string | undefined;
	retryAfter: string | undefined;
	reset: string | undefined;
}

/** GET /health/live (answered by the gateway alone) of gateway `gateway`, sent from `from`, with an X-Forwarded-For if given. */
function live(gateway: number, from: string, forwardedFor?: string): Promise<Answer> {
	const headers: Record<string, string> = forwardedFor === undefined ? {} : { "X-Forwarded-For": forwardedFor };
	return new Promise((resolve, reject) => {
		const sent = request(`${urls[gateway]}/health/live`, { localAddress: from, headers, agent: false }, response => {
			response.resume();
			response.on("end", () =>
				resolve({
					status: response.statusCode!,
					remaining: response.headers["x-rate-limit-remaining"] as string | undefined,
					retryAfter: response.headers["retry-after"],
					reset: response.headers["x-rate-limit-reset"] as string | undefined,
				}),
			);
		});
		sent.on("error", reject);
		sent.end();
	});
}

/** Sends the requests one after the other, each to the gateway it names, and returns their statuses. */
async function statuses(requests: [gateway: number, from: string, forwardedFor?: string][]): Promise<number[]> {
	const answered: number[] = [];
	for (const [gateway, from, forwardedFor] of requests) answered.push((await live(gateway, from, forwardedFor)).status);
	return answered;
}

beforeEach(() => roomInWindow(WINDOW_MS, 10_000), 15_000);

test("two gateways sharing Redis refuse a client's request past its limit, whichever gateway it reaches", async () => {
	const client = "127.0.0.3";
	const allowed = [await live(0, client), await live(1, client), await live(0, client)];
	expect(allowed.map(answer => [answer.status, answer.remaining])).toEqual([
		[200, "2"],
		[200, "1"],
		[200, "0"],
	]);
	// Both gateways name the same end of the window.
	expect(new Set(allowed.map(answer => answer.reset)).size).toBe(1);
	for (const gateway of [1, 0]) {
		const refused = await live(gateway, client);
		expect(refused.status).toBe(429);
		expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
		expect(Number(refused.retryAfter)).toBeLessThanOrEqual(WINDOW_MS / 1000);
	}
});

test("a forwarded address from a proxy not declared is ignored: the client is limited by its connection's address", async () => {
	const client = "127.0.0.2";
	const forwarded = ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4", "203.0.113.5"];
	expect(await statuses(forwarded.map((address, index) => [index % 2, client, address]))).toEqual([200, 200, 200, 429, 429]);
});

test("two clients behind the declared proxy are limited separately, each by the address the proxy forwarded", async () => {
	const first = "198.51.100.1";
	const second = "198.51.100.2";
	expect(await statuses([0, 1, 0, 1].map(gateway => [gateway, PROXY, first]))).toEqual([200, 200, 200, 429]);
	expect(await statuses([1, 0, 1, 0].map(gateway => [gateway, PROXY, second]))).toEqual([200, 200, 200, 429]);
	// An address the first client wrote itself, before the one the proxy appended, buys it nothing.
	expect(await statuses([[0, PROXY, `203.0.113.77, ${first}`]])).toEqual([429]);
});

test("the counts are kept under the cluster's namespace, one key per client, and expire with their window", async () => {
	await statuses([[0, "127.0.0.9"]]);
	const admin = new Redis(redis.url);
	try {
		const keys = await admin.keys("catalogue-rate:*");
		expect(keys.length).toBeGreaterThan(0);
		const start = windowStart(Date.now(), WINDOW_MS);
		expect(keys).toContain(`catalogue-rate:${namespace}:catalogue:${start}:127.0.0.9`);
		for (const key of keys) {
			expect(key.startsWith(`catalogue-rate:${namespace}:catalogue:${start}:`)).toBe(true);
			const ttl = await admin.pttl(key);
			expect(ttl).toBeGreaterThan(0);
			expect(ttl).toBeLessThanOrEqual(start + WINDOW_MS + CLOCK_SKEW_MS - Date.now() + 50);
		}
	} finally {
		admin.disconnect();
	}
});

/** Each request answered within this while Redis is late or gone: its wait for Redis, and room for a slow machine. */
const ANSWERED_WITHIN_MS = REDIS_COUNT_WAIT_MS + 750;

/** The statuses of `count` requests from `client` to `gateway`, each answered within ANSWERED_WITHIN_MS. */
async function answeredAtOnce(gateway: number, client: string, count: number): Promise<number[]> {
	const answered: number[] = [];
	for (let index = 0; index < count; index++) {
		const started = Date.now();
		answered.push((await live(gateway, client)).status);
		expect(Date.now() - started).toBeLessThan(ANSWERED_WITHIN_MS);
	}
	return answered;
}

/** Once a gateway has failed to count in Redis, it asks Redis again after REDIS_RETRY_MS. */
const redisAskedAgain = () => new Promise(resolve => setTimeout(resolve, REDIS_RETRY_MS + 100));

test("Redis late: every request is answered at once, limited by each gateway in its own memory; in time again, the count is shared", async () => {
	const admin = new Redis(redis.url);
	// Redis holds every client's commands for 3 s: reachable, but late.
	await admin.call("CLIENT", "PAUSE", "3000", "ALL");
	const paused = Date.now();
	admin.disconnect();
	expect(await answeredAtOnce(0, "127.0.0.4", LIMIT + 1)).toEqual([200, 200, 200, 429]);
	expect(await answeredAtOnce(1, "127.0.0.4", LIMIT + 1)).toEqual([200, 200, 200, 429]);

	await new Promise(resolve => setTimeout(resolve, paused + 3000 - Date.now()));
	await redisAskedAgain();
	expect(await statuses([0, 1, 0, 1].map(gateway => [gateway, "127.0.0.7"]))).toEqual([200, 200, 200, 429]);
}, 15_000);

test("Redis gone: every request is answered at once, limited by each gateway, with one warning each; back, the count is shared again", async () => {
	const warnings = gateways.map(broker => jest.spyOn(broker.logger, "warn"));
	const infos = gateways.map(broker => jest.spyOn(broker.logger, "info"));
	await redis.stop();
	await waitFor(
		"both gateways notice Redis is gone",
		async () => gateways.every(broker => broker.cacher?.connected === false),
		[],
		15_000,
	);

	const client = "127.0.0.5";
	expect(await answeredAtOnce(0, client, LIMIT + 1)).toEqual([200, 200, 200, 429]);
	expect(await answeredAtOnce(1, client, LIMIT + 1)).toEqual([200, 200, 200, 429]);
	// Each gateway asks Redis again, still in vain, and says nothing more.
	await redisAskedAgain();
	expect([...(await answeredAtOnce(0, client, 1)), ...(await answeredAtOnce(1, client, 1))]).toEqual([429, 429]);
	for (const warn of warnings) {
		const said = warn.mock.calls.filter(([message]) => String(message).startsWith("Redis did not count a request for the rate limit"));
		expect(said).toHaveLength(1);
	}

	await redis.start();
	await waitFor("both gateways reconnect to Redis", async () => gateways.every(broker => broker.cacher?.connected === true), [], 15_000);
	// What the gateways counted in their memory is not sent to Redis once it is back: counted twice, it would cut the client short.
	const admin = new Redis(redis.url);
	expect(await admin.keys(`catalogue-rate:*:${client}`)).toEqual([]);
	admin.disconnect();
	await redisAskedAgain();
	expect(await statuses([0, 1, 0, 1].map(gateway => [gateway, "127.0.0.6"]))).toEqual([200, 200, 200, 429]);
	for (const info of infos)
		expect(info.mock.calls.some(([message]) => String(message).startsWith("Redis counts the rate limit again"))).toBe(true);
}, 60_000);
