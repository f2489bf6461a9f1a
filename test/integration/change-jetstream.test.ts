import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AckPolicy, connect, DiscardPolicy, type JetStreamManager, type NatsConnection, type StreamConfig, type StreamInfo } from "nats";
import { ServiceBroker } from "moleculer";
import { newId } from "../../lib/catalogue/ids";
import type { Change } from "../../lib/feed/changes";
import { texts } from "../../lib/catalogue/errors";
import { config } from "../../lib/config/config";
import { CHANGES_STREAM, publishReset } from "../../lib/feed/jetstream";
import { feedOf } from "../../lib/storage/adapter";
import { backupDataDir } from "../../lib/storage/backup";
import { DATABASE_FILE } from "../../lib/storage/location";
import { waitingOn } from "../../lib/http/health";
import { RELAY_GAP_MS } from "../../mixins/change-relay.mixin";
import brokerOptions from "../../moleculer.config";
import AuthorsService from "../../services/authors.service";
import CategoriesService from "../../services/categories.service";
import GamesService from "../../services/games.service";
import { startNats, type NatsServer } from "../support/nats";

// The change feed in a cluster (docs/followers.md): each service's feed published to the JetStream stream CATALOGUE_CHANGES of a
// real nats-server, once per change, in order, also after NATS was down; followers are durable consumers.

let nats: NatsServer;
let broker: ServiceBroker;
let client: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
	nats = await startNats();
	broker = new ServiceBroker({
		...brokerOptions,
		// The default namespace, whose changes go under catalogue.changes.<kind>.<type>; the other brokers below have their own.
		nodeID: `jetstream-${process.pid}`,
		transporter: { type: "NATS", options: { url: nats.url } },
		cacher: undefined,
		metrics: { enabled: true, reporter: [] },
		logger: false,
	});
	for (const schema of [AuthorsService, CategoriesService, GamesService]) broker.createService(schema);
	await broker.start();
	client = await connect({ servers: nats.url });
	jsm = await client.jetstreamManager();
});
afterAll(async () => {
	await client?.close();
	await broker?.stop();
	await nats?.stop();
});

/** Every change the stream holds, in stream order. */
async function streamed(): Promise<Change[]> {
	const { state } = await jsm.streams.info(CHANGES_STREAM);
	const changes: Change[] = [];
	for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++)
		changes.push((await jsm.streams.getMessage(CHANGES_STREAM, { seq })).json<Change>());
	return changes;
}

async function until(what: string, condition: () => Promise<boolean>, ms = 10_000): Promise<void> {
	for (const deadline = Date.now() + ms; !(await condition().catch(() => false));) {
		if (Date.now() > deadline) throw new Error(`not ${what} within ${ms} ms`);
		await new Promise(resolve => setTimeout(resolve, 50));
	}
}

/** The service's own feed from its start. */
const feed = async (service: string) =>
	(await broker.call<{ changes: Change[] }, { after: number }>(`${service}.changes`, { after: 0 })).changes;

test("every change of every feed is in the stream once, each kind in its order, under catalogue.changes.<kind>.<type>", async () => {
	const { category } = await broker.call<{ category: { id: string } }, object>("categories.create", { name: "Streamed" });
	const { author } = await broker.call<{ author: { id: string } }, object>("authors.create", { name: "Streamed", nationality: "Any" });
	const games = await Promise.all(
		Array.from({ length: 20 }, (_, index) =>
			broker.call<{ game: { id: string } }, object>("games.create", { title: `Game ${index}`, age: 10, category, author }),
		),
	);
	await broker.call("games.remove", { id: games[0].game.id });
	const written = [...(await feed("categories")), ...(await feed("authors")), ...(await feed("games"))];
	await until("the stream holds every change", async () => (await streamed()).length >= written.length);
	const stream = await streamed();
	expect([...stream].sort((a, b) => a.id.localeCompare(b.id))).toEqual([...written].sort((a, b) => a.id.localeCompare(b.id)));
	const games_ = stream.filter(change => change.kind === "game");
	expect(games_.map(change => change.seq)).toEqual(games_.map((_, index) => index + 1));
	const last = await jsm.streams.getMessage(CHANGES_STREAM, { last_by_subj: "catalogue.changes.game.removed" });
	expect(last.json<Change>().record).toEqual({ id: games[0].game.id });
	// The metrics count what was published and show an empty outbox.
	const metric = (name: string) => broker.metrics.getMetric(name)!.get({ service: "games" })?.value;
	expect(metric("catalogue.changes.published.total")).toBe(games_.length);
	await until("the outbox gauge is read again", async () => metric("catalogue.changes.outbox.depth") === 0);
	expect(metric("catalogue.changes.outbox.age.seconds")).toBe(0);
});

test("changes published again (a crash before their note) are stored once: JetStream drops them by their id", async () => {
	const before = (await jsm.streams.info(CHANGES_STREAM)).state.messages;
	const { adapter } = broker.getLocalService("games") as unknown as { adapter: { database: { writer: { exec(sql: string): void } } } };
	adapter.database.writer.exec("DELETE FROM catalogue_meta WHERE key = 'published games'");
	(broker.getLocalService("games") as unknown as { relayChanges(): void }).relayChanges();
	await until("the outbox is published again", async () => {
		const state = adapter.database.writer as unknown as { prepare(sql: string): { get(): unknown } };
		return state.prepare("SELECT value FROM catalogue_meta WHERE key = 'published games'").get() !== undefined;
	});
	expect((await jsm.streams.info(CHANGES_STREAM)).state.messages).toBe(before);
});

test("changes written while NATS is down are published once it is back", async () => {
	const before = (await jsm.streams.info(CHANGES_STREAM)).state.messages;
	await nats.stop();
	const created = await broker.call<{ category: { id: string } }, object>("categories.create", { name: "While NATS was down" });
	await new Promise(resolve => setTimeout(resolve, 500));
	await nats.start();
	await until("the change is in the stream", async () => (await jsm.streams.info(CHANGES_STREAM)).state.messages === before + 1, 20_000);
	const last = await jsm.streams.getMessage(CHANGES_STREAM, { last_by_subj: "catalogue.changes.category.created" });
	expect(last.json<Change>().record).toEqual(created.category);
}, 30_000);

test("a durable consumer acknowledges, resumes where it stopped, and shares the work with another of its group; its lag is a metric", async () => {
	await jsm.consumers.add(CHANGES_STREAM, {
		durable_name: "loans",
		ack_policy: AckPolicy.Explicit,
		filter_subject: "catalogue.changes.game.>",
	});
	const games = (await streamed()).filter(change => change.kind === "game").map(change => change.id);
	const take = async (connection: NatsConnection, count: number) => {
		const consumer = await connection.jetstream().consumers.get(CHANGES_STREAM, "loans");
		const taken: string[] = [];
		for (let index = 0; index < count; index++) {
			const message = await consumer.next({ expires: 2000 });
			if (!message) break;
			taken.push(message.json<Change>().id);
			await message.ackAck();
		}
		return taken;
	};
	// The lag metric: every change of the games not yet acknowledged, then five fewer.
	const relay = broker.getLocalService("games") as unknown as { noteConsumerLags(): Promise<void> };
	const lag = async () => {
		await relay.noteConsumerLags();
		return broker.metrics.getMetric("catalogue.changes.consumer.lag")!.get({ consumer: "loans" })?.value;
	};
	expect(await lag()).toBe(games.length);
	const first = await take(client, 5);
	expect(first).toEqual(games.slice(0, 5));
	expect(await lag()).toBe(games.length - 5);
	// A follower restarted: a new connection, the same durable consumer, from the sixth.
	const again = await connect({ servers: nats.url });
	const other = await connect({ servers: nats.url });
	try {
		const [one, two] = await Promise.all([take(again, 8), take(other, 8)]);
		expect([...one, ...two].sort()).toEqual(games.slice(5).sort());
		expect(one.length).toBeGreaterThan(0);
		expect(two.length).toBeGreaterThan(0);
	} finally {
		await again.close();
		await other.close();
	}
});

test("under steady writes the relay pauses before a cycle asked for while one ran, and loses nothing", async () => {
	const games = broker.getLocalService("games") as unknown as { relayOnce(): Promise<void>; relayChanges(): void };
	const [cycle, ask] = [games.relayOnce, games.relayChanges];
	const cycles: { start: number; end: number }[] = [];
	const asked: number[] = [];
	games.relayOnce = async function (this: unknown) {
		const ran = { start: performance.now(), end: Infinity };
		cycles.push(ran);
		try {
			await cycle.call(this);
		} finally {
			ran.end = performance.now();
		}
	};
	games.relayChanges = function (this: unknown) {
		asked.push(performance.now());
		ask.call(this);
	};
	const before = (await jsm.streams.info(CHANGES_STREAM)).state.messages;
	try {
		const { category } = await broker.call<{ category: object }, object>("categories.create", { name: "Burst" });
		const { author } = await broker.call<{ author: object }, object>("authors.create", { name: "Burst", nationality: "Any" });
		// One write after another, as a steady load sends them, each a turn of the event loop of its own (as requests are), so that
		// the relay's publish is answered meanwhile: writes ask for a cycle while one still runs.
		for (let index = 0; index < 60; index++) {
			await broker.call("games.create", { title: `Burst ${index}`, age: 10, category, author });
			await new Promise(resolve => setImmediate(resolve));
		}
		await until("the stream holds every change", async () => (await jsm.streams.info(CHANGES_STREAM)).state.messages === before + 62);
	} finally {
		Object.assign(games, { relayOnce: cycle, relayChanges: ask });
	}
	// A cycle that a write asked for while the one before ran starts RELAY_GAP_MS after that one ended (a write after it ended
	// starts one at once).
	const followed = cycles.slice(0, -1).filter(({ start, end }) => asked.some(at => at > start && at < end));
	expect(followed.length).toBeGreaterThan(0);
	for (const ran of followed) {
		const next = cycles[cycles.indexOf(ran) + 1];
		expect(next.start - ran.end).toBeGreaterThanOrEqual(RELAY_GAP_MS - 1);
	}
	// Fewer cycles than writes: each carried several changes.
	expect(cycles.length).toBeLessThan(60);
});

/** The relay of the categories service: why its last cycle failed, until one succeeds. */
const categoriesRelay = () => (broker.getLocalService("categories") as unknown as { relay: { failure?: string } }).relay;

/** Resolves once the stream holds the latest created category's change, for `id`. */
const untilStored = (id: string) =>
	until("the change is in the stream", async () => {
		const last = await jsm.streams.getMessage(CHANGES_STREAM, { last_by_subj: "catalogue.changes.category.created" });
		return last.json<Change>().record.id === id;
	});

test("a stream deleted under the relay is made again, with the changes written meanwhile", async () => {
	await jsm.streams.delete(CHANGES_STREAM);
	const { category } = await broker.call<{ category: { id: string } }, object>("categories.create", { name: "After the stream went" });
	await untilStored(category.id);
}, 20_000);

// During a rollout of CHANGE_FEED_REPLICAS, nodes of two versions publish to one stream: each sets it at its first publish, and not
// again after a failure, or the older would set it back. The other version's mark here: half the stream's bytes.
describe("a publish that fails leaves the stream's settings as another version set them", () => {
	/**
	 * Sets the stream as another version would, with `failing` on top; writes a category; waits until the relay has failed for
	 * `reason`, and through its next cycles (one a second), in which the stream keeps every setting; then takes `failing` away: the
	 * change goes through, and the other version's setting stays.
	 */
	async function failsThenGoesThrough(failing: (stream: StreamInfo) => Partial<StreamConfig>, reason: RegExp) {
		await until("the relay's last cycle succeeded", () => Promise.resolve(categoriesRelay().failure === undefined));
		const stream = await jsm.streams.info(CHANGES_STREAM);
		const otherVersion = { ...stream.config, max_bytes: stream.config.max_bytes / 2 };
		const failed = { max_bytes: otherVersion.max_bytes, ...failing(stream) };
		try {
			await jsm.streams.update(CHANGES_STREAM, { ...otherVersion, ...failed });
			const { category } = await broker.call<{ category: { id: string } }, object>("categories.create", { name: "Failed at first" });
			await until(`the relay failed for ${reason}`, () => Promise.resolve(reason.test(categoriesRelay().failure ?? "")));
			await new Promise(resolve => setTimeout(resolve, 1500));
			expect((await jsm.streams.info(CHANGES_STREAM)).config).toMatchObject(failed);
			await jsm.streams.update(CHANGES_STREAM, otherVersion);
			await untilStored(category.id);
			expect((await jsm.streams.info(CHANGES_STREAM)).config.max_bytes).toBe(otherVersion.max_bytes);
		} finally {
			await jsm.streams.update(CHANGES_STREAM, stream.config);
		}
	}

	test(
		"the stream refuses the change (full, discarding new ones); it goes through once taken",
		() => failsThenGoesThrough(({ state }) => ({ max_msgs: state.messages, discard: DiscardPolicy.New }), /maximum messages/),
		20_000,
	);

	test(
		"nobody answers the publish while the stream is there (as while a NATS cluster elects its leader)",
		() => failsThenGoesThrough(() => ({ subjects: ["elsewhere.>"] }), /^503$/),
		20_000,
	);
});

test("a NATS without JetStream: the outbox is seen waiting, and readiness names the service's changes once it has waited 30 s", async () => {
	const folder = mkdtempSync(path.join(tmpdir(), "nats-no-jetstream-"));
	const natsConf = path.join(folder, "nats.conf");
	writeFileSync(natsConf, "max_payload: 64MB\n");
	const plain = await startNats(10_000, natsConf);
	const lone = new ServiceBroker({
		...brokerOptions,
		nodeID: `no-jetstream-${process.pid}`,
		namespace: `no-jetstream-${newId()}`,
		transporter: { type: "NATS", options: { url: plain.url } },
		cacher: undefined,
		logger: false,
	});
	lone.createService(CategoriesService);
	try {
		await lone.start();
		await lone.call("categories.create", { name: "Never published" });
		const categories = lone.getLocalService("categories") as unknown as { relay: { oldestAt: number | null; failure?: string } };
		await until("the relay has tried", async () => categories.relay.failure !== undefined);
		expect(categories.relay.oldestAt).not.toBeNull();
		await expect(lone.call("categories.ready")).resolves.toEqual({ status: "ready" });
		categories.relay.oldestAt = Date.now() - 31_000;
		const refused = await lone.call("categories.ready").catch((err: unknown) => err);
		expect(refused).toMatchObject({
			type: "OUTBOX_STALLED",
			message: expect.stringMatching(/^The change feed has not been published for 3\d s: /),
		});
		expect(waitingOn("categories", refused)).toBe("categories changes");
	} finally {
		await lone.stop();
		await plain.stop();
		rmSync(folder, { recursive: true, force: true });
	}
});

/**
 * The three services over this file's NATS in `namespace`, each keeping its records in the SQLite database of `dataDir` (in memory
 * without one).
 */
function brokerIn(namespace: string, dataDir?: string): ServiceBroker {
	const broker_ = new ServiceBroker({
		...brokerOptions,
		nodeID: `${namespace}-${process.pid}`,
		namespace,
		transporter: { type: "NATS", options: { url: nats.url } },
		cacher: undefined,
		logger: false,
	});
	// Each service's store is made as it is created, from the configuration of that moment.
	const kept = { storage: config.storage, dataDir: config.dataDir };
	if (dataDir) Object.assign(config, { storage: "file", dataDir });
	try {
		for (const schema of [AuthorsService, CategoriesService, GamesService]) broker_.createService(schema);
	} finally {
		Object.assign(config, kept);
	}
	return broker_;
}

test("a restored backup: the stream is told once, per kind, to start again from a full read, before any change after it", async () => {
	const root = mkdtempSync(path.join(tmpdir(), "jetstream-restore-"));
	const [live, backup, restored] = ["live", "backup", "restored"].map(name => path.join(root, name));
	const create = (on: ServiceBroker, title: string, category: object, author: object) =>
		on.call<{ game: { id: string } }, object>("games.create", { title, age: 10, category, author });
	let on = brokerIn("restored", live);
	try {
		await on.start();
		const { category } = await on.call<{ category: object }, object>("categories.create", { name: "Restored" });
		const { author } = await on.call<{ author: object }, object>("authors.create", { name: "Restored", nationality: "Any" });
		await create(on, "Kept", category, author);
		await backupDataDir(live, backup);
		// Undone by the restore, once followers have had it.
		const undone = await create(on, "Undone", category, author);
		await until("the undone game is in the stream", async () =>
			(await streamed()).some(change => change.record?.id === undone.game.id),
		);
		await on.stop();

		mkdirSync(restored);
		copyFileSync(path.join(backup, DATABASE_FILE), path.join(restored, DATABASE_FILE));
		on = brokerIn("restored", restored);
		await on.start();
		const after = await create(on, "After the restore", category, author);
		type Reset = { id: string; kind: string; type: string; after: number; msg: string };
		const told = async () =>
			((await streamed()) as unknown as (Change | Reset)[]).filter(message => message.type === "reset") as Reset[];
		await until("each kind's reset is in the stream", async () => (await told()).length === 3);
		const resets = await told();
		expect(resets.map(reset => reset.kind).sort()).toEqual(["author", "category", "game"]);
		const { reset: from } = await feedOf((on.getLocalService("games") as unknown as { adapter: unknown }).adapter).unpublished(1);
		expect(from).toBeNull();
		const gameReset = resets.find(reset => reset.kind === "game")!;
		expect(gameReset).toMatchObject({ id: `restored-game-reset-${gameReset.after}`, msg: texts.restored });
		// Before the changes after the restore, which are numbered after it.
		await until("the game made after the restore is in the stream", async () =>
			(await streamed()).some(change => change.record?.id === after.game.id),
		);
		const messages = await streamed();
		const made = messages.findIndex(change => change.record?.id === after.game.id);
		expect(messages.findIndex(message => message.id === gameReset.id)).toBeLessThan(made);
		expect(messages[made].seq).toBe(gameReset.after + 1);
		// Published again (a relay killed before its note, or a second replica): stored once.
		await publishReset(client, "game", gameReset.after, "restored");
		expect(await told()).toHaveLength(3);
	} finally {
		await on.stop();
		rmSync(root, { recursive: true, force: true });
	}
}, 30_000);

test("clusters in two namespaces on one NATS: each change under its namespace's subjects, so a follower of one sees none of the other's", async () => {
	const other = brokerIn("alpha");
	try {
		await other.start();
		const [mine, theirs] = await Promise.all([
			broker.call<{ category: { id: string } }, object>("categories.create", { name: "Default namespace" }),
			other.call<{ category: { id: string } }, object>("categories.create", { name: "Namespace alpha" }),
		]);
		const lastOf = async (subject: string) => (await jsm.streams.getMessage(CHANGES_STREAM, { last_by_subj: subject })).json<Change>();
		await until("both changes are in the stream", async () => {
			const [ours, alpha] = await Promise.all([
				lastOf("catalogue.changes.category.created"),
				lastOf("catalogue.changes.category.created.alpha"),
			]);
			return ours.record.id === mine.category.id && alpha.record.id === theirs.category.id;
		});
		expect((await lastOf("catalogue.changes.category.created")).record.id).toBe(mine.category.id);
		expect((await lastOf("catalogue.changes.category.created.alpha")).record.id).toBe(theirs.category.id);
		// A follower of the default namespace's categories, as followers.md gives its filter.
		const consumer = await jsm.consumers.add(CHANGES_STREAM, {
			filter_subject: "catalogue.changes.category.*",
			ack_policy: AckPolicy.None,
		});
		const { num_pending: pending } = consumer;
		const messages = await (
			await client.jetstream().consumers.get(CHANGES_STREAM, consumer.name)
		).fetch({ max_messages: pending, expires: 2000 });
		const seen: string[] = [];
		for await (const message of messages) seen.push(message.json<Change>().record.id);
		expect(seen).toContain(mine.category.id);
		expect(seen).not.toContain(theirs.category.id);
	} finally {
		await other.stop();
	}
});
