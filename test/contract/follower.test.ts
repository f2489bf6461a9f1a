import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceBroker } from "moleculer";
import { gameTitles } from "../../examples/game-titles.service";
import brokerOptions from "../../moleculer.config";
import { clusterMember, startCatalogue, type Api, type Catalogue } from "../support/catalogue";

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
