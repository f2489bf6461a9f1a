import { actionCounter } from "../support/calls";
import { newId } from "../../lib/ids";
import { forgetCachedAnswers, localService, startCatalogue, type Catalogue } from "../support/catalogue";

// GET /game costs the same broker calls whatever the number of games: the list populates its
// categories and authors with one batched call each (README, "Performance"). The games go
// straight into the store: seeding 100,000 through HTTP is the benchmark's job (bench/).

let catalogue: Catalogue;

/** How often each action runs, on every node. */
const { calls, middleware: countCalls } = actionCounter();

let categories: { id: string }[];
let authors: { id: string }[];
let stored = 0;

beforeAll(async () => {
	catalogue = await startCatalogue({ middlewares: [countCalls] });
	categories = await Promise.all(Array.from({ length: 10 }, (_, i) => catalogue.api.category(`Category ${i}`)));
	authors = await Promise.all(Array.from({ length: 50 }, (_, i) => catalogue.api.author(`Author ${i}`, "Nowhere")));
});
afterAll(() => catalogue.stop());

/** Adds games to the store until it holds `count`. */
async function storeGames(count: number): Promise<void> {
	const { adapter } = localService<{ adapter: { insertMany(games: object[]): Promise<unknown> } }>(catalogue, "games");
	const games = Array.from({ length: count - stored }, (_, i) => ({
		_id: newId(),
		title: `Game ${stored + i}`,
		age: i % 18,
		category: categories[i % categories.length].id,
		author: authors[i % authors.length].id,
	}));
	await adapter.insertMany(games);
	stored = count;
}

/** The actions one uncached GET /game runs, and how many games it answered. */
async function listGames(): Promise<{ calls: Record<string, number>; games: number }> {
	await forgetCachedAnswers(catalogue);
	calls.clear();
	const { status, body } = await catalogue.api.get("/game");
	expect({ status, msg: body.msg }).toEqual({ status: 200, msg: undefined });
	return { calls: Object.fromEntries(calls), games: body.length };
}

test("GET /game runs the same four actions (the gateway, the list and one batched lookup each of categories and authors) over 200, 10,000 and 100,000 games", async () => {
	const expected = { "api.rest": 1, "games.list": 1, "categories.get": 1, "authors.get": 1 };
	for (const count of [200, 10_000, 100_000]) {
		await storeGames(count);
		expect(await listGames()).toEqual({ calls: expected, games: count });
	}
}, 120_000);

test("the indexes of the claims that only writes in progress carry are sparse, so a write does not cost the size of the store", () => {
	const { adapter } = localService<{ adapter: { db?: { indexes?: Record<string, { sparse: boolean }> } } }>(catalogue, "games");
	// MongoDB's side is checked in test/unit/mongo-storage.test.ts.
	const indexes = adapter.db?.indexes;
	if (process.env.MONGO_URI) return expect(indexes).toBeUndefined();
	for (const field of ["draft", "change.category", "change.author", "change.at"]) expect(indexes?.[field].sparse).toBe(true);
	for (const field of ["category", "author"]) expect(indexes?.[field].sparse).toBe(false);
});
