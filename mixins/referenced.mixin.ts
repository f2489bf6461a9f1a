import type { Context } from "moleculer";
import { inUse, type ErrorText } from "../lib/errors";
import { id } from "../lib/params";
import { asMixin, type Row } from "./db.mixin";

export interface ReferencedOptions {
	/** The game field that holds this record's id (`author`, `category`). */
	field: "author" | "category";
	/** The error text when games still refer to the record. */
	hasGames: ErrorText;
}

/**
 * For records that games refer to: `remove` answers `{ <field>: <deleted record> }`, and refuses
 * (400, `hasGames`) while `games.countBy` finds games that refer to the record.
 */
export function referencedByGames({ field, hasGames }: ReferencedOptions) {
	return asMixin({
		actions: {
			// { <field>: the deleted record }; 400 when the id is unknown or games refer to it.
			remove: {
				params: { id },
				async handler(ctx: Context<{ id: string }>): Promise<Record<string, Row>> {
					const { id } = ctx.params;
					const record = await this._get(ctx, { id });
					const games = await ctx.call<number, Record<string, string>>("games.countBy", { [field]: id });
					if (games > 0) throw inUse(hasGames);
					await this._remove(ctx, { id });
					return { [field]: record };
				},
			},
		},
	});
}
