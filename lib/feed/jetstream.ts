/**
 * The change feed in a cluster (docs/followers.md): each service's feed, its outbox, published to one NATS JetStream stream, each
 * change under `catalogue.changes.<kind>.<type>` with its id as JetStream's de-duplication key, so that a change published again
 * (after a crash between the publish and its note, or by two replicas) is stored once.
 */
import {
	createInbox,
	headers,
	nanos,
	type JetStreamManager,
	type Msg,
	type NatsConnection,
	type NatsError,
	type StreamConfig,
	type StreamInfo,
	type Subscription,
} from "nats";
import { texts } from "../catalogue/errors";
import { FEED_RETENTION, type Change, type ChangeKind } from "./changes";

export const CHANGES_STREAM = "CATALOGUE_CHANGES";

/** The subjects of the stream, every namespace's (`changeSubject`). */
const CHANGES_SUBJECTS = "catalogue.changes.>";

/** What the relay publishes: a change, or the `reset` of a kind whose feed a restored backup started again (`publishReset`). */
type Message = Pick<Change, "id" | "kind"> & { type: Change["type"] | "reset" };

/**
 * Where a change goes: `catalogue.changes.<kind>.<type>`, and in a cluster's NAMESPACE that namespace after it, so that clusters
 * sharing a NATS server share the stream but not its subjects: a follower of the games takes `catalogue.changes.game.*`, or
 * `catalogue.changes.game.*.<namespace>`.
 */
const changeSubject = (message: Message, namespace: string) =>
	`catalogue.changes.${message.kind}.${message.type}${namespace ? `.${namespace}` : ""}`;

/** The stream's bound in bytes, beside the feed's age: the oldest changes go first. */
const STREAM_MAX_BYTES = 1024 ** 3;

/** How long JetStream remembers an id to refuse it again: longer than a node takes to restart and publish what it had not noted. */
const DUPLICATE_WINDOW_MS = 15 * 60_000;

/** How long one publish waits for JetStream's acknowledgement. */
const PUBLISH_TIMEOUT_MS = 5000;

/** The stream's configuration, kept by `replicas` NATS servers (CHANGE_FEED_REPLICAS). */
const streamConfig = (replicas: number): Partial<StreamConfig> => ({
	name: CHANGES_STREAM,
	subjects: [CHANGES_SUBJECTS],
	max_age: nanos(FEED_RETENTION.maxAgeMs),
	max_bytes: STREAM_MAX_BYTES,
	duplicate_window: nanos(DUPLICATE_WINDOW_MS),
	num_replicas: replicas,
});

/**
 * Each durable consumer of the stream and its lag: the changes stored that it has not acknowledged yet (not delivered, or delivered
 * and not acknowledged). Ephemeral consumers (an ordered one, a REPL's) are left out: their names are random.
 */
export async function consumerLags(jsm: JetStreamManager): Promise<{ consumer: string; lag: number }[]> {
	const lags: { consumer: string; lag: number }[] = [];
	for await (const info of jsm.consumers.list(CHANGES_STREAM))
		if (info.config.durable_name) lags.push({ consumer: info.name, lag: info.num_pending + info.num_ack_pending });
	return lags;
}

/**
 * Why a JetStream call failed, in words: JetStream's own reason when it gave one (nats.js names several of them only `503`), else
 * the client's ("503" for a request nobody answered, "TIMEOUT").
 */
export const failureReason = (err: Error) => (err as NatsError).api_error?.description ?? err.message;

/** JetStream's code for a stream it does not have. */
const STREAM_NOT_FOUND = 10059;

/** The stream as JetStream has it, or nothing when it has none; any other failure (a timeout, an election, no JetStream) is thrown. */
async function existingStream(jsm: JetStreamManager): Promise<StreamInfo | undefined> {
	try {
		return await jsm.streams.info(CHANGES_STREAM);
	} catch (err) {
		if ((err as NatsError).api_error?.err_code === STREAM_NOT_FOUND) return undefined;
		throw err;
	}
}

/**
 * Makes the stream when JetStream has none, and brings an existing one to this configuration unless `keep`: JetStream copies an
 * existing stream to the servers a raised `replicas` adds. A lone server refuses more than 1, and the relay reports its words
 * (readiness, the log). A relay brings the stream to its configuration at its first publish, and after a failed publish only makes
 * it again if it is gone (`keep`): during a rollout of a new CHANGE_FEED_REPLICAS, the nodes of the version before would otherwise
 * set the stream back whenever a publish failed.
 */
export async function ensureStream(jsm: JetStreamManager, replicas: number, keep = false): Promise<void> {
	const existing = await existingStream(jsm);
	if (!existing) await jsm.streams.add(streamConfig(replicas));
	else if (!keep) await jsm.streams.update(CHANGES_STREAM, { ...existing.config, ...streamConfig(replicas) });
}

/** JetStream's answer to a publish: where it stored the message, or why it did not. */
type Acknowledgement = { seq?: number; duplicate?: boolean; error?: { description: string } };

/**
 * Whether JetStream stored a published change (true), had it already by its id (false), or why it did not: a status instead of an
 * answer is nats-server's own (503, no stream takes the subject). Nothing when the message is neither: not JetStream's.
 */
function acknowledged(msg: Msg): boolean | Error | undefined {
	if (msg.headers?.hasError) return new Error(String(msg.headers.code));
	try {
		const answer = msg.json<Acknowledgement>();
		if (answer.error) return new Error(answer.error.description);
		if (typeof answer.seq === "number") return !answer.duplicate;
	} catch {
		// Not JSON: not an answer.
	}
	return undefined;
}

/**
 * Publishes `changes` at once on the one connection (JetStream stores them in the order sent), each with its id as the
 * de-duplication key and its acknowledgement sent to one inbox of theirs; what each answer said, an error for those not answered
 * within PUBLISH_TIMEOUT_MS. One subscription for them all, where nats.js's `js.publish` makes each a request with its own timer
 * and promise: 16 to 24 µs of CPU per change against 31 to 33 (docs/performance.md, "The change feed"). A publish the broker's
 * access rules refuse is answered by nobody: it fails as a TIMEOUT, and nats-server logs the refusal.
 */
function publishAtOnce(nats: NatsConnection, changes: Message[], namespace: string): Promise<(boolean | Error)[]> {
	const answers: (boolean | Error | undefined)[] = changes.map(() => undefined);
	// Under the node's own inbox prefix, which the broker's access rules let it read (lib/config/broker-access.ts).
	const inbox = createInbox((nats as NatsConnection & { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
	return new Promise(resolve => {
		let waiting = changes.length;
		const answered = (msg: Msg) => {
			// Only the answers to this wave's publishes, each once: anything else sent to the inbox is not one.
			const index = Number(msg.subject.slice(inbox.length + 1));
			if (!(index >= 0 && index < changes.length) || answers[index] !== undefined) return;
			answers[index] = acknowledged(msg);
			if (answers[index] !== undefined && --waiting === 0) settle();
		};
		let subscription: Subscription;
		try {
			// Without a `max`: nats.js unsubscribes at the last message anyway, so one UNSUB goes, from `settle`. nats.js calls this
			// from its reader, which an exception would stop for the whole connection.
			subscription = nats.subscribe(`${inbox}.*`, {
				callback: (err, msg) => {
					try {
						if (err) throw err;
						answered(msg);
					} catch (failure) {
						settle(failure as Error);
					}
				},
			});
		} catch (err) {
			// A connection closed or draining takes no subscription: this wave fails whole, before anything waits.
			resolve(changes.map(() => err as Error));
			return;
		}
		const settle = (failure?: Error) => {
			clearTimeout(timer);
			subscription.unsubscribe();
			resolve(answers.map(answer => answer ?? failure ?? new Error("TIMEOUT")));
		};
		const timer = setTimeout(settle, PUBLISH_TIMEOUT_MS);
		try {
			for (const [index, change] of changes.entries()) {
				const header = headers();
				header.set("Nats-Msg-Id", change.id);
				nats.publish(changeSubject(change, namespace), JSON.stringify(change), { reply: `${inbox}.${index}`, headers: header });
			}
		} catch (err) {
			// A publish nats.js refuses (a message too large): none after it is sent, and those sent are not waited for.
			settle(err as Error);
		}
	});
}

/**
 * What tells the stream's followers that the `kind` feed started again after `from`, a backup having been restored
 * (lib/storage/sqlite-database.ts restartFeeds): the writes made after the backup, which they may have had, are undone. Its id is
 * made of the two, so a relay that publishes it again (killed before its note, or a second replica) has it stored once.
 */
export const resetMessage = (kind: ChangeKind, from: number, namespace = "") => ({
	id: `${namespace ? `${namespace}-` : ""}${kind}-reset-${from}`,
	kind,
	type: "reset" as const,
	after: from,
	at: new Date().toISOString(),
	msg: texts.restored,
});

/** Publishes the `kind` feed's `resetMessage`, and waits until the stream has it. */
export async function publishReset(nats: NatsConnection, kind: ChangeKind, from: number, namespace = ""): Promise<void> {
	const [answer] = await publishAtOnce(nats, [resetMessage(kind, from, namespace)], namespace);
	if (answer instanceof Error) throw answer;
}

/**
 * Publishes `changes`, in order: the seq of the last one published with every one before it, how many the stream stored (the
 * others it had already, by their id), and the first failure. The changes after a failure are published again at the next try;
 * those stored are dropped then. Each record's first change goes in a first wave, its second in the next once the first is stored,
 * and none after a wave that failed: a change stored while its record's change before it failed would come before it once that one
 * is published again.
 */
export async function publishChanges(
	nats: NatsConnection,
	changes: Change[],
	namespace = "",
): Promise<{ last?: number; stored: number; failure?: Error }> {
	const waves: Change[][] = [];
	const perRecord = new Map<string, number>();
	for (const change of changes) {
		const record = `${change.kind} ${change.record.id}`;
		const wave = perRecord.get(record) ?? 0;
		perRecord.set(record, wave + 1);
		(waves[wave] ??= []).push(change);
	}
	const answers = new Map<Change, boolean | Error>();
	let failure: Error | undefined;
	for (const wave of waves) {
		const answered = await publishAtOnce(nats, wave, namespace);
		wave.forEach((change, index) => answers.set(change, answered[index]));
		failure = answered.find(answer => answer instanceof Error);
		if (failure) break;
	}
	let last: number | undefined;
	let stored = 0;
	for (const change of changes) {
		const answer = answers.get(change);
		if (answer === undefined || answer instanceof Error) return { last, stored, failure };
		if (answer) stored++;
		last = change.seq;
	}
	return { last, stored };
}
