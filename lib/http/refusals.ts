import type { Logger } from "moleculer";

/** How long the refusals of one kind share a log line: an outage writes a few lines a minute, not one per request. */
const REFUSAL_WINDOW_MS = 20_000;

/** Kinds remembered at once; past it they are forgotten together (each then logs once more). */
const KINDS_KEPT = 256;

/**
 * The gateway's log of refused requests and connections (401, 403, 503, connections over the bound): one warning without a stack
 * per kind of refusal per REFUSAL_WINDOW_MS, the first at once, with its reason; the next line of that kind counts those between.
 * The kind is the answer (status and text), which the gateway chooses: a reason a client can vary (a token's key id) is told, but
 * does not make a line of its own.
 */
export class RefusalLog {
	private readonly kinds = new Map<string, { until: number; more: number }>();

	constructor(
		private readonly logger: Logger,
		private readonly windowMs = REFUSAL_WINDOW_MS,
	) {}

	note(kind: string, reason: string | undefined, fields: object): void {
		const now = Date.now();
		const last = this.kinds.get(kind);
		if (last && now < last.until) {
			last.more++;
			return;
		}
		if (!last && this.kinds.size >= KINDS_KEPT) this.kinds.clear();
		this.kinds.set(kind, { until: now + this.windowMs, more: 0 });
		const more = last?.more ? ` (${last.more} more since the last line of this kind)` : "";
		this.logger.warn(fields, `Refused: ${kind}${reason ? `: ${reason}` : ""}${more}`);
	}
}
