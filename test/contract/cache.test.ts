import { MemoryAnswers } from "../../lib/cache/memory-cacher";
import { RedisAnswers } from "../../lib/cache/redis-cacher";
import { DATA_SERVICE_NAMES } from "../../lib/catalogue/services";
import { eventCounter } from "../support/calls";
import { localService, startCatalogue, type Api, type Catalogue } from "../support/catalogue";
import { rawRequest } from "../support/raw-http";

// Reads are cached (in memory in one broker, in Redis shared by the nodes over NATS) and a write
// never leaves a stale answer behind: docs/caching.md.

let catalogue: Catalogue;
let api: Api;

const STORES = DATA_SERVICE_NAMES;
const READ_METHODS = ["find", "findInSteps", "count", "findById", "findByIds", "findOne"];
type Adapter = Record<string, (...args: unknown[]) => Promise<unknown>>;
const adapterOf = (service: string) => localService<{ adapter: Adapter }>(catalogue, service).adapter;

/** How many times each store was read while `request` ran. */
async function storeReads(request: () => Promise<unknown>): Promise<Record<string, number>> {
	const reads: Record<string, number> = { authors: 0, categories: 0, games: 0 };
	const originals = STORES.map(service => {
		const adapter = adapterOf(service);
		// MongoDB's adapter has no read in steps.
		const saved = READ_METHODS.filter(method => adapter[method]).map(method => [method, adapter[method]] as const);
		for (const [method, original] of saved)
			adapter[method] = (...args) => {
				reads[service]++;
				return original.apply(adapter, args);
			};
		return () => saved.forEach(([method, original]) => (adapter[method] = original));
	});
	try {
		await request();
	} finally {
		originals.forEach(restore => restore());
	}
	return reads;
}

/** Every event handled, by every service on every broker. */
const events = eventCounter();

const sum = (reads: Record<string, number>) => Object.values(reads).reduce((a, b) => a + b, 0);

let strategy: { id: string };
let family: { id: string };
let knizia: { id: string };
let teuber: { id: string };
let catan: { id: string };

beforeAll(async () => {
	catalogue = await startCatalogue({ middlewares: [events.middleware] });
	api = catalogue.api;
	strategy = await api.category("Strategy");
	family = await api.category("Family");
	knizia = await api.author("Reiner Knizia", "German");
	teuber = await api.author("Klaus Teuber", "German");
	catan = await api.game("Catan", family, teuber);
	await api.game("Tigris & Euphrates", strategy, knizia);
});
afterAll(() => catalogue.stop());

const page = { pageable: { pageNumber: 0, pageSize: 10, sort: { property: "name", direction: "desc" } } };
const READS: [string, () => Promise<{ status: number; body: unknown }>][] = [
	["GET /author", () => api.get("/author")],
	["POST /author (a page)", () => api.post("/author", page)],
	["GET /author/{id}", () => api.get(`/author/${knizia.id}`)],
	["GET /category", () => api.get("/category")],
	["GET /category?name=", () => api.get("/category?name=fam")],
	["GET /category/{id}", () => api.get(`/category/${family.id}`)],
	["GET /game", () => api.get("/game")],
	["GET /game?title=&idCategory=", () => api.get(`/game?title=cat&idCategory=${family.id}`)],
];

describe("reads come from the cache", () => {
	test.each(READS)("%s: asked again, the same answer without reading any store", async (_read, read) => {
		const first = await read();
		let again: Awaited<ReturnType<typeof read>> | undefined;
		const reads = await storeReads(async () => (again = await read()));
		expect(first.status).toBe(200);
		expect({ status: again?.status, body: again?.body }).toEqual({ status: 200, body: first.body });
		expect(sum(reads)).toBe(0);
	});

	test("a list filtered another way is an answer of its own", async () => {
		await api.get("/category?name=fam");
		const { body } = await api.get("/category?name=str");
		expect(body).toEqual([{ id: strategy.id, name: "Strategy" }]);
	});
});

describe("a hit is sent as it is kept", () => {
	/** The calls of JSON.parse and JSON.stringify, anywhere in this process (every broker of the catalogue), on text at least `size` long. */
	async function jsonWork(size: number, request: () => Promise<unknown>): Promise<{ parsed: number; serialized: number }> {
		const big = (text: unknown) => (typeof text === "string" || Buffer.isBuffer(text)) && text.length >= size;
		const parse = jest.spyOn(JSON, "parse");
		const stringify = jest.spyOn(JSON, "stringify");
		try {
			await request();
			return {
				parsed: parse.mock.calls.filter(([text]) => big(text)).length,
				serialized: stringify.mock.results.filter(({ value }) => big(value)).length,
			};
		} finally {
			parse.mockRestore();
			stringify.mockRestore();
		}
	}
	const list = () => rawRequest(`${api.url}/game`);

	test("GET /game asked again: its JSON is neither parsed nor serialized, on the gateway's node or any other", async () => {
		const { body } = await list();
		expect(await jsonWork(body.length, list)).toEqual({ parsed: 0, serialized: 0 });
		expect((await list()).body.equals(body)).toBe(true);
		// The count sees the work a computed answer does: after a write, the list is made and serialized once.
		await api.put(`/game/${catan.id}`, { title: "Catan", age: 10, category: family, author: teuber });
		expect((await jsonWork(body.length, list)).serialized).toBeGreaterThanOrEqual(1);
	});
});

describe("the same answer is made once", () => {
	const rename = () => api.put(`/author/${teuber.id}`, { name: "Klaus Teuber", nationality: "German" });

	test("GET /game asked by 8 clients at once after a write: the stores are read as for one, and all 8 get the answer", async () => {
		const read = () => api.get("/game");
		// The first, untimed, caches what a write of an author leaves cached (the categories a list populates).
		await rename();
		await read();
		await rename();
		let alone: Awaited<ReturnType<typeof read>> | undefined;
		const once = await storeReads(async () => (alone = await read()));
		await rename();
		let together: Awaited<ReturnType<typeof read>>[] = [];
		const reads = await storeReads(async () => (together = await Promise.all(Array.from({ length: 8 }, read))));
		expect(sum(once)).toBeGreaterThan(0);
		expect(reads).toEqual(once);
		for (const answer of together) expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: alone?.body });
	});
});

/** Every read of READS, so that each is cached before a write. */
const readEverything = () => Promise.all(READS.map(([, read]) => read()));

describe("no read is stale after a write", () => {
	test("a renamed author shows in the author reads and in every game list that embeds the author", async () => {
		await readEverything();
		expect((await api.put(`/author/${knizia.id}`, { name: "R. Knizia", nationality: "Deutsch" })).status).toBe(200);
		const renamed = { id: knizia.id, name: "R. Knizia", nationality: "Deutsch" };
		expect((await api.get("/author")).body).toContainEqual(renamed);
		expect((await api.get(`/author/${knizia.id}`)).body).toEqual(renamed);
		expect((await api.post("/author", page)).body.content).toContainEqual(renamed);
		expect((await api.get("/game")).body.find((game: { title: string }) => game.title === "Tigris & Euphrates").author).toEqual(
			renamed,
		);
		expect((await api.get(`/game?title=tigris&idCategory=${strategy.id}`)).body[0].author).toEqual(renamed);
	});

	test("a renamed category shows in the category reads and in every game list that embeds it", async () => {
		await readEverything();
		expect((await api.put(`/category/${family.id}`, { name: "Family games" })).status).toBe(200);
		const renamed = { id: family.id, name: "Family games" };
		expect((await api.get("/category")).body).toContainEqual(renamed);
		expect((await api.get("/category?name=fam")).body).toEqual([renamed]);
		expect((await api.get(`/category/${family.id}`)).body).toEqual(renamed);
		expect((await api.get("/game")).body.find((game: { id: string }) => game.id === catan.id).category).toEqual(renamed);
		expect((await api.get(`/game?title=cat&idCategory=${family.id}`)).body[0].category).toEqual(renamed);
	});

	test("a created, changed and deleted game shows in both game lists at once", async () => {
		await readEverything();
		const created = await api.game("Carcassonne", family, knizia);
		const titles = async (path: string) => ((await api.get(path)).body as { title: string }[]).map(game => game.title);
		const filtered = `/game?title=ca&idCategory=${family.id}`;
		expect(await titles("/game")).toContain("Carcassonne");
		expect(await titles(filtered)).toEqual(["Catan", "Carcassonne"]);

		await api.put(`/game/${created.id}`, { title: "Carcassonne: Hunters", age: 8, category: strategy, author: knizia });
		expect(await titles("/game")).toContain("Carcassonne: Hunters");
		expect(await titles(filtered)).toEqual(["Catan"]);

		await api.delete(`/game/${created.id}`);
		expect(await titles("/game")).not.toContain("Carcassonne: Hunters");
	});

	test("created and deleted authors and categories show in their lists and pages at once", async () => {
		await readEverything();
		const author = await api.author("Uwe Rosenberg", "German");
		const category = await api.category("Farming");
		expect((await api.get("/author")).body).toContainEqual(author);
		expect((await api.post("/author", page)).body.totalElements).toBe(3);
		expect((await api.get("/category")).body).toContainEqual(category);

		await api.delete(`/author/${author.id}`);
		await api.delete(`/category/${category.id}`);
		expect((await api.get("/author")).body).not.toContainEqual(author);
		expect((await api.get(`/author/${author.id}`)).status).toBe(400);
		expect((await api.post("/author", page)).body.totalElements).toBe(2);
		expect((await api.get("/category")).body).not.toContainEqual(category);
	});

	test("a read that began before a write and ends after it leaves no stale answer behind", async () => {
		// A new author: the list's author lookup is not cached yet, so it reads the store.
		const feld = await api.author("Stefan Feld", "German");
		await api.game("Bora Bora", strategy, feld);
		// The list reads the author as it was, and is held until the rename has answered.
		const authors = adapterOf("authors");
		const findByIds = authors.findByIds;
		let reached!: () => void;
		let release!: () => void;
		const inside = new Promise<void>(resolve => (reached = resolve));
		const held = new Promise<void>(resolve => (release = resolve));
		authors.findByIds = async (...args) => {
			const found = await findByIds.apply(authors, args);
			reached();
			await held;
			return found;
		};
		try {
			const before = api.get("/game");
			await inside;
			authors.findByIds = findByIds;
			expect((await api.put(`/author/${feld.id}`, { name: "Dr. Stefan Feld", nationality: "German" })).status).toBe(200);
			release();
			expect((await before).status).toBe(200);
		} finally {
			authors.findByIds = findByIds;
			release();
		}
		const boraBora = (await api.get("/game")).body.find((game: { title: string }) => game.title === "Bora Bora");
		expect(boraBora.author.name).toBe("Dr. Stefan Feld");
		expect((await api.get(`/author/${feld.id}`)).body.name).toBe("Dr. Stefan Feld");
	});

	test("a failed write changes nothing and the cached answers stay", async () => {
		await readEverything();
		expect((await api.delete(`/author/${knizia.id}`)).status).toBe(400);
		const reads = await storeReads(readEverything);
		expect(reads).toEqual({ authors: 0, categories: 0, games: 0 });
	});
});

describe("a write makes stale only what it changes", () => {
	test("a game write leaves the cached author and category answers in place", async () => {
		await readEverything();
		await api.put(`/game/${catan.id}`, { title: "Catan", age: 12, category: family, author: teuber });
		const reads = await storeReads(readEverything);
		expect(reads.games).toBe(2);
		const authorsAndCategories = await storeReads(() => Promise.all(READS.slice(0, 6).map(([, read]) => read())));
		expect(sum(authorsAndCategories)).toBe(0);
	});

	test("an author write leaves the cached category answers in place", async () => {
		await readEverything();
		await api.put(`/author/${teuber.id}`, { name: "Klaus Teuber", nationality: "German" });
		const categories = await storeReads(() => Promise.all(READS.slice(3, 6).map(([, read]) => read())));
		expect(sum(categories)).toBe(0);
	});
});

describe("the key of a cached answer is what the action reads", () => {
	test("a filter crafted from moleculer's key separators does not poison the honest filter's answer", async () => {
		const crafted = encodeURIComponent(`${family.id}"|title|"catan`);
		expect((await api.get(`/game?idCategory=${crafted}`)).body).toEqual([]);
		const honest = await api.get(`/game?idCategory=${family.id}&title=catan`);
		expect(honest.body.map((game: { id: string }) => game.id)).toEqual([catan.id]);
	});

	test("the same filters in either order share one cached answer", async () => {
		const first = await api.get(`/game?idCategory=${family.id}&title=cat`);
		let again: Awaited<ReturnType<typeof api.get>> | undefined;
		const reads = await storeReads(async () => (again = await api.get(`/game?title=cat&idCategory=${family.id}`)));
		expect(again?.body).toEqual(first.body);
		expect(sum(reads)).toBe(0);
	});

	test("GET /game/{anything} and unknown query fields share GET /game's cached answer", async () => {
		const list = await api.get("/game");
		const variants = ["/game/seg1", "/game/seg2?junk=1", "/game?junk1=1", "/game?junk2=2&junk3=3"];
		const answers: unknown[] = [];
		const reads = await storeReads(async () => {
			for (const path of variants) answers.push((await api.get(path)).body);
		});
		expect(answers).toEqual(variants.map(() => list.body));
		expect(sum(reads)).toBe(0);
	});

	test("unknown fields of a get, a page or an author list share the plain request's answer", async () => {
		await api.get(`/author/${knizia.id}`);
		await api.get("/author");
		await api.post("/author", page);
		const reads = await storeReads(async () => {
			await api.get(`/author/${knizia.id}?fields=name&populate=x`);
			await api.get("/author?junk=1");
			await api.post("/author", { ...page, junk: "x" });
		});
		expect(sum(reads)).toBe(0);
	});

	test("fields the action ignores never reach it: ?fields= does not trim a record", async () => {
		const { body } = await api.get(`/category/${strategy.id}?fields=id`);
		expect(body).toEqual({ id: strategy.id, name: "Strategy" });
	});
});

describe("the cache of the layout", () => {
	test("one broker caches in memory, bounded in bytes; brokers over NATS share Redis", () => {
		const expected = catalogue.topology === "nats" ? RedisAnswers : MemoryAnswers;
		for (const broker of catalogue.brokers) expect(broker.cacher).toBeInstanceOf(expected);
	});
});

test("a write the cache records tells no node: every read learns the generations from the cache itself", async () => {
	events.handled.length = 0;
	await api.game("Ra", strategy, knizia);
	await api.put(`/author/${knizia.id}`, { name: "Reiner Knizia", nationality: "German" });
	await api.category("Party");
	// Events cross NATS on their own: any news would have arrived by now.
	await new Promise(resolve => setTimeout(resolve, 200));
	expect(events.handled.filter(event => event.includes(" cache."))).toEqual([]);
	expect((await api.get("/game")).body.map((game: { title: string }) => game.title)).toContain("Ra");
});
