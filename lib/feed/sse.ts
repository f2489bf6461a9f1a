/**
 * The change feed as Server-Sent Events (GET /changes, docs/followers.md): one client's stream, its frames and its bounds. The
 * gateway's hub (mixins/change-stream.mixin.ts) hands every stream the changes it reads, in each kind's order.
 */
import { PassThrough } from "node:stream";
import { texts } from "../catalogue/errors";
import type { DataServiceName } from "../catalogue/services";
import { FEED_KINDS, FEED_SERVICES, positionText, type Change, type Position } from "./changes";

/**
 * Bytes a stream may hold unsent. A live stream whose client reads slower than the changes come falls behind there: it is sent the
 * feed as its client reads, as a client catching up is, and a client that reads nothing is closed (`roomToWrite`, `beat`).
 */
export const STREAM_BUFFER_BYTES = 256 * 1024;

/** Live changes a stream that is catching up holds back; beyond, it lets them go and reads them from the feed in another round. */
export const WAITING_CHANGES = 1000;

/** The longest a Node timer waits (2^31 - 1 ms, about 24.8 days): a longer one fires at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** How often an idle stream gets a comment line, so that proxies and the client see it alive. */
export const HEARTBEAT_MS = 15_000;

const KINDS = Object.keys(FEED_SERVICES).join("|");

/** GET /changes's query: the kinds followed, and where to resume for a client that cannot send Last-Event-ID. */
export const streamParams = {
	$$strict: "remove",
	kinds: {
		type: "string",
		optional: true,
		pattern: new RegExp(`^(${KINDS})(,(${KINDS}))*$`),
		messages: { stringPattern: texts.unknownKinds },
	},
	lastEventId: { type: "string", optional: true, max: 200 },
} as const;

/** How long a client waits before it reconnects (the `retry` field). */
const RECONNECT_MS = 2000;

/** One event's text: JSON on one line, U+2028 and U+2029 escaped as well, since some clients split lines at them. */
export function frame(event: string | undefined, id: string | undefined, data: unknown): string {
	const json = JSON.stringify(data)
		.replace(/\u2028/g, "\\u2028")
		.replace(/\u2029/g, "\\u2029");
	return `${event ? `event: ${event}\n` : ""}${id === undefined ? "" : `id: ${id}\n`}data: ${json}\n\n`;
}

/** Who reads a stream: signed in or not, and until when its sign-in holds (a token's `exp`), if it ends. */
export interface StreamReader {
	signedIn: boolean;
	until?: number;
}

/**
 * One client's stream: the changes of the kinds it follows, each sent once after its position. While it catches up from the
 * feeds (the hub's `catchUp`, in rounds), the changes the hub hands it wait, so that it sends every kind's changes in order.
 */
export class ChangeStream {
	readonly body = new PassThrough();
	/** The live changes held back while a round of catching up runs; undefined once the stream is live. */
	private waiting: Change[] | undefined = [];
	/** Live changes were let go during this round (more than WAITING_CHANGES): another round reads them. */
	private dropped = false;
	/** Whether `ready` was sent: once, when the stream first caught up. */
	private ready = false;
	private heartbeat: NodeJS.Timeout;
	private ended = false;
	/** Bytes written into the stream, and how many of them its client had read at the last heartbeat. */
	private written = 0;
	private readAtBeat = 0;

	private expiry: NodeJS.Timeout | undefined;

	constructor(
		/** The last change sent of each kind. */
		private readonly position: Position,
		readonly follows: ReadonlySet<DataServiceName>,
		private readonly onClose: () => void,
		/** Who reads it: only a signed-in reader is told who made each change (`subject`), and a sign-in that expires ends the stream. */
		private readonly reader: StreamReader = { signedIn: false },
	) {
		this.write(`retry: ${RECONNECT_MS}\n\n`);
		this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
		this.heartbeat.unref();
		if (reader.until !== undefined) this.endAt(reader.until);
		this.body.once("close", () => this.close());
	}

	/** Closes the stream at `until` (ms since the epoch): a time further than a timer waits is waited for in steps. */
	private endAt(until: number): void {
		const wait = Math.max(0, until - Date.now());
		this.expiry = setTimeout(() => (wait > LONGEST_TIMER_MS ? this.endAt(until) : this.close()), Math.min(wait, LONGEST_TIMER_MS));
		this.expiry.unref();
	}

	get closed(): boolean {
		return this.ended || this.body.destroyed;
	}

	/** Bytes written that the client has not read yet. */
	private get unread(): number {
		return this.body.readableLength + this.body.writableLength;
	}

	/** Whether the client should read what it was sent before more is written (`roomToWrite`): past half the stream's bound. */
	get full(): boolean {
		return this.unread > STREAM_BUFFER_BYTES / 2;
	}

	/**
	 * Resolves once the client has read what it was sent down to half the stream's bound (or the stream is closed); a client that
	 * reads nothing for HEARTBEAT_MS meanwhile is closed.
	 */
	async roomToWrite(): Promise<void> {
		const deadline = Date.now() + HEARTBEAT_MS;
		while (!this.closed && this.full) {
			if (Date.now() > deadline) {
				this.body.destroy();
				return;
			}
			await new Promise(resolve => setTimeout(resolve, 10));
		}
	}

	/** Where the stream is in `service`'s feed. */
	at(service: DataServiceName): number {
		return this.position[service];
	}

	/**
	 * A change read live: sent now, or held back while a round of catching up runs. True when the stream has just fallen behind (its
	 * client holds STREAM_BUFFER_BYTES unread): the change is not sent, and the caller catches the stream up from the feeds.
	 */
	offer(change: Change): boolean {
		// Not held back while catching up either: a kind not followed would fill the stream's place for the others.
		if (this.closed || !this.follows.has(FEED_SERVICES[change.kind])) return false;
		if (this.waiting) {
			if (!this.dropped && this.waiting.length < WAITING_CHANGES) this.waiting.push(change);
			else {
				this.dropped = true;
				this.waiting = [];
			}
			return false;
		}
		if (this.unread > STREAM_BUFFER_BYTES) {
			this.waiting = [];
			return true;
		}
		this.send(change);
		return false;
	}

	/** A change read while catching up. */
	send(change: Change): void {
		const service = FEED_SERVICES[change.kind];
		if (!this.follows.has(service) || change.seq <= this.position[service]) return;
		this.position[service] = change.seq;
		// Who made a change is for signed-in readers: a public feed would tell anyone the editors' names (a `sub` may be an email).
		const shown = this.reader.signedIn || change.subject === undefined ? change : { ...change, subject: undefined };
		this.write(frame(undefined, positionText(this.position), shown));
	}

	/** The feed no longer holds the changes after the stream's position in `service`: says so, and carries on from `last`. */
	reset(service: DataServiceName, last: number): void {
		if (!this.follows.has(service)) return;
		this.position[service] = last;
		this.write(frame("reset", positionText(this.position), { msg: texts.startAgain, kind: FEED_KINDS[service] }));
	}

	/**
	 * The end of a round of catching up: the `ready` event the first time, which names the position, then the changes held back
	 * meanwhile, and the stream is live. False when another round must read from the feeds first: live changes were let go during
	 * this one, or its client fell behind again while they were handed over.
	 */
	caughtUp(): boolean {
		const waiting = this.waiting ?? [];
		this.waiting = [];
		if (this.dropped) {
			this.dropped = false;
			return false;
		}
		if (!this.ready) {
			this.ready = true;
			this.write(frame("ready", positionText(this.position), { position: positionText(this.position) }));
		}
		for (const change of waiting) {
			if (this.unread > STREAM_BUFFER_BYTES) return false;
			this.send(change);
		}
		this.waiting = undefined;
		return true;
	}

	/**
	 * A heartbeat; or the end of a stream whose client has read nothing of what waited for it since the last one: gone, or never there
	 * (a request answered at its timeout while its stream was being made), so that it does not hold its places for ever.
	 */
	private beat(): void {
		const read = this.written - this.unread;
		if (this.unread > 0 && read === this.readAtBeat) {
			this.body.destroy();
			return;
		}
		this.readAtBeat = read;
		this.write(": heartbeat\n\n");
	}

	/**
	 * Writes `text`. The bound is kept by the writers of changes, the only long frames: a live change is not sent past it (`offer`,
	 * `caughtUp`), and a catch-up waits for room before each (`roomToWrite`); a heartbeat, `ready` or `reset` is written as it comes,
	 * so that a stream being caught up is not closed by one.
	 */
	private write(text: string): void {
		if (this.closed) return;
		this.body.write(text);
		this.written += Buffer.byteLength(text);
	}

	/**
	 * Ends the stream once its client has read what it was sent; a client that has not within HEARTBEAT_MS is cut off, since the
	 * stream no longer counts against the bounds (its places are released now).
	 */
	close(): void {
		if (this.ended) return;
		this.ended = true;
		clearInterval(this.heartbeat);
		clearTimeout(this.expiry);
		if (!this.body.destroyed) {
			this.body.end();
			const cutOff = setTimeout(() => this.body.destroy(), HEARTBEAT_MS).unref();
			this.body.once("close", () => clearTimeout(cutOff));
		}
		this.onClose();
	}
}
