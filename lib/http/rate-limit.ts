import { hash } from "node:crypto";
import ipaddr from "ipaddr.js";
import { Cachers, type ServiceBroker } from "moleculer";
import type { RateLimitSettings } from "moleculer-web";
import { within } from "../async/within";
import type { RateLimit } from "../config/config";
import type { ClientAddress } from "./client-address";

/** How long a request waits for Redis to count it; then the gateway counts it in its own memory. */
export const REDIS_COUNT_WAIT_MS = 250;

/** After Redis failed or was late, how long a gateway counts in its own memory before it asks Redis again. */
export const REDIS_RETRY_MS = 1000;

/** How long a count outlives its window in Redis, so a gateway whose clock runs a little behind adds to the same count. */
export const CLOCK_SKEW_MS = 1000;

/** Lua for Redis: the request counted and the count's expiry set in one step, so no count outlives its window. */
const COUNT_REQUEST = `
local count = redis.call("INCR", KEYS[1])
redis.call("PEXPIRE", KEYS[1], ARGV[1])
return count`;

/** When the window holding `now` began: windows are aligned to the clock, so every gateway is in the same one. */
export const windowStart = (now: number, windowMs: number) => now - (now % windowMs);

/** An address with a port, as some proxies forward it (`203.0.113.1:4711`, `[2001:db8::1]:4711`): a new port is no new client. */
const WITH_PORT = /^(?:(\d+\.\d+\.\d+\.\d+)|\[([\da-f:.]+)\]):\d+$/i;

/**
 * The client the rate limit counts: an IPv4 address; the /64 of an IPv6 one, a subscriber's block, so a fresh address per request
 * does not help; anything else by its digest, so no key is empty (moleculer-web would not count it) or long.
 */
export function rateLimitClient(address: string): string {
	const [, ipv4, ipv6] = WITH_PORT.exec(address) ?? [];
	const bare = ipv4 ?? ipv6 ?? address;
	if (!ipaddr.isValid(bare)) return `#${hash("sha256", address, "base64url")}`;
	const parsed = ipaddr.process(bare);
	if (parsed.kind() === "ipv4") return parsed.toString();
	return `${new ipaddr.IPv6([...(parsed as ipaddr.IPv6).parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}

/**
 * The Redis key of a client's count in one window of one route: the namespace first, so clusters sharing a Redis never count
 * together; the client, the only part a request decides, last.
 */
const countKey = (namespace: string, route: string, start: number, client: string) =>
	`catalogue-rate:${namespace}:${route}:${start}:${client}`;

/** The ioredis calls used here. */
interface RedisClient {
	status: string;
	eval(script: string, keys: 1, key: string, ttlMs: number): Promise<number>;
}

/** The Redis connections this process has said are not counting, until they count again: one warning per outage, for every route. */
const outages = new WeakSet<RedisClient>();

/**
 * A route's counts per client and window, as moleculer-web's `StoreFactory`: in Redis when the cacher is Redis, so every gateway adds
 * to one count; else, or when Redis is late, in this gateway's memory. A request is never failed or held up by its count.
 */
class RequestCounts {
	private readonly redis: RedisClient | null;
	/** Counts kept in memory, for the window that began at `memoryWindow`. */
	private readonly memory = new Map<string, number>();
	private memoryWindow = 0;
	/** Until when Redis is left alone after it failed or was late: one request a second waits for it, not every one. */
	private redisRestsUntil = 0;

	constructor(
		private readonly windowMs: number,
		private readonly route: string,
		private readonly broker: ServiceBroker,
	) {
		this.redis = broker.cacher instanceof Cachers.Redis ? (broker.cacher as Cachers.Redis<RedisClient>).client : null;
	}

	/** When the current window ends (epoch milliseconds): moleculer-web's X-Rate-Limit-Reset, and Retry-After. */
	get resetTime(): number {
		return windowStart(Date.now(), this.windowMs) + this.windowMs;
	}

	/** The client's requests in the current window, this one included. */
	async inc(client: string): Promise<number> {
		const redis = this.redis;
		if (redis && Date.now() >= this.redisRestsUntil) {
			try {
				const count = await this.countInRedis(redis, client);
				if (outages.delete(redis)) this.broker.logger.info("Redis counts the rate limit again, one count for every gateway.");
				return count;
			} catch (err) {
				this.redisRestsUntil = Date.now() + REDIS_RETRY_MS;
				if (!outages.has(redis)) {
					outages.add(redis);
					this.broker.logger.warn(
						`Redis did not count a request for the rate limit (${(err as Error).message}): this gateway counts in its own memory ` +
							"until Redis answers again, so a client may get its limit from each gateway meanwhile.",
					);
				}
			}
		}
		return this.countInMemory(client);
	}

	private async countInRedis(redis: RedisClient, client: string): Promise<number> {
		// Not ready: ioredis would queue the command and send it after reconnecting, counting the request twice.
		if (redis.status !== "ready") throw new Error(`the connection is ${redis.status}`);
		const now = Date.now();
		const start = windowStart(now, this.windowMs);
		const key = countKey(this.broker.namespace, this.route, start, client);
		return Number(await within(redis.eval(COUNT_REQUEST, 1, key, start + this.windowMs - now + CLOCK_SKEW_MS), REDIS_COUNT_WAIT_MS));
	}

	private countInMemory(client: string): number {
		const start = windowStart(Date.now(), this.windowMs);
		if (start !== this.memoryWindow) {
			this.memory.clear();
			this.memoryWindow = start;
		}
		const count = (this.memory.get(client) ?? 0) + 1;
		this.memory.set(client, count);
		return count;
	}
}

/** moleculer-web's rate limit of one route: `limit` requests per client and window, with the X-Rate-Limit-* headers on every answer. */
export function rateLimitSettings({ limit, windowMs }: RateLimit, route: string, clientAddress: ClientAddress): RateLimitSettings {
	return {
		window: windowMs,
		limit,
		headers: true,
		key: req => rateLimitClient(clientAddress(req)),
		StoreFactory: class extends RequestCounts {
			constructor(window: number, _settings: RateLimitSettings | undefined, broker: ServiceBroker) {
				super(window, route, broker);
			}
		},
	};
}
