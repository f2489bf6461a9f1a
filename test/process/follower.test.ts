import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceBroker } from "moleculer";
import { gameTitles } from "../../examples/game-titles.service";
import type { Api } from "../support/catalogue";
import { startCluster, type Cluster } from "../support/cluster";
import { waitFor } from "../support/process";

// The example follower (examples/game-titles.service.ts) beside a cluster of one process per service on a shared SQLite file:
// writes go on while the games node is killed (SIGKILL) and started again, and while the follower itself restarts; its copy
// ends equal to GET /game.

let cluster: Cluster;
let api: Api;
const folder = mkdtempSync(path.join(tmpdir(), "catalogue-follower-"));
const copyFile = path.join(folder, "titles.json");

beforeAll(async () => {
	cluster = await startCluster({ storage: "file" });
	api = cluster.api;
}, 60_000);
afterAll(async () => {
	await cluster?.stop();
	rmSync(folder, { recursive: true, force: true });
});

async function startFollower(): Promise<ServiceBroker> {
	const broker = new ServiceBroker({
		nodeID: `follower-${Date.now()}`,
		namespace: cluster.env("gameTitles").NAMESPACE,
		transporter: { type: "NATS", options: { url: cluster.nats.url } },
		logger: false,
	});
	broker.createService(gameTitles(copyFile));
	await broker.start();
	return broker;
}

/** The games as GET /game lists them, as [id, title] in id order. */
const listed = async () => ((await api.get("/game")).body as { id: string; title: string }[]).map(game => [game.id, game.title]).sort();

/** The follower's copy, as [id, title] in id order. */
const copied = async (follower: ServiceBroker) => Object.entries(await follower.call<Record<string, string>>("gameTitles.titles")).sort();

/** Writes `count` times: creates, renames and deletes games, ignoring the answers a killed node makes fail. */
async function writes(count: number, category: { id: string }, author: { id: string }): Promise<void> {
	const ids: string[] = [];
	for (let index = 0; index < count; index++) {
		const step = index % 3;
		if (step === 0 || ids.length === 0) {
			const answer = await api.put("/game", { title: `Game ${index}`, age: 10, category, author });
			if (answer.status === 200) ids.push(answer.body.game.id);
		} else if (step === 1) await api.put(`/game/${ids.at(-1)}`, { title: `Renamed ${index}`, age: 11, category, author });
		else if (index % 6 === 2) await api.delete(`/game/${ids.shift()}`);
	}
}

test("the copy equals GET /game after a games node's kill -9 and the follower's own restart", async () => {
	const category = await api.category("Followed");
	const author = await api.author("Followed");
	let follower = await startFollower();
	try {
		const writing = writes(120, category, author);
		await new Promise(resolve => setTimeout(resolve, 300));
		await cluster.nodes.get("games")!.kill();
		cluster.start("games");
		await follower.stop();
		await new Promise(resolve => setTimeout(resolve, 200));
		follower = await startFollower();
		await writing;
		await cluster.ready();
		await writes(30, category, author);
		expect((await listed()).length).toBeGreaterThan(10);
		await waitFor(
			"the follower's copy equals GET /game",
			async () => JSON.stringify(await copied(follower)) === JSON.stringify(await listed()),
			[...cluster.nodes.values()],
			15_000,
		);
		expect(await copied(follower)).toEqual(await listed());
	} finally {
		await follower.stop();
	}
}, 90_000);
