import type { Context, ServiceSchema } from "moleculer";
import { duplicateInBatch, storedMeanwhile } from "../lib/catalogue/errors";
import { asUpdate, fileRules, type Kind } from "../lib/catalogue/kind";
import { EXPORT_PAGE, TRANSFER_BATCH, type StoredRecord } from "../lib/transfer/format";
import type { ImportTally } from "../lib/transfer/import";
import { isDuplicateId } from "../lib/storage/adapter";
import { safeToRetry, type CatalogueSchema, type Row } from "./db.mixin";
import type { ChangeFeedMethods } from "./change-feed.mixin";

export interface TransferOptions {
	kind: Kind;
	/** What a stored record must match to be exported or counted as present (games hide their drafts). */
	visible?: Record<string, unknown>;
}

interface TransferMethods extends ChangeFeedMethods {
	/** Stores the records, absent until now, with their ids; throws, storing none, when one is refused. */
	createImported(ctx: Context, records: StoredRecord[]): Promise<void>;
}

/**
 * The internal actions of export and import (docs/operations.md, "Moving to the distributed
 * layout"), never on HTTP: records by id a page at a time, and a batch of records stored with
 * their ids through the service's own rules. `createImported` is the plain insert; games replace
 * it with one that checks references.
 */
export function transferable({ kind, visible = {} }: TransferOptions) {
	const fields = Object.keys(kind.fields);
	const schema: Partial<CatalogueSchema<Row, TransferMethods>> = {
		actions: {
			// Up to `limit` records in id order after the id `after`, or those of `ids` that exist.
			exportPage: {
				...safeToRetry,
				visibility: "public",
				params: {
					$$strict: "remove",
					after: { type: "string", optional: true, max: 26 },
					ids: { type: "array", items: "string", optional: true, max: TRANSFER_BATCH },
					limit: { type: "number", integer: true, min: 1, max: EXPORT_PAGE, optional: true },
				},
				handler(ctx: Context<{ after?: string; ids?: string[]; limit?: number }>): Promise<Row[]> {
					const { after, ids, limit = EXPORT_PAGE } = ctx.params;
					const position = ids ? { _id: { $in: ids } } : after ? { _id: { $gt: after } } : {};
					return this._find(ctx, { query: { ...visible, ...position }, sort: ["_id"], ...(ids ? {} : { limit }) });
				},
			},

			// { created, unchanged, updated }: each record absent is created with its id, one present with
			// other fields is updated through the service's `update`; 400 when one is refused, or when
			// another writer stored one of the ids meanwhile (sent again, a record at a time, it is present).
			importRecords: {
				visibility: "public",
				params: {
					$$strict: "remove",
					records: {
						type: "array",
						max: TRANSFER_BATCH,
						items: { type: "object", strict: "remove", props: fileRules(kind) },
					},
				},
				async handler(ctx: Context<{ records: StoredRecord[] }>): Promise<ImportTally> {
					const { records } = ctx.params;
					const ids = records.map(record => record.id);
					const twice = ids.find((id, index) => ids.indexOf(id) !== index);
					if (twice) throw duplicateInBatch(twice);
					const stored = new Map(
						(await this.adapter.find({ query: { ...visible, _id: { $in: ids } } })).map(doc => [doc._id as string, doc]),
					);
					const absent = records.filter(record => !stored.has(record.id));
					const changed = records.filter(record => {
						const present = stored.get(record.id);
						return present && fields.some(field => present[field] !== record[field]);
					});
					if (absent.length > 0)
						await this.createImported(ctx, absent).catch(async (err: unknown) => {
							if (!isDuplicateId(err)) throw err;
							// MongoDB keeps what it inserted before the duplicate: the cache moves on for those.
							await this.entityChanged("created", absent[0], ctx);
							throw storedMeanwhile();
						});
					for (const record of changed) await ctx.call(`${this.name}.update`, asUpdate(kind, record));
					return { created: absent.length, unchanged: records.length - absent.length - changed.length, updated: changed.length };
				},
			},
		},
		methods: {
			async createImported(ctx: Context, records: StoredRecord[]): Promise<void> {
				const byId = new Map(records.map(record => [record.id, record]));
				const inserted = { insert: records.map(({ id, ...rest }) => ({ ...rest, _id: id })) };
				await this.recorded(ctx, "created", inserted, id => byId.get(id)!);
				await this.entityChanged("created", records[records.length - 1], ctx);
			},
		},
	};
	return schema as Partial<ServiceSchema>;
}
