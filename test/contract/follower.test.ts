import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceBroker, type Service } from "moleculer";
import { gameTitles } from "../../examples/game-titles.service";
import type { AnswerCache } from "../../lib/cache/answers";
import type { FeedPage } from "../../lib/feed/changes";
import brokerOptions from "../../moleculer.config";
import { clusterMember, localService, startCatalogue, type Api, type Catalogue } from "../support/catalogue";
import { waitFor } from "../support/process";

// The example follower (examples/game-titles.service.ts) in both layouts: its copy follows the writes, and after its own restart
// it resumes from the position it kept, without reading every game again. In one broker it runs on the gateway's node; over NATS
// on a node of its own, as another team's service would, as the kind of node NATS lets call what it calls (lib/config/broker-access.ts).

let catalogue: Catalogue;
let api: Api;
let broker: ServiceBroker;
const folder = mkdtempSync(path.join(tmpdir(), "catalogue-titles-"));
const copyFile = path.join(folder, "titles.json");

beforeAll(async () => {
	catalogue = await startCatalogue();
	({ api, broker } = catalogue);
	if (catalogue.nats) {
		const member = clusterMember(catalogue.nats, "follower", `follower.test-${process.pid}`);
		broker = new ServiceBroker({ ...brokerOptions, ...member, namespace: catalogue.namespace, cacher: undefined, logger: false });
		await broker.start();
	}
});
afterAll(async () => {
	if (broker !== catalogue.broker) await broker.stop();
	await catalogue.stop();
	rmSync(folder, { recursive: true, force: true });
});

const listed = async () => ((await api.get("/game")).body as { id: string; title: string }[]).map(game => [game.id, game.title]).sort();
const copied = async () => Object.entries(await broker.call<Record<string, string>>("gameTitles.titles")).sort();

async function settled(): Promise<void> {
	for (let tries = 0; tries < 100; tries++) {
		if (JSON.stringify(await copied()) === JSON.stringify(await listed())) return;
		await new Promise(resolve => setTimeout(resolve, 50));
	}
	expect(await copied()).toEqual(await listed());
}

test("the copy follows creates, updates and removes, and resumes after the follower's restart", async () => {
	const category = await api.category("Titles");
	const author = await api.author("Titles");
	const first = await api.game("First", category, author);
	let follower = broker.createService(gameTitles(copyFile));
	await broker.waitForServices("gameTitles");
	const second = await api.game("Second", category, author);
	await api.put(`/game/${first.id}`, { title: "First, renamed", age: 10, category, author });
	await settled();
	expect(Object.fromEntries(await copied())).toMatchObject({ [first.id]: "First, renamed", [second.id]: "Second" });

	await broker.destroyService(follower);
	await api.delete(`/game/${second.id}`);
	const third = await api.game("Third", category, author);
	const lists = jest.spyOn(broker, "call");
	follower = broker.createService(gameTitles(copyFile));
	await broker.waitForServices("gameTitles");
	await settled();
	expect(Object.fromEntries(await copied())).toMatchObject({ [third.id]: "Third" });
	expect(Object.fromEntries(await copied())).not.toHaveProperty(second.id);
	expect(lists.mock.calls.map(([action]) => action)).not.toContain("games.list");
	lists.mockRestore();
	await broker.destroyService(follower);
});

test("a full read made between a write's commit and its cache move still holds that write: the list is not the cached one", async () => {
	const category = await api.category("Full reads");
	const author = await api.author("Full reads");
	await api.game("Listed before", category, author);
	expect((await api.get("/game")).status).toBe(200);
	// The games node's move of its generation waits: the write is stored and in the feed, the cached list from before it current.
	const cacher = localService<Service>(catalogue, "games").broker.cacher as unknown as AnswerCache;
	const moveOn = cacher.nextGeneration.bind(cacher);
	let release!: () => void;
	const moved = new Promise<void>(resolve => (release = resolve));
	const held = jest.spyOn(cacher, "nextGeneration");
	held.mockImplementation(async service => {
		if (service === "games") await moved;
		return moveOn(service);
	});
	try {
		const creating = api.game("Written during the read", category, author);
		await waitFor("the write is in the feed", async () => {
			const { changes } = await broker.call<FeedPage, object>("games.changes", { after: 0 });
			return changes.some(change => (change.record as { title?: string }).title === "Written during the read");
		});
		rmSync(copyFile, { force: true });
		const follower = broker.createService(gameTitles(copyFile));
		await broker.waitForServices("gameTitles");
		release();
		const created = await creating;
		await settled();
		expect(Object.fromEntries(await copied())).toHaveProperty(created.id, "Written during the read");
		await broker.destroyService(follower);
	} finally {
		release();
		held.mockRestore();
	}
});
