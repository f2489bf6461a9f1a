import type { Middleware, Service } from "moleculer";
import { newId } from "../../lib/catalogue/ids";
import { forgetCachedAnswers, localService, startCatalogue, withBrokenStorage, type Api, type Catalogue } from "../support/catalogue";
import { refusedPageables } from "../support/pageable";

// POST /game, the paged game search: the rules of the author page, the filters of GET /game, and
// games listed as GET /game lists them (decisions.md, "Game page").

type Named = { id: string; name: string };
type Game = { id: string; title: string; age: number; category: Named; author: Named & { nationality: string } };
type Stored = { id: string; title: string; category: string; author: string };

let catalogue: Catalogue;
let api: Api;
let strategy: Named;
let family: Named;
let knizia: Named;
let teuber: Named;
let rosenberg: Named;
/** The games in creation order, which is id order and the order of GET /game. */
let games: Stored[];

/** The ids each call of categories.get and authors.get was asked for, on every node. */
const asked = new Map<string, string[][]>();
const recordIds: Middleware = {
	localAction(next, action) {
		const name = String(action.name);
		if (name !== "categories.get" && name !== "authors.get") return next;
		return function (this: Service, ctx) {
			asked.set(name, [...(asked.get(name) ?? []), [(ctx.params as { id: string | string[] }).id].flat()]);
			return next.call(this, ctx);
		};
	},
};

const titles = (list: Game[]) => list.map(game => game.title);
const ids = (list: { id: string }[]) => list.map(game => game.id);
const search = (pageable: unknown, filters: { title?: unknown; idCategory?: unknown } = {}) => api.post("/game", { pageable, ...filters });
const all = { pageNumber: 0, pageSize: 1000 };

beforeAll(async () => {
	catalogue = await startCatalogue({ middlewares: [recordIds] });
	api = catalogue.api;
	strategy = await api.category("Strategy");
	family = await api.category("Family");
	knizia = await api.author("Reiner Knizia", "German");
	teuber = await api.author("Klaus Teuber", "German");
	rosenberg = await api.author("Uwe Rosenberg", "German");
	games = [
		await api.game("Catan", family, teuber, 10),
		await api.game("Tigris & Euphrates", strategy, knizia, 12),
		await api.game("Modern Art", family, knizia, 10),
		await api.game("CATAN: Seafarers", strategy, teuber, 10),
		await api.game("Agricola", strategy, rosenberg, 12),
		await api.game("Lost Cities", family, knizia, 8),
		await api.game("Ra", strategy, knizia, 12),
	];
});
afterAll(() => catalogue.stop());

describe("POST /game (page)", () => {
	test("answers the page envelope: content, pageable.pageNumber, pageable.pageSize, totalElements", async () => {
		const { status, body } = await search({ pageNumber: 0, pageSize: 3 });
		expect(status).toBe(200);
		expect(Object.keys(body).sort()).toEqual(["content", "pageable", "totalElements"]);
		expect(body.pageable).toEqual({ pageNumber: 0, pageSize: 3 });
		expect(body.totalElements).toBe(games.length);
		expect(body.content).toHaveLength(3);
		for (const game of body.content) expect(Object.keys(game).sort()).toEqual(["age", "author", "category", "id", "title"]);
	});

	test("without sort, orders by id: the order of GET /game", async () => {
		const { body } = await search({ pageNumber: 0, pageSize: 10 });
		expect(ids(body.content)).toEqual(ids(games));
		expect(ids(body.content)).toEqual(ids((await api.get("/game")).body));
	});

	test("pageNumber is zero-based: page 1 of size 2 holds the third and fourth games", async () => {
		const { body } = await search({ pageNumber: 1, pageSize: 2 });
		expect(ids(body.content)).toEqual(ids(games.slice(2, 4)));
		expect(body.pageable).toEqual({ pageNumber: 1, pageSize: 2 });
	});

	test("pageNumber 0 is the first page and pageSize 0 means the default size 5", async () => {
		const { body } = await search({ pageNumber: 0, pageSize: 0 });
		expect(body.pageable).toEqual({ pageNumber: 0, pageSize: 5 });
		expect(ids(body.content)).toEqual(ids(games.slice(0, 5)));
	});

	test("numeric strings are accepted for pageNumber and pageSize", async () => {
		const { status, body } = await search({ pageNumber: "1", pageSize: " 3 " });
		expect(status).toBe(200);
		expect(body.pageable).toEqual({ pageNumber: 1, pageSize: 3 });
		expect(ids(body.content)).toEqual(ids(games.slice(3, 6)));
	});

	test("a page past the end has empty content and the true totalElements", async () => {
		expect((await search({ pageNumber: 40, pageSize: 5 })).body).toEqual({
			content: [],
			pageable: { pageNumber: 40, pageSize: 5 },
			totalElements: games.length,
		});
		expect((await search({ pageNumber: 40, pageSize: 5 }, { title: "catan" })).body).toEqual({
			content: [],
			pageable: { pageNumber: 40, pageSize: 5 },
			totalElements: 2,
		});
		// However far past: no page number is too large to be a page.
		for (const pageNumber of [1_000_000_001, 1e20])
			for (const title of [undefined, "catan"])
				expect((await search({ pageNumber, pageSize: 1000 }, title === undefined ? {} : { title })).body).toMatchObject({
					content: [],
					pageable: { pageNumber, pageSize: 1000 },
				});
	});

	test("pageSize 1000 is accepted", async () => {
		expect((await search({ pageNumber: 0, pageSize: 1000 })).body.content).toHaveLength(games.length);
	});

	test.each([
		...refusedPageables,
		["sort property not a game field", { pageNumber: 0, pageSize: 5, sort: { property: "name" } }, "pageable.sort"],
		["sort property a stored field", { pageNumber: 0, pageSize: 5, sort: { property: "_id" } }, "pageable.sort"],
		[
			"sort list with a bad property",
			{ pageNumber: 0, pageSize: 5, sort: [{ property: "title" }, { property: "category" }] },
			"pageable.sort",
		],
		[
			"sort list longer than the 3 game sort fields",
			{ pageNumber: 0, pageSize: 5, sort: Array(4).fill({ property: "title" }) },
			"pageable.sort",
		],
	])("%s: 400 with a msg naming the field", async (_case, pageable, field) => {
		const answer = await api.post("/game", pageable === undefined ? {} : { pageable });
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toContain(`'${field}`);
	});

	test("a sort property that is no game field is one error naming it and the fields", async () => {
		const answer = await search({ pageNumber: 0, pageSize: 5, sort: { property: "name" } });
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toBe("The 'pageable.sort' property 'name' is not one of id, title, age.");
		expect(answer.body.errors).toHaveLength(1);
	});

	test("sort by title, ascending and descending (text as stored: capitals first)", async () => {
		const ascending = ["Agricola", "CATAN: Seafarers", "Catan", "Lost Cities", "Modern Art", "Ra", "Tigris & Euphrates"];
		expect(titles((await search({ ...all, sort: { property: "title" } })).body.content)).toEqual(ascending);
		expect(titles((await search({ ...all, sort: { property: "title", direction: "desc" } })).body.content)).toEqual(
			[...ascending].reverse(),
		);
	});

	test("titles sort in code point order, as both stores compare UTF-8: 🎲 after Ａ (U+FF21), where UTF-16 order puts it first", async () => {
		const made = [await api.game("🎲 Order", family, knizia), await api.game("\uFF21 Order", family, knizia)];
		try {
			const page = await search({ ...all, sort: { property: "title" } }, { title: " Order$" });
			expect(titles(page.body.content)).toEqual(["\uFF21 Order", "🎲 Order"]);
		} finally {
			for (const game of made) await api.delete(`/game/${game.id}`);
		}
	});

	test("sort by age, ascending and descending; equal ages keep id order", async () => {
		const ascending = ["Lost Cities", "Catan", "Modern Art", "CATAN: Seafarers", "Tigris & Euphrates", "Agricola", "Ra"];
		expect(titles((await search({ ...all, sort: { property: "age" } })).body.content)).toEqual(ascending);
		expect(titles((await search({ ...all, sort: { property: "age", direction: "desc" } })).body.content)).toEqual([
			"Tigris & Euphrates",
			"Agricola",
			"Ra",
			"Catan",
			"Modern Art",
			"CATAN: Seafarers",
			"Lost Cities",
		]);
	});

	test.each([["DESC"], ["Desc"], ["asc"], ["down"], [undefined]])(
		"direction %s orders ascending (only lowercase 'desc' is descending)",
		async direction => {
			const { body } = await search({ ...all, sort: { property: "age", direction } });
			expect(titles(body.content)).toEqual([
				"Lost Cities",
				"Catan",
				"Modern Art",
				"CATAN: Seafarers",
				"Tigris & Euphrates",
				"Agricola",
				"Ra",
			]);
		},
	);

	test("a sort without property orders by id", async () => {
		expect(ids((await search({ ...all, sort: { direction: "desc" } })).body.content)).toEqual(ids(games).reverse());
		expect(ids((await search({ ...all, sort: [{}] })).body.content)).toEqual(ids(games));
	});

	test("sort by id orders by creation", async () => {
		expect(ids((await search({ ...all, sort: [{ property: "id", direction: "desc" }] })).body.content)).toEqual(ids(games).reverse());
	});

	test("a sort list is a multi-key sort, first element first", async () => {
		const { body } = await search({ ...all, sort: [{ property: "age", direction: "desc" }, { property: "title" }] });
		expect(body.content.map((game: Game) => `${game.age}/${game.title}`)).toEqual([
			"12/Agricola",
			"12/Ra",
			"12/Tigris & Euphrates",
			"10/CATAN: Seafarers",
			"10/Catan",
			"10/Modern Art",
			"8/Lost Cities",
		]);
	});

	test("title keeps the games whose title matches, ignoring case; totalElements counts only those", async () => {
		const { body } = await search(all, { title: "catan" });
		expect(titles(body.content)).toEqual(["Catan", "CATAN: Seafarers"]);
		expect(body.totalElements).toBe(2);
	});

	test("title is a regular expression, and its matches are paged", async () => {
		expect(titles((await search(all, { title: "^cat.*ers$" })).body.content)).toEqual(["CATAN: Seafarers"]);
		// "a" matches every title but "Lost Cities": 6 games, of which page 1 of size 2 is the third and fourth.
		const { body } = await search({ pageNumber: 1, pageSize: 2 }, { title: "A" });
		expect(titles(body.content)).toEqual(["Modern Art", "CATAN: Seafarers"]);
		expect(body.totalElements).toBe(6);
	});

	test("the matches of a title are in the order asked", async () => {
		const { body } = await search(
			{ pageNumber: 0, pageSize: 3, sort: [{ property: "age" }, { property: "title", direction: "desc" }] },
			{ title: "a" },
		);
		expect(titles(body.content)).toEqual(["Modern Art", "Catan", "CATAN: Seafarers"]);
		expect(body.totalElements).toBe(6);
	});

	test("an empty title matches every game", async () => {
		expect((await search(all, { title: "" })).body.totalElements).toBe(games.length);
	});

	test("idCategory keeps only the games of exactly that category; totalElements counts only those", async () => {
		const { body } = await search({ pageNumber: 0, pageSize: 3 }, { idCategory: strategy.id });
		expect(titles(body.content)).toEqual(["Tigris & Euphrates", "CATAN: Seafarers", "Agricola"]);
		expect(body.totalElements).toBe(4);
		expect((await search(all, { idCategory: strategy.id.toLowerCase() })).body).toMatchObject({ content: [], totalElements: 0 });
		expect((await search(all, { idCategory: "nope" })).body).toMatchObject({ content: [], totalElements: 0 });
	});

	test("title and idCategory combine", async () => {
		const { body } = await search(all, { title: "catan", idCategory: family.id });
		expect(titles(body.content)).toEqual(["Catan"]);
		expect(body.totalElements).toBe(1);
	});

	test.each(["(", "[a-", "a{2,1}", "(?<=a)b", "(a|aa|aaa){1,1000}x", "a".repeat(201)])(
		"the pattern %s answers the same 400 as GET /game",
		async pattern => {
			const answer = await search({ pageNumber: 0, pageSize: 5 }, { title: pattern });
			const listed = await api.get(`/game?title=${encodeURIComponent(pattern)}`);
			expect(listed.status).toBe(400);
			expect({ status: answer.status, body: answer.body }).toEqual({ status: 400, body: listed.body });
			expect(answer.body.errors[0]).toMatchObject({ field: "title" });
		},
	);

	test("each game carries its full category and author records, exactly as GET /game lists it", async () => {
		const listed = (await api.get("/game")).body as Game[];
		const sameAsListed = (page: Game[]) => page.map(game => listed.find(entry => entry.id === game.id));
		const paged = (await search({ pageNumber: 1, pageSize: 3, sort: { property: "title" } })).body.content;
		expect(paged).toEqual(sameAsListed(paged));
		expect(paged[0]).toEqual({
			id: games[5].id,
			title: "Lost Cities",
			age: 8,
			category: family,
			author: { id: knizia.id, name: "Reiner Knizia", nationality: "German" },
		});
		const searched = (await search({ pageNumber: 0, pageSize: 3 }, { title: "catan" })).body.content;
		expect(searched).toEqual(sameAsListed(searched));
		expect(searched[0].category).toEqual(family);
	});

	test.each([
		["without filters", () => ({})],
		["with a title", () => ({ title: "ti|an" })],
		["with a category", () => ({ idCategory: family.id })],
	])("walking every page %s answers each game of GET /game exactly once, in its order", async (_case, filtersOf) => {
		const filters = filtersOf();
		const query = new URLSearchParams(filters);
		const expected = ids((await api.get(`/game?${query}`)).body);
		const walked: string[] = [];
		for (let pageNumber = 0; ; pageNumber++) {
			const { body } = await search({ pageNumber, pageSize: 2 }, filters);
			expect(body.totalElements).toBe(expected.length);
			if (body.content.length === 0) break;
			walked.push(...ids(body.content));
		}
		expect(walked).toEqual(expected);
	});

	test("walking pages sorted on a key with ties answers each game exactly once", async () => {
		const walked: string[] = [];
		for (let pageNumber = 0; pageNumber * 2 < games.length; pageNumber++)
			walked.push(...ids((await search({ pageNumber, pageSize: 2, sort: { property: "age" } })).body.content));
		expect([...walked].sort()).toEqual(ids(games).sort());
	});

	test("a draft (a game whose references are still being checked) is never shown nor counted, by the page or by games.count", async () => {
		const { adapter } = localService<{
			adapter: { insert(game: object): Promise<unknown>; removeMany(query: object): Promise<number> };
		}>(catalogue, "games");
		const draft = { _id: newId(), title: "Catan: Draft", age: 10, category: family.id, author: teuber.id, draft: Date.now() };
		await adapter.insert(draft);
		await forgetCachedAnswers(catalogue);
		try {
			expect((await search(all)).body.totalElements).toBe(games.length);
			expect(titles((await search(all, { title: "catan", idCategory: family.id })).body.content)).toEqual(["Catan"]);
			// From the games' own node: in a cluster only the REPL's may call games.count.
			const gamesNode = catalogue.brokers.find(broker => broker.getLocalService("games"))!;
			expect(await gamesNode.call("games.count")).toBe(games.length);
		} finally {
			await adapter.removeMany({ _id: draft._id });
			await forgetCachedAnswers(catalogue);
		}
	});

	test("GET /game still answers the full list", async () => {
		expect(ids((await api.get("/game")).body)).toEqual(ids(games));
	});

	test.each([
		["the games store fails to count (no title: the store pages)", ["games", "count"], {}],
		["the games store fails to find (a title: the service tests titles)", ["games", "find"], { title: "catan" }],
		["the author store fails while the page is populated", ["authors", "findByIds"], {}],
	])("a storage failure answers 400 'Error fetching games page': %s", async (_case, broken, filters) => {
		const answer = await withBrokenStorage(catalogue, broken as [string, string], () =>
			search({ pageNumber: 0, pageSize: 5 }, filters),
		);
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error fetching games page" } });
	});
});

describe("POST /game is cached as GET /game is", () => {
	type Adapter = { [method: string]: (...args: unknown[]) => Promise<unknown> };
	const READS: [string, string][] = [
		["games", "find"],
		["games", "count"],
		["authors", "findByIds"],
		["categories", "findByIds"],
	];

	/** How many times the stores were read while `request` ran. */
	async function storeReads(request: () => Promise<unknown>): Promise<number> {
		let reads = 0;
		const restore = READS.map(([service, method]) => {
			const { adapter } = localService<{ adapter: Adapter }>(catalogue, service);
			const original = adapter[method];
			adapter[method] = (...args) => {
				reads++;
				return original.apply(adapter, args);
			};
			return () => (adapter[method] = original);
		});
		try {
			await request();
		} finally {
			restore.forEach(undo => undo());
		}
		return reads;
	}

	test.each([
		["without filters", {}],
		["with a title", { title: "catan" }],
	])("%s: asked again, the same answer without reading any store", async (_case, filters) => {
		await forgetCachedAnswers(catalogue);
		const first = await search({ pageNumber: 0, pageSize: 5 }, filters);
		let again: Awaited<ReturnType<typeof search>> | undefined;
		expect(await storeReads(async () => (again = await search({ pageNumber: 0, pageSize: 5 }, filters)))).toBe(0);
		expect({ status: again?.status, body: again?.body }).toEqual({ status: 200, body: first.body });
	});

	test("a renamed author, a renamed category and a new game show at once", async () => {
		const page = () => search(all, { title: "catan" });
		await page();
		await api.put(`/author/${teuber.id}`, { name: "K. Teuber", nationality: "German" });
		expect((await page()).body.content[0].author).toEqual({ id: teuber.id, name: "K. Teuber", nationality: "German" });
		await api.put(`/category/${family.id}`, { name: "Family games" });
		expect((await page()).body.content[0].category).toEqual({ id: family.id, name: "Family games" });
		const added = await api.game("Catan: Cities & Knights", family, teuber, 12);
		try {
			expect((await page()).body.totalElements).toBe(3);
		} finally {
			await api.delete(`/game/${added.id}`);
			await api.put(`/author/${teuber.id}`, { name: "Klaus Teuber", nationality: "German" });
			await api.put(`/category/${family.id}`, { name: "Family" });
		}
		expect((await page()).body.totalElements).toBe(2);
	});
});

describe("POST /game costs its page, not the catalogue", () => {
	let bulk: Stored[];

	beforeAll(async () => {
		bulk = [];
		for (let index = 0; index < 30; index++) {
			const category = await api.category(`Bulk category ${index}`);
			const author = await api.author(`Bulk author ${index}`, "Nowhere");
			bulk.push(await api.game(`Bulk ${index}`, category, author));
		}
	});

	afterAll(async () => {
		for (const game of bulk) await api.delete(`/game/${game.id}`);
	});

	/** The ids categories.get and authors.get were asked for while `request` ran, uncached. */
	async function referencesAsked(request: () => Promise<{ status: number; body: { content: Game[] } }>) {
		await forgetCachedAnswers(catalogue);
		asked.clear();
		const { status, body } = await request();
		expect(status).toBe(200);
		return { content: body.content, categories: asked.get("categories.get"), authors: asked.get("authors.get") };
	}

	test("a page of 2 out of 37 games asks for the categories and authors of those 2 games only, in one call each", async () => {
		const { content, categories, authors } = await referencesAsked(() => search({ pageNumber: 5, pageSize: 2 }));
		const page = games.concat(bulk).slice(10, 12);
		expect(ids(content)).toEqual(ids(page));
		expect(categories).toEqual([page.map(game => game.category)]);
		expect(authors).toEqual([page.map(game => game.author)]);
	});

	test("with a title filter too: 30 games match, the 2 of the page are populated", async () => {
		const { content, categories, authors } = await referencesAsked(() =>
			search({ pageNumber: 1, pageSize: 2, sort: { property: "id", direction: "desc" } }, { title: "^bulk" }),
		);
		const page = [bulk[27], bulk[26]];
		expect(ids(content)).toEqual(ids(page));
		expect(categories).toEqual([page.map(game => game.category)]);
		expect(authors).toEqual([page.map(game => game.author)]);
	});

	test("without a title filter the store pages: it is asked for the page's offset and limit, and counts", async () => {
		const { adapter } = localService<{ adapter: { find(params: object): Promise<unknown[]> } }>(catalogue, "games");
		const find = adapter.find;
		const finds: { offset?: number; limit?: number }[] = [];
		adapter.find = params => {
			finds.push(params);
			return find.call(adapter, params);
		};
		try {
			await forgetCachedAnswers(catalogue);
			const { body } = await search({ pageNumber: 5, pageSize: 2 });
			expect(body.content).toHaveLength(2);
			expect(body.totalElements).toBe(games.length + bulk.length);
		} finally {
			adapter.find = find;
		}
		expect(finds).toEqual([expect.objectContaining({ offset: 10, limit: 2 })]);
	});
});
