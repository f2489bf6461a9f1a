import { setImmediate as nextTurn } from "node:timers/promises";
import { Errors, type Context, type ServiceSchema, type ServiceSettingSchema } from "moleculer";
import { feedOff, notAPosition, tooManyStreams } from "../lib/catalogue/errors";
import { config } from "../lib/config/config";
import { DATA_SERVICE_NAMES, type DataServiceName } from "../lib/catalogue/services";
import { CHANGE_TYPES, FEED_PAGE, FEED_SERVICES, parsePosition, type Change, type FeedPage, type Position } from "../lib/feed/changes";
import { ChangeStream, streamParams } from "../lib/feed/sse";
import { rateLimitClient } from "../lib/http/rate-limit";
import type { SignedIn } from "../lib/sign-in/sign-in";

/** Streams one gateway holds at once, and one client address. */
export const STREAM_LIMITS = { total: 1000, perClient: 8 };

/**
 * Changes one read of a stream's catch-up takes: about 100 KB at most (long names; a signed-in reader's `subject` comes on top),
 * which fits in what a stream may hold unsent (STREAM_BUFFER_BYTES) above the half it waits for (`full`): the page is sent whole,
 * and none is held while its client reads.
 */
export const CATCH_UP_PAGE = 50;

/** How often the hub reads each feed, for changes whose broadcast it missed (a node killed after a write, before its broadcast). */
const POLL_MS = 1000;

/** What the route's onBeforeCall hands the action from the request: its Last-Event-ID and who sent it. */
export type StreamMeta = {
	lastEventId?: string;
	clientAddress?: string;
	/** Who opened the stream, when the route needed anyone (AUTH_READS=user). */
	user?: SignedIn | null;
	$responseType?: string;
	$responseHeaders?: Record<string, string>;
};

interface Hub {
	/** The last change handed to the streams, per service; unknown until its feed is first read. */
	position: Partial<Position>;
	streams: Set<ChangeStream>;
	perClient: Map<string, number>;
	/** Clients waiting for the hub to read the feeds before their stream starts. */
	joining: number;
	/** The gateway is stopping: streams are ended, and no new one starts. */
	stopping: boolean;
	/** Each service's read in progress: one at a time, so changes are handed over in order. */
	reading: Partial<Record<DataServiceName, Promise<void>>>;
	/** Each service's read asked for during the one in progress: one for all who asked meanwhile. */
	queued: Partial<Record<DataServiceName, Promise<void>>>;
	/** The last turn given to a catch-up's read (`pageTurn`). */
	turn: Promise<void>;
	poll?: NodeJS.Timeout;
}

type HubMethods = {
	hub: Hub;
	pull(service: DataServiceName): Promise<void>;
	readFeed(service: DataServiceName): Promise<void>;
	heard(change: Change): void;
	offer(change: Change): void;
	catchUpLater(stream: ChangeStream): void;
	catchUp(stream: ChangeStream): Promise<void>;
	catchUpRound(stream: ChangeStream): Promise<void>;
	pageTurn(): Promise<void>;
	endStreams(): void;
};

/**
 * The mark of a logger whose warnings of streams closed early are logged at debug already: on the logger itself, which moleculer
 * keeps per service, so that a reload of this module finds it too.
 */
const QUIETED = Symbol.for("catalogue.closedEarlyQuieted");

/** Whether a log line is moleculer-web's of a change stream closed before its end. */
function closedEarly([message, detail]: unknown[]): boolean {
	const { err, actionName } = (detail ?? {}) as { err?: { code?: string }; actionName?: string };
	return message === "Stream got an error." && actionName === "api.changes" && err?.code === "ERR_STREAM_PREMATURE_CLOSE";
}

/**
 * GET /changes on the gateway (docs/followers.md): one hub per gateway reads the services' feeds while a client follows them, woken
 * by their broadcasts and every POLL_MS, and hands each change to its clients' streams. Every gateway reads the same feeds.
 */
export function changeStream(): Partial<ServiceSchema> {
	const events = Object.fromEntries(
		DATA_SERVICE_NAMES.flatMap(service =>
			CHANGE_TYPES.map(type => [
				`${service}.${type}`,
				function (this: HubMethods, ctx: Context<Change>) {
					this.heard(ctx.params);
				},
			]),
		),
	);
	const schema: Partial<ServiceSchema<ServiceSettingSchema, HubMethods>> = {
		actions: {
			// The change feed as Server-Sent Events, after the position of Last-Event-ID (or `lastEventId`) or from now, of the `kinds`
			// listed (all by default); 400 for a position it did not give, 429 past a client's streams, 503 past the gateway's.
			changes: {
				visibility: "published",
				params: streamParams,
				async handler(ctx: Context<{ kinds?: string; lastEventId?: string }, StreamMeta>) {
					const { hub } = this;
					if (!config.changeFeed) throw feedOff();
					const sent = ctx.meta.lastEventId ?? ctx.params.lastEventId;
					const from = sent === undefined ? undefined : parsePosition(sent);
					if (sent !== undefined && !from) throw notAPosition();
					// Counted as the rate limit counts clients: an IPv6 client by its /64, so fresh addresses do not pass the limit.
					const client = rateLimitClient(ctx.meta.clientAddress ?? "unknown");
					if (hub.stopping) throw new Errors.ServiceNotAvailableError({ action: "api.changes", nodeID: this.broker.nodeID });
					if (hub.streams.size + hub.joining >= STREAM_LIMITS.total) throw tooManyStreams(false);
					if ((hub.perClient.get(client) ?? 0) >= STREAM_LIMITS.perClient) throw tooManyStreams(true);
					// Its places are taken before it waits, so that requests sent at once cannot pass the limits together;
					// counted as joining, the last stream closing meanwhile does not reset the hub under it.
					const leave = () => {
						const open = (hub.perClient.get(client) ?? 1) - 1;
						if (open > 0) hub.perClient.set(client, open);
						else hub.perClient.delete(client);
					};
					hub.perClient.set(client, (hub.perClient.get(client) ?? 0) + 1);
					hub.joining++;
					const began = Date.now();
					try {
						await Promise.all(DATA_SERVICE_NAMES.map(service => this.pull(service)));
						// moleculer has answered the caller at the call's timeout already: nobody would read this stream.
						const timeout = ctx.options.timeout ?? 0;
						if (timeout > 0 && Date.now() - began >= timeout)
							throw new Errors.RequestTimeoutError({ action: "api.changes", nodeID: this.broker.nodeID });
					} catch (err) {
						leave();
						throw err;
					} finally {
						hub.joining--;
					}
					const follows = new Set(
						ctx.params.kinds?.split(",").map(kind => FEED_SERVICES[kind as keyof typeof FEED_SERVICES]) ?? DATA_SERVICE_NAMES,
					);
					const { user } = ctx.meta;
					const reader = { signedIn: Boolean(user), until: user?.until };
					const stream = new ChangeStream(
						{ ...(hub.position as Position), ...from },
						follows,
						() => {
							hub.streams.delete(stream);
							// Followed by no one, the hub reads nothing; the next stream starts it from then.
							if (hub.streams.size === 0 && hub.joining === 0) hub.position = {};
							leave();
						},
						reader,
					);
					hub.streams.add(stream);
					if (hub.stopping) stream.close();
					ctx.meta.$responseType = "text/event-stream; charset=utf-8";
					ctx.meta.$responseHeaders = { "Cache-Control": "no-store", "X-Accel-Buffering": "no" };
					this.catchUpLater(stream);
					return stream.body;
				},
			},
		},
		events,
		methods: {
			/**
			 * Hands over the changes of `service` after the hub's position: one read at a time per service, and a read asked for
			 * during another starts after it, one for all who asked meanwhile; resolves once a read begun after the call is done.
			 */
			pull(service: DataServiceName): Promise<void> {
				const { hub } = this;
				const queued = hub.queued[service];
				if (queued) return queued;
				const running = hub.reading[service];
				const next = (running ?? Promise.resolve()).then(() => {
					if (hub.queued[service] === next) delete hub.queued[service];
					return this.readFeed(service);
				});
				if (running) hub.queued[service] = next;
				const settled = next.catch(() => undefined);
				hub.reading[service] = settled;
				void settled.then(() => {
					if (hub.reading[service] === settled) delete hub.reading[service];
				});
				return next;
			},

			async readFeed(service: DataServiceName): Promise<void> {
				const { hub } = this;
				for (let read = 0; ; read++) {
					// A turn of the event loop between pages: a feed read in the gateway's own process answers with no I/O.
					if (read > 0) await nextTurn();
					const after = hub.position[service];
					const page = await this.broker.call<FeedPage, { after: number }>(`${service}.changes`, {
						after: after ?? Number.MAX_SAFE_INTEGER,
					});
					if (after === undefined) {
						// A new hub follows from now.
						hub.position[service] = page.last;
						return;
					}
					if (page.first > after + 1 || page.last < after) {
						// Changes dropped before the hub read them, or another store: every stream starts again.
						hub.position[service] = page.last;
						for (const stream of hub.streams) stream.reset(service, page.last);
						return;
					}
					for (const change of page.changes) {
						hub.position[service] = change.seq;
						this.offer(change);
					}
					if (page.changes.length < FEED_PAGE) return;
				}
			},

			/** A broadcast change: handed over at once when it is the next one, else the feed is read from the hub's position. */
			heard(change: Change): void {
				const service = FEED_SERVICES[change.kind];
				const { hub } = this;
				const at = hub.position[service];
				if (hub.streams.size === 0 || at === undefined || change.seq <= at) return;
				if (hub.reading[service] === undefined && change.seq === at + 1) {
					hub.position[service] = change.seq;
					this.offer(change);
				} else void this.pull(service).catch(() => undefined);
			},

			/** Hands `change`, just read, to every stream; one that falls behind is caught up from the feeds. */
			offer(change: Change): void {
				for (const stream of this.hub.streams) if (stream.offer(change)) this.catchUpLater(stream);
			},

			/** Catches `stream` up in the background; one that cannot be is closed, and its client resumes where it got to. */
			catchUpLater(stream: ChangeStream): void {
				void this.catchUp(stream).catch((err: Error) => {
					this.logger.warn("A change stream could not catch up:", err.message);
					stream.close();
				});
			},

			/**
			 * Sends `stream` the changes after its position from the feeds, a page at a time as its client reads them, up to the hub's
			 * position or past it (the hub's own come after, and repeat none), then the live ones; in rounds, until a round ends with
			 * every live change it held back handed over (ChangeStream.caughtUp).
			 */
			async catchUp(stream: ChangeStream): Promise<void> {
				do await this.catchUpRound(stream);
				while (!stream.closed && !stream.caughtUp());
			},

			/**
			 * One round of `catchUp`: each kind the stream follows read from the feed up to the hub's position, CATCH_UP_PAGE changes
			 * at a time once its client has read enough for the page to fit (a stream that fell behind starts its round full).
			 */
			async catchUpRound(stream: ChangeStream): Promise<void> {
				for (const service of stream.follows) {
					for (let at = stream.at(service); !stream.closed; at = stream.at(service)) {
						if (stream.full) await stream.roomToWrite();
						await this.pageTurn();
						if (stream.closed) return;
						const page = await this.broker.call<FeedPage, { after: number; limit: number }>(`${service}.changes`, {
							after: at,
							limit: CATCH_UP_PAGE,
						});
						if (page.first > at + 1 || page.last < at) {
							// Pruned past it, or a position ahead of the feed (another store): the client starts again.
							stream.reset(service, this.hub.position[service] ?? page.last);
							break;
						}
						for (const change of page.changes) stream.send(change);
						if (page.changes.length < CATCH_UP_PAGE || stream.at(service) >= (this.hub.position[service] ?? 0)) break;
					}
				}
			},

			/**
			 * Resolves at the next turn of the event loop that no other catch-up's read has: one read a turn among all the streams
			 * catching up, where each taking its own would run them all in one turn. The loop takes new connections and the other
			 * requests between them: Node accepts a connection a turn once busy, so long turns would leave new clients waiting.
			 */
			pageTurn(): Promise<void> {
				const turn = this.hub.turn.then(() => nextTurn());
				this.hub.turn = turn;
				return turn;
			},
		},
		created() {
			// moleculer-web warns "Stream got an error." of every answer closed before its end, which is how a stream of changes ends:
			// its client leaves (a tab closed), or the gateway cuts off one that reads nothing. Those are logged at debug.
			// moleculer keeps one logger per service: a gateway created again in the process (a reload) finds it quieted already.
			const logger = this.logger as typeof this.logger & { [QUIETED]?: true };
			if (!logger[QUIETED]) {
				logger[QUIETED] = true;
				const warn = logger.warn.bind(logger);
				logger.warn = (...args: unknown[]) => (closedEarly(args) ? logger.debug(...args) : warn(...args));
			}
			// Called by the drain (middlewares/drain.middleware.ts) before the gateway stops taking requests.
			this.endStreams = () => {
				this.hub.stopping = true;
				clearInterval(this.hub.poll);
				for (const stream of this.hub.streams) stream.close();
			};
			this.hub = {
				position: {},
				streams: new Set(),
				perClient: new Map(),
				joining: 0,
				reading: {},
				queued: {},
				turn: Promise.resolve(),
				stopping: false,
			};
		},
		started() {
			this.hub.poll = setInterval(() => {
				if (this.hub.streams.size === 0) return;
				for (const service of DATA_SERVICE_NAMES) void this.pull(service).catch(() => undefined);
			}, POLL_MS);
			this.hub.poll.unref();
		},
		stopped() {
			this.endStreams();
		},
	};
	return schema as Partial<ServiceSchema>;
}
