import { setTimeout as delay } from "node:timers/promises";
import { Errors, type Context } from "moleculer";

/**
 * Claims on stored records for the referential-integrity protocol (docs/integrity.md): a field `{ token, at, ... }` set and cleared by
 * atomic conditional updates, so no lock server is needed. A claim older than its lease is broken, and its holder's last write,
 * conditional on the token, then fails.
 */

/** What a claim needs of the storage; both moleculer-db adapters have these calls. */
export interface ClaimStore {
	/** The record, or nothing when it does not exist (or does not count as existing). */
	findById(id: string): Promise<Record<string, unknown> | null | undefined>;
	/** How many records matching `query` were changed. */
	updateMany(query: Record<string, unknown>, update: Record<string, unknown>): Promise<number>;
	/** Changes the record of `query` (which names its `_id`) by `update` in one atomic step: the record after, or nothing when none matched. */
	updateOne(query: Record<string, unknown>, update: Record<string, unknown>): Promise<Record<string, unknown> | null | undefined>;
}

export interface Claim {
	token: string;
	/** When it was taken, in ms since the epoch. */
	at: number;
}

export interface ClaimOptions {
	/** The record field that holds the claim (`deleting` on authors and categories, `change` on games). */
	field: string;
	/** A claim older than this is abandoned. */
	leaseMs: number;
	/** When the caller gives up (`givenUpAt`): a wait for a live claim past it throws `late()` instead of holding its place. */
	until?: { at: number; late: () => Error };
}

/**
 * When the call `ctx` runs for is given up (its timeout, less the time it has run, as moleculer hands it on), for `until`: a wait
 * that outlived its request would hold a place of the action's bulkhead, and writes of other records would queue behind it.
 */
export function givenUpAt(ctx: Context): ClaimOptions["until"] {
	const { timeout } = ctx.options;
	if (!timeout || timeout <= 0 || !ctx.startHrTime) return undefined;
	const [seconds, nanos] = process.hrtime(ctx.startHrTime);
	return {
		at: Date.now() + timeout - (seconds * 1e3 + nanos / 1e6),
		late: () => new Errors.RequestTimeoutError({ action: ctx.action?.name ?? "", nodeID: ctx.nodeID ?? "" }),
	};
}

/** The longest pause between two looks at a claimed record. */
const MAX_POLL_MS = 50;

/** The record once no live claim is on it, waiting out a live one and breaking an abandoned one; nothing when it does not exist. */
export async function unclaimed(store: ClaimStore, id: string, { field, leaseMs, until }: ClaimOptions) {
	for (let pause = 1; ; pause = Math.min(pause * 2, MAX_POLL_MS)) {
		const record = await store.findById(id);
		const held = record?.[field] as Claim | undefined;
		if (!record || !held) return record ?? undefined;
		if (held.at < Date.now() - leaseMs) await release(store, id, held.token, { field });
		else if (until && Date.now() >= until.at) throw until.late();
		else await delay(pause);
	}
}

/**
 * Takes the claim on record `id` for `token` (with `details`) once no other live claim is on it; the record as it was, or nothing.
 * A free record is claimed in one conditional write; only a record that was not free is read, to wait for it or find it gone.
 */
export async function claim(store: ClaimStore, id: string, token: string, options: ClaimOptions, details: object = {}) {
	const { field } = options;
	for (;;) {
		const taken = await store.updateOne(
			{ _id: id, [field]: { $exists: false } },
			{ $set: { [field]: { ...details, token, at: Date.now() } } },
		);
		if (taken) {
			const { [field]: _claim, ...record } = taken;
			return record;
		}
		if (!(await unclaimed(store, id, options))) return undefined;
	}
}

/** Clears the claim `token` holds on record `id`, if it still holds it. */
export async function release(store: ClaimStore, id: string, token: string, { field }: Pick<ClaimOptions, "field">): Promise<void> {
	await store.updateMany({ _id: id, [`${field}.token`]: token }, { $unset: { [field]: true } });
}
