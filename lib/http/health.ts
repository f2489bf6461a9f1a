import { OUTBOX_STALLED, texts, WRITES_REFUSED } from "../catalogue/errors";

/** The health paths every node answers: on HEALTH_PORT, and on the gateway's own port. */
const HEALTH_PATHS = ["/health/live", "/health/ready"] as const;
export type HealthPath = (typeof HEALTH_PATHS)[number];

export const isHealthPath = (path: string | undefined): path is HealthPath =>
	(HEALTH_PATHS as readonly (string | undefined)[]).includes(path);

/** What a node is waiting for: nothing once it is ready. */
export interface Readiness {
	ready: boolean;
	/**
	 * `node` (not started, stopping, or NATS lost), the services whose `ready` did not answer, and
	 * `<service> storage` for a service whose store answers reads but refuses writes (a full disk), `<service> changes` for one
	 * whose change feed has stopped being published to JetStream; `sign-in` on a gateway that has not fetched its identity provider's
	 * keys yet.
	 */
	waitingFor: string[];
}

/** What readiness waits for when `service`'s `ready` failed with `err` (mixins/db.mixin.ts). */
export function waitingOn(service: string, err: unknown): string {
	const { type } = (err ?? {}) as { type?: unknown };
	return type === WRITES_REFUSED ? `${service} storage` : type === OUTBOX_STALLED ? `${service} changes` : service;
}

export type HealthBody =
	| { status: "live" | "ready"; nodeID: string }
	/** A failure like any other (a string `msg`), which also says what the node waits for. */
	| { status: "not ready"; msg: string; waitingFor: string[]; nodeID: string };

/**
 * The answer to a health path: 200 `live` while the process answers; 200 `ready` once the node is ready, else 503
 * `not ready` with `msg` and `waitingFor`. Each names the node that answered.
 */
export async function healthAnswer(
	path: HealthPath,
	nodeID: string,
	readiness: () => Promise<Readiness>,
): Promise<{ status: number; body: HealthBody }> {
	if (path === "/health/live") return { status: 200, body: { status: "live", nodeID } };
	const { ready, waitingFor } = await readiness();
	if (ready) return { status: 200, body: { status: "ready", nodeID } };
	return { status: 503, body: { status: "not ready", msg: texts.unavailable, waitingFor, nodeID } };
}
