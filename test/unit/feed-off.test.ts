import { ServiceBroker } from "moleculer";
import { texts } from "../../lib/catalogue/errors";
import brokerOptions from "../../moleculer.config";
import AuthorsService from "../../services/authors.service";
import CategoriesService from "../../services/categories.service";
import GamesService from "../../services/games.service";

// CHANGE_FEED=off as a follower on the broker meets it (docs/followers.md, "Operators"): each service's `changes` action answers
// 404 with the text the gateway gives, and writes record nothing. Hoisted above the imports: the services read it when created.
jest.mock("../../lib/config/config", () => {
	const actual = jest.requireActual("../../lib/config/config");
	return { ...actual, config: actual.readConfig({ ...process.env, STORAGE: "memory", CHANGE_FEED: "off" }) };
});

let broker: ServiceBroker;

beforeAll(async () => {
	broker = new ServiceBroker({ ...brokerOptions, nodeID: `feed-off-${process.pid}`, logger: false, transporter: undefined });
	for (const schema of [AuthorsService, CategoriesService, GamesService]) broker.createService(schema);
	await broker.start();
});
afterAll(() => broker?.stop());

test.each(["categories", "authors", "games"])("%s.changes answers 404 with the feedOff text", async service => {
	await expect(broker.call(`${service}.changes`, { after: 0 })).rejects.toMatchObject({
		code: 404,
		type: "FEED_OFF",
		message: texts.feedOff,
	});
});

test("writes work and record no change: the store's feed stays empty", async () => {
	const { category } = await broker.call<{ category: { id: string } }, object>("categories.create", { name: "Unfollowed" });
	await broker.call("categories.update", { id: category.id, name: "Still unfollowed" });
	const { adapter } = broker.getLocalService("categories") as unknown as {
		adapter: { changesAfter(after: number, limit: number): Promise<{ changes: unknown[]; last: number }> };
	};
	expect(await adapter.changesAfter(0, 10)).toMatchObject({ changes: [], last: 0 });
});
