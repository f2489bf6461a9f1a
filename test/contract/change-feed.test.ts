import type { ServiceBroker } from "moleculer";
import { newId } from "../../lib/catalogue/ids";
import type { Change, FeedPage } from "../../lib/feed/changes";
import type { DataServiceName } from "../../lib/catalogue/services";
import { RECORDED_INSERT, startCatalogue, withBrokenStorage, type Api, type Catalogue } from "../support/catalogue";

// The change feed (docs/followers.md) through the services, in both layouts: each acknowledged write is one change in its
// service's feed, in write order; a refused write is none.

let catalogue: Catalogue;
let api: Api;
let broker: ServiceBroker;

beforeAll(async () => {
	catalogue = await startCatalogue();
	({ api, broker } = catalogue);
});
afterAll(() => catalogue.stop());

const feed = (service: DataServiceName, after = 0) => broker.call<FeedPage, { after: number }>(`${service}.changes`, { after });

/** The position of each feed now, so that a test reads only the changes its own requests made. */
async function positions(): Promise<Record<DataServiceName, number>> {
	const [authors, categories, games] = await Promise.all((["authors", "categories", "games"] as const).map(name => feed(name)));
	return { authors: authors.last, categories: categories.last, games: games.last };
}

/** The changes written to `service`'s feed since `after`. */
const since = async (service: DataServiceName, after: number): Promise<Change[]> => (await feed(service, after)).changes;

/** The node that runs `service`: over NATS, only it and the import tool may call its importRecords (lib/config/broker-access.ts). */
const nodeOf = (service: string) => catalogue.brokers.find(each => each.getLocalService(service))!;

describe("every acknowledged write is one change, with the record after it", () => {
	test("create, update and remove of a category, an author and a game, in write order", async () => {
		const at = await positions();
		const category = await api.category("Feed");
		const author = await api.author("Feed Author", "Dutch");
		const game = await api.game("Feed Game", category, author, 8);
		expect(await api.put(`/game/${game.id}`, { title: "Feed Game 2", age: 8, category, author })).toMatchObject({ status: 200 });
		expect(await api.put(`/author/${author.id}`, { name: "Feed Author 2", nationality: "Dutch" })).toMatchObject({ status: 200 });
		expect(await api.delete(`/game/${game.id}`)).toMatchObject({ status: 200 });
		expect(await api.delete(`/author/${author.id}`)).toMatchObject({ status: 200 });
		expect(await api.put(`/category/${category.id}`, { name: "Feed 2" })).toMatchObject({ status: 200 });

		const games = await since("games", at.games);
		expect(games.map(change => [change.type, change.record])).toEqual([
			["created", { id: game.id, title: "Feed Game", age: 8, category: category.id, author: author.id }],
			["updated", { id: game.id, title: "Feed Game 2", age: 8, category: category.id, author: author.id }],
			["removed", { id: game.id }],
		]);
		expect(games.map(change => change.seq)).toEqual([at.games + 1, at.games + 2, at.games + 3]);
		expect((await since("authors", at.authors)).map(change => [change.type, change.record])).toEqual([
			["created", { id: author.id, name: "Feed Author", nationality: "Dutch" }],
			["updated", { id: author.id, name: "Feed Author 2", nationality: "Dutch" }],
			["removed", { id: author.id }],
		]);
		expect((await since("categories", at.categories)).map(change => [change.type, change.record])).toEqual([
			["created", { id: category.id, name: "Feed" }],
			["updated", { id: category.id, name: "Feed 2" }],
		]);
		for (const change of games) {
			expect(change).toMatchObject({ kind: "game", id: expect.stringMatching(/^[0-9A-Z]{26}$/) });
			expect(Date.parse(change.at)).toBeGreaterThan(Date.now() - 60_000);
		}
		expect(new Set(games.map(change => change.id)).size).toBe(3);
	});

	test("a change carries the request id the client sent", async () => {
		const at = await positions();
		const answer = await api.send("PUT", "/category", { name: "Traced" }, undefined, { "X-Request-ID": "feed-request-1" });
		expect(answer.status).toBe(200);
		expect(await since("categories", at.categories)).toEqual([expect.objectContaining({ requestId: "feed-request-1" })]);
	});

	test("a change names who made it when the request was signed in, and no one otherwise", async () => {
		const at = await positions();
		const user = { sub: "alice", via: "identity-provider", mayWrite: true };
		await broker.call("categories.create", { name: "Signed" }, { meta: { user } });
		await broker.call("categories.create", { name: "Unsigned" });
		const [signed, unsigned] = await since("categories", at.categories);
		expect(signed.subject).toBe("alice");
		expect(unsigned).not.toHaveProperty("subject");
	});

	test("imported records are created changes, an imported change of a present record an updated one", async () => {
		const at = await positions();
		const category = newId();
		const author = newId();
		const game = newId();
		await nodeOf("categories").call("categories.importRecords", { records: [{ id: category, name: "Imported" }] });
		await nodeOf("authors").call("authors.importRecords", { records: [{ id: author, name: "Imported", nationality: "Irish" }] });
		const imported = { id: game, title: "Imported", age: 12, category, author };
		await nodeOf("games").call("games.importRecords", { records: [imported] });
		await nodeOf("games").call("games.importRecords", { records: [{ ...imported, age: 14 }] });
		expect((await since("games", at.games)).map(change => [change.type, change.record])).toEqual([
			["created", imported],
			["updated", { ...imported, age: 14 }],
		]);
		expect((await since("categories", at.categories)).map(change => change.record)).toEqual([{ id: category, name: "Imported" }]);
		expect((await since("authors", at.authors)).map(change => change.type)).toEqual(["created"]);
	});

	test("concurrent updates of one game: one change each, in the order they were stored, the last one the game as it is", async () => {
		const category = await api.category("Race");
		const author = await api.author("Race Author");
		const game = await api.game("Race 0", category, author);
		const at = await positions();
		const titles = Array.from({ length: 12 }, (_, index) => `Race ${index + 1}`);
		const answers = await Promise.all(titles.map(title => api.put(`/game/${game.id}`, { title, age: 10, category, author })));
		expect(answers.map(answer => answer.status)).toEqual(titles.map(() => 200));
		const changes = await since("games", at.games);
		expect(changes.map(change => change.record.title).sort()).toEqual([...titles].sort());
		expect(changes.map(change => change.seq)).toEqual(titles.map((_, index) => at.games + index + 1));
		const listed = (await api.get(`/game/${game.title.slice(0, 4)}`)).body.find((each: { id: string }) => each.id === game.id);
		expect(changes.at(-1)!.record.title).toBe(listed.title);
	});
});

describe("a refused write is no change", () => {
	test("invalid bodies, unknown ids, a game's missing reference and a delete in use", async () => {
		const category = await api.category("Refused");
		const author = await api.author("Refused Author");
		const game = await api.game("Refused Game", category, author);
		const at = await positions();
		const refused = [
			await api.put("/category", { name: "" }),
			await api.put(`/category/${newId()}`, { name: "Nobody" }),
			await api.put(`/author/${newId()}`, { name: "Nobody", nationality: "None" }),
			await api.put("/game", { title: "Orphan", age: 9, category: { id: newId() }, author }),
			await api.put(`/game/${game.id}`, { title: "Refused", age: 10, category, author: { id: newId() } }),
			await api.delete(`/game/${newId()}`),
			await api.delete(`/author/${author.id}`),
			await api.delete(`/category/${category.id}`),
		];
		expect(refused.map(answer => answer.status)).toEqual(refused.map(() => 400));
		expect(await positions()).toEqual(at);
	});

	test("a write the store refuses", async () => {
		const at = await positions();
		const answer = await withBrokenStorage(catalogue, ["categories", RECORDED_INSERT], () => api.put("/category", { name: "Broken" }));
		expect(answer.status).toBe(400);
		expect(await positions()).toEqual(at);
	});
});

describe("the broadcast after a change is stored", () => {
	test("<service>.<type> with the change itself, on every node", async () => {
		const heard: Change[] = [];
		const listener = catalogue.brokers[0].createService({
			name: `feed-listener-${newId()}`,
			events: {
				"categories.created"(ctx: { params: Change }) {
					heard.push(ctx.params);
				},
			},
		});
		await Promise.all(catalogue.brokers.map(each => each.waitForServices(listener.name)));
		const at = await positions();
		const category = await api.category("Broadcast");
		const [stored] = await since("categories", at.categories);
		for (let tries = 0; heard.length === 0 && tries < 100; tries++) await new Promise(resolve => setTimeout(resolve, 20));
		expect(heard).toEqual([stored]);
		expect(stored.record).toEqual(category);
		await catalogue.brokers[0].destroyService(listener);
	});
});
