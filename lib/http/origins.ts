/**
 * Browser origins and CORS_ORIGINS: which origins a front end may call from, and the warning that tells the operator about a
 * front end calling from another one, which otherwise fails in its browser with nothing in the gateway's log.
 */
import type { IncomingMessage } from "node:http";
import type { Logger } from "moleculer";
import { LRUCache } from "lru-cache";

/** Origins warned about and remembered at once: any client can send endlessly many, so the least recent are forgotten (and warned about again). */
const ORIGINS_KEPT = 256;

/** New origins told of in one minute at most; the others are counted, and the count told with the next minute's first. */
const ORIGINS_TOLD_PER_MINUTE = 20;

/** The longest origin told in full: an Origin header is whatever the client writes, up to the headers' 16 kB. */
const ORIGIN_SHOWN = 200;

/** Whether CORS_ORIGINS (`origins`) lets `origin` call; compared whole, as moleculer-web's own check of a listed origin is not. */
export const isListedOrigin = (origins: readonly string[], origin: string): boolean => origins.includes("*") || origins.includes(origin);

/** Whether `origin` is the gateway's own address, as the request reached it: the browser reads those answers without CORS. */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
	return URL.canParse(origin) && new URL(origin).host === host;
}

/**
 * One warning per browser origin whose calls CORS_ORIGINS does not let through: with it unset, answers to another origin carry no
 * Access-Control-Allow-Origin (the browser hides them from the page); with it set, the gateway refuses the origin (403).
 */
export class UnlistedOrigins {
	private readonly warned = new LRUCache<string, true>({ max: ORIGINS_KEPT });
	/** The current minute's warnings, and the origins past ORIGINS_TOLD_PER_MINUTE left untold in it. */
	private minute = { until: 0, told: 0, untold: 0 };

	constructor(
		private readonly logger: Pick<Logger, "warn">,
		private readonly origins: readonly string[],
		private readonly now: () => number = Date.now,
	) {}

	/** Whether another origin may be told of this minute: a client sending a new Origin with each request must not fill the log. */
	private mayTell(): string | null {
		const now = this.now();
		if (now >= this.minute.until) {
			const untold = this.minute.untold;
			this.minute = { until: now + 60_000, told: 0, untold: 0 };
			if (untold > 0) return ` (${untold} more origins were not told of in the minute before)`;
		}
		if (this.minute.told < ORIGINS_TOLD_PER_MINUTE) return "";
		this.minute.untold++;
		return null;
	}

	note(req: IncomingMessage): void {
		const sent = req.headers.origin;
		if (sent === undefined || isListedOrigin(this.origins, sent)) return;
		const open = this.origins.length === 0;
		const origin = sent.length > ORIGIN_SHOWN ? `${sent.slice(0, ORIGIN_SHOWN)}…` : sent;
		if ((open && isOwnOrigin(sent, req.headers.host)) || this.warned.get(origin)) return;
		const more = this.mayTell();
		if (more === null) return;
		this.minute.told++;
		this.warned.set(origin, true);
		this.logger.warn(
			(open
				? `A browser at ${origin} called the API; its answers carry no Access-Control-Allow-Origin: add it to CORS_ORIGINS to let it read them`
				: `A browser at ${origin} called the API and was refused (403): add it to CORS_ORIGINS to let it call`) + more,
		);
	}
}
