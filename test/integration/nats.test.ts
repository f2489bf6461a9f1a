import { forgetCachedAnswers, startCatalogue, type Catalogue } from "../support/catalogue";
import { waitFor } from "../support/process";

// The layout the contract's NATS project runs in, checked for itself: were startCatalogue to put
// the services back into one broker, the contract would still pass there, and this would not.

let catalogue: Catalogue;

beforeAll(async () => {
	catalogue = await startCatalogue({ topology: "nats" });
});
afterAll(() => catalogue?.stop());

const ownServices = (index: number) => catalogue.brokers[index].services.map(service => service.name).filter(name => !name.startsWith("$"));

describe("four brokers over a NATS server of the test's own", () => {
	test("each service runs in a broker of its own, with its own nodeID, in one namespace of its own", () => {
		expect(catalogue.brokers.map((_broker, index) => ownServices(index))).toEqual([["api"], ["authors"], ["categories"], ["games"]]);
		expect(new Set(catalogue.brokers.map(broker => broker.nodeID)).size).toBe(4);
		expect(new Set(catalogue.brokers.map(broker => broker.namespace)).size).toBe(1);
		expect(catalogue.broker.namespace).toMatch(/^catalogue-test-/);
		for (const broker of catalogue.brokers) expect(broker.transit?.connected).toBe(true);
	});

	test("the gateway reaches the other services on their nodes, and games reaches categories and authors", async () => {
		const { api } = catalogue;
		const category = await api.category("Abstract");
		const author = await api.author("Kris Burm", "Belgian");
		const game = await api.game("YINSH", category, author);
		expect((await api.get("/game")).body).toEqual([{ ...game, category, author }]);
		const games = catalogue.broker.registry.getServiceList({ onlyAvailable: true }).find(service => service.name === "games");
		expect(games?.nodeID).toBe(catalogue.brokers[3].nodeID);
	});

	test("after its NATS server restarts, the nodes reconnect and the catalogue answers with what it had", async () => {
		const { api, nats } = catalogue;
		const before = (await api.get("/game")).body;
		await nats!.stop();
		try {
			// Off NATS, the gateway hears of no write: once it has lost sight of games (heartbeats),
			// it answers nothing from the shared cache.
			const seesGames = () =>
				catalogue.broker.registry.getServiceList({ onlyAvailable: true }).some(service => service.name === "games");
			await waitFor("the gateway loses sight of games", async () => !seesGames());
			expect((await api.get("/game")).status).toBe(503);
		} finally {
			await nats!.start();
		}
		// Uncached, so that the answer needs games, categories and authors back on NATS.
		const listed = async () => (await forgetCachedAnswers(catalogue), (await api.get("/game")).status === 200);
		await waitFor("the gateway answers GET /game again from the services", listed);
		expect((await api.get("/game")).body).toEqual(before);
		const [{ category, author }] = before;
		const game = { title: "DVONN", age: 9, category: { id: category.id }, author: { id: author.id } };
		expect((await api.put("/game", game)).status).toBe(200);
	});
});
