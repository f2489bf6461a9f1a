import type { Context } from "moleculer";
import { newId } from "../lib/catalogue/ids";
import { feedOff, notFound } from "../lib/catalogue/errors";
import { storedOf, type BodyOf, type Kind } from "../lib/catalogue/kind";
import { FEED_PAGE, FEED_RETENTION, type Change, type ChangeType, type FeedPage } from "../lib/feed/changes";
import type { RecordedWrite } from "../lib/storage/sqlite-adapter";
import { feedOf, recordedWrite } from "../lib/storage/adapter";
import type { SignedIn } from "../lib/sign-in/sign-in";
import { config } from "../lib/config/config";
import { natsConnection } from "../lib/config/transporter";
import { asMixin, type Row } from "./db.mixin";
import { changeRelay, type ChangeRelayMethods } from "./change-relay.mixin";

/** How often a service drops the changes its feed no longer keeps. */
const PRUNE_EVERY_MS = 60_000;

export interface ChangeFeedMethods {
	/**
	 * Runs `write` and records, in the same transaction, a `type` change of each record it wrote (`recordOf(id)`: the record after
	 * it), then broadcasts them; how many records it wrote. A refused write records nothing.
	 */
	recorded(ctx: Context, type: ChangeType, write: RecordedWrite, recordOf: (id: string) => Row): Promise<number>;
	/** Stores a new record from a validated `create` body: the record, as the service hands it out. */
	createRecord(ctx: Context, body: object): Promise<Row>;
	/** Replaces a record's fields from a validated `update` body; 400 when no record has the id. */
	updateRecord(ctx: Context, update: Row): Promise<void>;
}

/**
 * The service's change feed (docs/followers.md): every acknowledged create, update and remove of its records, kept in its own store
 * with the write, read in order by `changes` and broadcast as `<service>.<type>` once stored.
 */
export function changeFeed(kind: Kind) {
	return asMixin<Row, ChangeFeedMethods & ChangeRelayMethods & { pruning?: NodeJS.Timeout }>({
		mixins: [changeRelay(kind)],
		actions: {
			// { changes, first, last }: up to `limit` changes after position `after`, in the order they were written; `first` is the
			// oldest kept, `last` the latest written. For the gateway's /changes and for followers: not on HTTP.
			changes: {
				visibility: "public",
				params: {
					$$strict: "remove",
					after: { type: "number", integer: true, min: 0, convert: true },
					limit: { type: "number", integer: true, min: 1, max: FEED_PAGE, optional: true, convert: true },
				},
				handler(ctx: Context<{ after: number; limit?: number }>): Promise<FeedPage> {
					if (!config.changeFeed) throw feedOff();
					return feedOf(this.adapter).changesAfter(
						ctx.params.after,
						ctx.params.limit ?? FEED_PAGE,
					) as unknown as Promise<FeedPage>;
				},
			},
		},
		methods: {
			async recorded(ctx: Context, type: ChangeType, write: RecordedWrite, recordOf: (id: string) => Row): Promise<number> {
				const at = new Date().toISOString();
				const subject = (ctx.meta as { user?: SignedIn | null }).user?.sub;
				const changeOf = (id: string) => ({
					id: newId(),
					kind: kind.kind,
					type,
					at,
					requestId: ctx.requestID ?? null,
					...(subject === undefined ? {} : { subject }),
					record: type === "removed" ? { id } : recordOf(id),
				});
				const { written, changes } = await recordedWrite(this.adapter, write, config.changeFeed ? changeOf : null);
				for (const change of changes as unknown as Change[]) void this.broker.broadcast(`${kind.service}.${type}`, change);
				if (changes.length > 0) this.relayChanges();
				return written;
			},

			async createRecord(ctx: Context, body: object): Promise<Row> {
				const id = newId();
				const stored = storedOf(kind, body as BodyOf<Kind>);
				await this.recorded(ctx, "created", { insert: [{ _id: id, ...stored }] }, () => ({ id, ...stored }));
				const created = await this.transformDocuments(ctx, {}, { _id: id, ...stored });
				await this.entityChanged("created", created, ctx);
				return created;
			},

			async updateRecord(ctx: Context, { id, ...body }: Row): Promise<void> {
				const stored = storedOf(kind, body as BodyOf<Kind>);
				const update = { query: { _id: id }, update: { $set: stored } };
				if ((await this.recorded(ctx, "updated", update, () => ({ id, ...stored }))) === 0) throw notFound(kind.unknown)();
				await this.entityChanged("updated", { id, ...stored }, ctx);
			},
		},
		started() {
			this.pruning = setInterval(() => {
				// In a cluster the feed is JetStream's outbox: a change not yet published is kept.
				feedOf(this.adapter)
					.pruneChanges(FEED_RETENTION, natsConnection(this.broker) !== undefined)
					.catch((err: Error) => this.logger.warn("The change feed was not pruned:", err.message));
			}, PRUNE_EVERY_MS);
			this.pruning.unref();
		},
		stopped() {
			clearInterval(this.pruning);
		},
	});
}
