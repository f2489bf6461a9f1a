import { actionCounter } from "../support/calls";
import { newId } from "../../lib/catalogue/ids";
import { config } from "../../lib/config/config";
import { forgetCachedAnswers, localService, startCatalogue, type Catalogue } from "../support/catalogue";
import { rawRequest } from "../support/raw-http";
import { turnsDuring } from "../support/turns";

// GET /game costs the same broker calls whatever the number of games: the list populates its
// categories and authors with one batched call each (docs/performance.md). The games go
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

/** The connections of a SQLite database: the writer, and those its long reads take (lib/storage/sqlite-database.ts). */
type Connections<C> = { writer: C; readers: { take(): C } };

/** What a connected SqliteAdapter keeps: the database its statements are prepared on. */
type SqliteStore = { adapter: { database?: Connections<Connection> } };
type Connection = { prepare(sql: string): { all(...values: unknown[]): { detail: string }[] } };

/** Calls `watch` with every connection of `database` a statement is prepared on from now on; the returned function stops it. */
function watchConnections<C extends object>(database: Connections<C>, watch: (connection: C) => void): () => void {
	const { readers } = database;
	const take = readers.take.bind(readers);
	watch(database.writer);
	readers.take = () => {
		const connection = take();
		watch(connection);
		return connection;
	};
	return () => {
		readers.take = take;
	};
}

/** Records the SQL of every statement the games' store prepares from now on. */
function recordStatements(database: Connections<Connection>): Set<string> {
	const statements = new Set<string>();
	const watched = new WeakSet<Connection>();
	watchConnections(database, connection => {
		if (watched.has(connection)) return;
		watched.add(connection);
		const prepare = connection.prepare.bind(connection);
		connection.prepare = (sql: string) => (statements.add(sql), prepare(sql));
	});
	return statements;
}

test("every statement of a game's create, update, delete, page and count reads an index: no scan of the games, no sort of them", async () => {
	const { database } = localService<SqliteStore>(catalogue, "games").adapter;
	// MongoDB's indexes are checked in test/unit/mongo-storage.test.ts.
	if (process.env.MONGO_URI) return expect(database).toBeUndefined();
	await storeGames(10_000);
	const statements = recordStatements(database!);
	const { api } = catalogue;
	const games = (await api.post("/game", { pageable: { pageNumber: 3, pageSize: 10, sort: { property: "title", direction: "desc" } } }))
		.body.content as { id: string }[];
	await api.post("/game", { pageable: { pageNumber: 30, pageSize: 10, sort: { property: "age" } } });
	for (const [i, game] of games.entries()) {
		const body = {
			title: `Changed ${i}`,
			age: 7,
			category: { id: categories[(i + 3) % 10].id },
			author: { id: authors[(i + 7) % 50].id },
		};
		expect((await api.put(`/game/${game.id}`, body)).status).toBe(200);
	}
	for (let i = 0; i < 5; i++) {
		const game = await api.game(`New ${i}`, categories[i], authors[i]);
		expect((await api.delete(`/game/${game.id}`)).status).toBe(200);
	}
	expect((await api.delete(`/category/${categories[0].id}`)).status).toBe(400);
	const plans = [...statements].map(sql => ({
		sql,
		plan: database!.writer
			.prepare(`EXPLAIN QUERY PLAN ${sql}`)
			.all()
			.map(step => step.detail),
	}));
	expect(plans.length).toBeGreaterThan(5);
	// A descending page keeps equal titles in id order: SQLite then sorts each run of equal titles
	// ("FOR LAST TERM OF ORDER BY"), never the whole collection.
	const unindexed = plans.filter(({ plan }) => plan.some(step => /^SCAN games$|TEMP B-TREE FOR ORDER BY/.test(step)));
	expect(unindexed).toEqual([]);
	// The next test grows the store from nothing.
	await localService<{ adapter: { removeMany(query: object): Promise<number> } }>(catalogue, "games").adapter.removeMany({});
	stored = 0;
}, 60_000);

/** What a MongoDB collection answers `explain()` with: the plan it chose. */
type Explained = { queryPlanner: { winningPlan: object } };
type MongoCollection = {
	find(query: object): { sort(spec: object): { skip(n: number): { limit(n: number): { explain(): Promise<Explained> } } } };
};

(process.env.MONGO_URI ? test : test.skip)(
	"MongoDB reads every one-key page order from an index, descending ones included: it sorts nothing in memory",
	async () => {
		await storeGames(10_000);
		const collectionOf = (service: string) =>
			localService<{ adapter: { collection: MongoCollection } }>(catalogue, service).adapter.collection;
		const pages: [string, object, object][] = [
			...[{ _id: 1 }, { _id: -1 }, { title: 1, _id: 1 }, { title: -1, _id: 1 }, { age: 1, _id: 1 }, { age: -1, _id: 1 }].map(
				(sort): [string, object, object] => ["games", { draft: { $exists: false } }, sort],
			),
			...[
				{ name: 1, _id: 1 },
				{ name: -1, _id: 1 },
				{ nationality: -1, _id: 1 },
			].map((sort): [string, object, object] => ["authors", {}, sort]),
		];
		for (const [service, query, sort] of pages) {
			const { queryPlanner } = await collectionOf(service).find(query).sort(sort).skip(100).limit(10).explain();
			expect({ service, sort, plan: JSON.stringify(queryPlanner.winningPlan) }).toEqual({
				service,
				sort,
				plan: expect.not.stringContaining('"stage":"SORT"'),
			});
		}
		await localService<{ adapter: { removeMany(query: object): Promise<number> } }>(catalogue, "games").adapter.removeMany({});
		stored = 0;
	},
	60_000,
);

test("GET /game runs the same four actions (the gateway, the list and one batched lookup each of categories and authors) over 200, 10,000 and 100,000 games", async () => {
	const expected = { "api.rest": 1, "games.list": 1, "categories.get": 1, "authors.get": 1 };
	for (const count of [200, 10_000, 100_000]) {
		await storeGames(count);
		expect(await listGames()).toEqual({ calls: expected, games: count });
	}
}, 120_000);

test("GET /game of 100,000 games asked again is answered from the cache under the default bounds (CACHE_MAX_MB)", async () => {
	expect(config.cacheMaxBytes).toBe(64 * 1024 * 1024);
	await storeGames(100_000);
	const first = await listGames();
	calls.clear();
	const { status, body } = await catalogue.api.get("/game");
	expect({ status, games: body.length, calls: Object.fromEntries(calls) }).toEqual({
		status: 200,
		games: first.games,
		calls: { "api.rest": 1 },
	});
}, 120_000);

test("4 clients listing 100,000 games again and again: every GET /author meanwhile answers within half the time the list takes to make", async () => {
	await storeGames(100_000);
	const { api } = catalogue;
	await api.put(`/category/${categories[0].id}`, { name: "Category 0" });
	const made = performance.now();
	const { status, body } = await rawRequest(`${api.url}/game`);
	const makingMs = performance.now() - made;
	expect(status).toBe(200);
	let listing = true;
	const lister = async () => {
		for (let i = 0; i < 5; i++) expect((await rawRequest(`${api.url}/game`)).body.length).toBe(body.length);
	};
	const listers = Promise.all(Array.from({ length: 4 }, lister)).finally(() => (listing = false));
	const waits: number[] = [];
	while (listing) {
		const sent = performance.now();
		expect((await rawRequest(`${api.url}/author`)).status).toBe(200);
		waits.push(performance.now() - sent);
	}
	await listers;
	expect(waits.length).toBeGreaterThan(0);
	expect(Math.max(...waits)).toBeLessThan(makingMs / 2);
}, 120_000);

test("GET /game of 100,000 games made afresh: at most 1,000 games are made ready between two turns of the event loop", async () => {
	await storeGames(100_000);
	const { adapter } = localService<{ adapter: { entityToObject(doc: object): object } }>(catalogue, "games");
	const entityToObject = adapter.entityToObject.bind(adapter);
	let ready = 0;
	adapter.entityToObject = doc => (ready++, entityToObject(doc));
	// Each turn of the loop notes how many games were made ready since the last one.
	const { result, most } = await turnsDuring(listGames, () => ready).finally(() => (adapter.entityToObject = entityToObject));
	expect(result.games).toBe(100_000);
	expect(ready).toBe(100_000);
	expect(most).toBeLessThanOrEqual(1000);
}, 120_000);

/** A statement's rows as SQLite hands them out one by one. */
type Iterating = { prepare(sql: string): { iterate(...values: unknown[]): Iterable<unknown> } };

test("GET /game of 100,000 games made afresh in one process: read from the store a slice at a time, each slice made ready before the next is read", async () => {
	await storeGames(100_000);
	const { adapter } = localService<{
		adapter: { database?: Connections<Iterating>; entityToObject(doc: object): object };
	}>(catalogue, "games");
	// MongoDB's adapter answers a query at once; its reads are not SQLite's statements.
	if (process.env.MONGO_URI) return expect(adapter.database).toBeUndefined();
	const entityToObject = adapter.entityToObject.bind(adapter);
	let read = 0;
	let ready = 0;
	let mostUnready = 0;
	const prepares = new Map<Iterating, Iterating["prepare"]>();
	const stopWatching = watchConnections(adapter.database!, connection => {
		if (prepares.has(connection)) return;
		const { prepare } = connection;
		prepares.set(connection, prepare);
		connection.prepare = (sql: string) => {
			const statement = prepare.call(connection, sql);
			const iterate = statement.iterate.bind(statement);
			statement.iterate = function* (...values: unknown[]) {
				for (const row of iterate(...values)) {
					read++;
					yield row;
				}
			};
			return statement;
		};
	});
	adapter.entityToObject = doc => {
		mostUnready = Math.max(mostUnready, read - ready);
		ready++;
		return entityToObject(doc);
	};
	try {
		expect((await listGames()).games).toBe(100_000);
	} finally {
		stopWatching();
		for (const [connection, prepare] of prepares) connection.prepare = prepare;
		adapter.entityToObject = entityToObject;
	}
	expect(read).toBe(100_000);
	// Over NATS the gateway's cache asks the games node for the list's records, which it reads whole before it makes them ready.
	if (catalogue.topology === "nats") expect(mostUnready).toBe(100_000);
	else expect(mostUnready).toBeLessThanOrEqual(1000);
}, 120_000);
