import { connect, type NatsConnection } from "nats";
import type { Change } from "../../lib/feed/changes";
import { CHANGES_STREAM } from "../../lib/feed/jetstream";
import { startCluster, type Cluster } from "../support/cluster";
import { waitFor } from "../support/process";
import { openStream } from "../support/sse";

// The cluster's change feed across a SIGKILL of the games node among concurrent writes (docs/followers.md, "JetStream in a
// cluster"): writes stored but not yet published when the node died are published by the node started again, and the JetStream
// stream ends holding exactly one change for each game write a client was told succeeded, none for a refused one, in feed order.

let cluster: Cluster;
let nats: NatsConnection;

beforeAll(async () => {
	cluster = await startCluster({ storage: "file" });
	nats = await connect({ servers: cluster.nats.url });
}, 60_000);
afterAll(async () => {
	await nats?.close();
	await cluster?.stop();
});

/** The games' changes the stream holds, in stream order. */
async function streamedGames(): Promise<Change[]> {
	const jsm = await nats.jetstreamManager();
	const { state } = await jsm.streams.info(CHANGES_STREAM);
	const changes: Change[] = [];
	for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
		const change = (await jsm.streams.getMessage(CHANGES_STREAM, { seq })).json<Change>();
		if (change.kind === "game") changes.push(change);
	}
	return changes;
}

/** The position of the games feed now, as GET /changes says it. */
async function gamesFeedEnd(): Promise<number> {
	const stream = await openStream(`${cluster.api.url}/changes?kinds=game`);
	try {
		const { id } = await stream.next(event => event.event === "ready", 10_000);
		return Number(/games:(\d+)/.exec(id!)![1]);
	} finally {
		stream.close();
	}
}

test("each acknowledged write is one change in JetStream after the games node's kill -9 among writes; refused ones none", async () => {
	const { api } = cluster;
	const category = await api.category("Killed");
	const author = await api.author("Killed");
	const acknowledged = new Set<string>();
	const refused = new Set<string>();
	const send = async (index: number) => {
		const requestId = `write-${index}`;
		const body = index % 10 === 9 ? { title: "", age: 10, category, author } : { title: `Game ${index}`, age: 10, category, author };
		const answer = await api.send("PUT", "/game", body, undefined, { "X-Request-ID": requestId }).catch(() => undefined);
		if (answer?.status === 200) acknowledged.add(requestId);
		else if (answer?.status === 400) refused.add(requestId);
	};
	const writing = Promise.all(
		Array.from({ length: 400 }, (_, index) => new Promise(resolve => setTimeout(resolve, index)).then(() => send(index))),
	);
	await new Promise(resolve => setTimeout(resolve, 150));
	await cluster.nodes.get("games")!.kill();
	cluster.start("games");
	await writing;
	await cluster.ready();
	expect(acknowledged.size).toBeGreaterThan(10);
	expect(refused.size).toBeGreaterThan(0);

	const end = await gamesFeedEnd();
	await waitFor("the stream holds every game change of the feed", async () => (await streamedGames()).length >= end, [
		...cluster.nodes.values(),
	]);
	const changes = await streamedGames();
	const byRequest = new Map<string, number>();
	for (const change of changes) byRequest.set(change.requestId!, (byRequest.get(change.requestId!) ?? 0) + 1);
	for (const requestId of acknowledged) expect([requestId, byRequest.get(requestId)]).toEqual([requestId, 1]);
	for (const requestId of refused) expect(byRequest.has(requestId)).toBe(false);
	// Once each, in the feed's order, and nothing but the feed: a change published again was dropped by its id.
	expect(changes.map(change => change.seq)).toEqual(changes.map((_, index) => index + 1));
	expect(changes).toHaveLength(end);
	const listed = (await api.get("/game")).body.map((game: { id: string }) => game.id).sort();
	expect(changes.map(change => change.record.id).sort()).toEqual(listed);
}, 90_000);
