import { startCatalogue, type Catalogue } from "../support/catalogue";
import { waitFor } from "../support/process";

// The layout the contract's NATS project runs in, checked for itself: were startCatalogue to put
// the services back into one broker, the contract would still pass there, and this would not.

let catalogue: Catalogue;

beforeAll(async () => {
	catalogue = await startCatalogue({ topology: "nats" });
});
afterAll(() => catalogue?.stop());

const ownServices = (index: number) =>
	catalogue.brokers[index].services.map(service => service.name).filter(name => !name.startsWith("$"));

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
		await nats!.start();
		await waitFor("the gateway answers GET /game again", async () => (await api.get("/game")).status === 200);
		expect((await api.get("/game")).body).toEqual(before);
		const [{ category, author }] = before;
		const game = { title: "DVONN", age: 9, category: { id: category.id }, author: { id: author.id } };
		expect((await api.put("/game", game)).status).toBe(200);
	});
});
