import type { Context } from "moleculer";
import { claim, givenUpAt, release, unclaimed, type ClaimOptions } from "../lib/integrity/write-claims";
import { config } from "../lib/config/config";
import { inUse, notFound } from "../lib/catalogue/errors";
import { actionParams, type Kind } from "../lib/catalogue/kind";
import { newToken } from "../lib/catalogue/ids";
import { idOf } from "../lib/catalogue/params";
import { asMixin, claimStore, type Row } from "./db.mixin";
import type { ChangeFeedMethods } from "./change-feed.mixin";
import { TRANSFER_BATCH } from "../lib/transfer/format";

/** A delete in progress is a claim in the record's `deleting` field. */
const deleting: ClaimOptions = { field: "deleting", leaseMs: config.claimLeaseMs };

/**
 * For records that games refer to (docs/integrity.md): `remove` marks the
 * record as being deleted before it asks `games.countBy`, and `referable`, which games asks after
 * writing a game, waits for such a delete to end. Whatever the interleaving, either the count
 * sees the game or the game sees the record gone.
 */
export function referencedByGames(kind: Kind) {
	const field = kind.kind;
	const unknown = notFound(kind.unknown);
	const idRule = idOf(kind.unknown);
	const hasGames = kind.inUse!;
	return asMixin<Row, ChangeFeedMethods>({
		actions: {
			// { <field>: the deleted record }; 400 when the id is unknown or games refer to it.
			remove: {
				params: actionParams(kind).remove,
				async handler(ctx: Context<{ id: string }>): Promise<Record<string, Row>> {
					const { id } = ctx.params;
					const token = newToken();
					const record = await claim(claimStore(this), id, token, { ...deleting, until: givenUpAt(ctx) });
					if (!record) throw unknown();
					try {
						const games = await ctx.call<number, Record<string, string>>("games.countBy", { [field]: id });
						if (games > 0) throw inUse(hasGames);
						const removed = await this.recorded(
							ctx,
							"removed",
							{ query: { _id: id, "deleting.token": token }, remove: true },
							() => ({ id }),
						);
						if (removed === 0) throw new Error(`the delete of ${field} ${id} outlived its lease`);
					} catch (err) {
						await release(claimStore(this), id, token, deleting);
						throw err;
					}
					const deleted = await this.transformDocuments(ctx, {}, record);
					await this.entityChanged("removed", deleted, ctx);
					return { [field]: deleted };
				},
			},

			// true once the record, or each of a batch of them, exists and no delete of it is in
			// progress (waiting for one to end); 400 when one does not exist. Asked by games after it
			// wrote a game, or a batch of imported games.
			referable: {
				visibility: "public",
				params: { id: [idRule, { type: "array", items: idRule, max: TRANSFER_BATCH }] },
				async handler(ctx: Context<{ id: string | string[] }>): Promise<true> {
					const ids = typeof ctx.params.id === "string" ? [ctx.params.id] : ctx.params.id;
					const waiting = { ...deleting, until: givenUpAt(ctx) };
					const found = await Promise.all(ids.map(id => unclaimed(claimStore(this), id, waiting)));
					if (!found.every(Boolean)) throw unknown();
					return true;
				},
			},
		},
	});
}
