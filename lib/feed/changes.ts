/**
 * The change feed's words (docs/followers.md): a change of one record, a position in each kind's feed, and the feed's retention.
 * Each data service keeps its kind's changes in its own store, in the transaction of the write they record.
 */
import { KINDS } from "../catalogue/kinds";
import { DATA_SERVICE_NAMES, type DataServiceName } from "../catalogue/services";

/** What a change did to its record. */
export const CHANGE_TYPES = ["created", "updated", "removed"] as const;

export type ChangeType = (typeof CHANGE_TYPES)[number];

/** The service that keeps each kind's records, and its feed. */
export const FEED_SERVICES = Object.fromEntries(KINDS.map(kind => [kind.kind, kind.service])) as Record<
	"category" | "author" | "game",
	DataServiceName
>;

export type ChangeKind = keyof typeof FEED_SERVICES;

/** The kind of record each service's feed holds. */
export const FEED_KINDS = Object.fromEntries(Object.entries(FEED_SERVICES).map(([kind, service]) => [service, kind])) as Record<
	DataServiceName,
	ChangeKind
>;

/** One acknowledged change of one record, as the feed keeps it, the broker broadcasts it (`<service>.<type>`) and /changes sends it. */
export interface Change {
	/** Unique for ever (a ULID): a follower that sees it twice knows it is a duplicate. */
	id: string;
	/** The kind of record changed: category, author or game. */
	kind: ChangeKind;
	type: ChangeType;
	/** Its place in the service's feed: 1, 2, 3... in the order the writes committed, never reused. */
	seq: number;
	/** When it was written (ISO 8601). */
	at: string;
	/** The request that made it (X-Request-ID through the gateway). */
	requestId: string | null;
	/** Who made it, when the request was signed in (the token's `sub`, or `api-token`). */
	subject?: string;
	/** The record after the change, references as ids; `{ id }` alone on removal. */
	record: { id: string } & Record<string, unknown>;
}

/** What a feed holds now: `first` the oldest change kept (`last + 1` when none is), `last` the latest ever written (0 before any). */
export interface FeedBounds {
	first: number;
	last: number;
}

/** A page of a service's feed: changes after a position, in order, and its bounds when read. */
export interface FeedPage extends FeedBounds {
	changes: Change[];
}

/** How long, and how many changes per service, a feed keeps: a follower further behind starts again from a full read. */
export const FEED_RETENTION = { maxAgeMs: 7 * 24 * 3600_000, maxChanges: 100_000 };

/** The table (SQLite) or collection (MongoDB) that keeps the feed of `collection`, beside its records. */
export const feedName = (collection: string) => `${collection}_changes`;

/** The key, in `catalogue_meta`, of the seq up to which the feed of `collection` is published to JetStream (the outbox's end). */
export const publishedKey = (collection: string) => `published ${collection}`;

/**
 * The key, in `catalogue_meta`, of a restored backup's feed start (lib/storage/sqlite-database.ts restartFeeds) not yet told to the
 * cluster's stream: its relay publishes a `reset` there before any later change (lib/feed/jetstream.ts).
 */
export const resetKey = (collection: string) => `reset ${collection}`;

/** The most changes one read of a feed answers. */
export const FEED_PAGE = 500;

/** A position in every service's feed: the last change seen of each. */
export type Position = Record<DataServiceName, number>;

const POSITION = new RegExp(`^${DATA_SERVICE_NAMES.map(name => `${name}:(\\d{1,15})`).join(",")}$`);

/** A position as an SSE event id and `Last-Event-ID`: `authors:12,categories:3,games:1032`. */
export const positionText = (position: Position) => DATA_SERVICE_NAMES.map(name => `${name}:${position[name]}`).join(",");

/** The position a `Last-Event-ID` names, or undefined when it is not one this feed gave. */
export function parsePosition(text: string): Position | undefined {
	const found = POSITION.exec(text);
	if (!found) return undefined;
	return Object.fromEntries(DATA_SERVICE_NAMES.map((name, index) => [name, Number(found[index + 1])])) as Position;
}
