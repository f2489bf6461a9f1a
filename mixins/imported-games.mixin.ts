import uniq from "lodash/uniq";
import type { Context, ServiceSchema } from "moleculer";
import { config } from "../lib/config/config";
import { newToken } from "../lib/catalogue/ids";
import type { References } from "../lib/integrity/integrity";
import type { StoredRecord } from "../lib/transfer/format";
import type { CatalogueSchema, Row } from "./db.mixin";
import type { ChangeFeedMethods } from "./change-feed.mixin";

interface ImportedGamesMethods extends ChangeFeedMethods {
	checkReferences(ctx: Context, references: References | { category: string[]; author: string[] }): Promise<void>;
}

/**
 * How games store a batch of imported games (transfer.mixin.ts's `createImported`): as `create`
 * stores one, hidden drafts until their categories and authors are checked, once for the batch.
 * The batch's drafts carry a token of their own (`importing`), so its publishing and its clean-up
 * touch no draft of another import of the same ids. Drafts of the same ids older than the lease
 * are an import's that ended without them (its node killed, the drafts kept by the store),
 * removed first, as `countBy` would. Throws, leaving none of the batch's drafts,
 * when a reference is missing; the cache moves on for any it published.
 */
const schema: Partial<CatalogueSchema<Row, ImportedGamesMethods>> = {
	methods: {
		async createImported(ctx: Context, records: StoredRecord[]): Promise<void> {
			const at = Date.now();
			const ids = records.map(record => record.id);
			const token = newToken();
			const mine = { _id: { $in: ids }, importing: token };
			await this.adapter.removeMany({ _id: { $in: ids }, draft: { $lt: at - config.claimLeaseMs } });
			let shown = 0;
			try {
				await this.adapter.insertMany(records.map(({ id, ...game }) => ({ ...game, _id: id, draft: at, importing: token })));
				await this.checkReferences(ctx, {
					category: uniq(records.map(game => game.category as string)),
					author: uniq(records.map(game => game.author as string)),
				});
				const byId = new Map(records.map(record => [record.id, record]));
				// All of them or none: drafts of the batch that outlived their lease may have been removed by another import meanwhile.
				const published = { query: mine, update: { $unset: { draft: true, importing: true } }, whole: ids.length };
				shown = await this.recorded(ctx, "created", published, id => byId.get(id)!);
				if (shown < ids.length) throw new Error(`${ids.length - shown} imported draft games outlived their lease`);
			} catch (err) {
				await this.adapter.removeMany({ ...mine, draft: { $exists: true } });
				throw err;
			} finally {
				if (shown > 0)
					await this.entityChanged("created", await this.transformDocuments(ctx, {}, { ...records[0], _id: ids[0] }), ctx);
			}
		},
	},
};

export const importedGames = schema as Partial<ServiceSchema>;
