import { actionCounter } from "../support/calls";
import { forgetCachedAnswers, startCatalogue, withBrokenStorage, type Api, type Catalogue } from "../support/catalogue";

type Game = { id: string; title: string; category: { id: string; name: string }; author: { id: string } };

let catalogue: Catalogue;
let api: Api;
let strategy: { id: string; name: string };
let family: { id: string; name: string };
let knizia: { id: string };
let teuber: { id: string };
let games: Game[];

/** Counts how often each action runs, to show that populating does not grow with the list. */
const { calls, middleware: countCalls } = actionCounter();

const titles = (list: Game[]) => list.map(game => game.title);

beforeAll(async () => {
	catalogue = await startCatalogue({ middlewares: [countCalls] });
	api = catalogue.api;
	strategy = await api.category("Strategy");
	family = await api.category("Family");
	knizia = await api.author("Reiner Knizia", "German");
	teuber = await api.author("Klaus Teuber", "German");
	games = [
		await api.game("Catan", family, teuber),
		await api.game("Tigris & Euphrates", strategy, knizia),
		await api.game("Modern Art", family, knizia),
		await api.game("CATAN: Seafarers", strategy, teuber),
		await api.game("(a+)+ the game", family, knizia),
	];
});
afterAll(() => catalogue.stop());

describe("GET /game", () => {
	test("answers every game ordered by id, with the full category and author records", async () => {
		const { status, body } = await api.get("/game");
		expect(status).toBe(200);
		expect(body.map((game: Game) => game.id)).toEqual(games.map(game => game.id));
		expect(body[0]).toEqual({
			id: games[0].id,
			title: "Catan",
			age: 10,
			category: family,
			author: { id: expect.any(String), name: "Klaus Teuber", nationality: "German" },
		});
	});

	test("title matches case-insensitively anywhere in the title", async () => {
		expect(titles((await api.get("/game?title=catan")).body)).toEqual(["Catan", "CATAN: Seafarers"]);
		expect(titles((await api.get("/game?title=ART")).body)).toEqual(["Modern Art"]);
	});

	test("title is a regular expression", async () => {
		expect(titles((await api.get(`/game?title=${encodeURIComponent("^cat.*ers$")}`)).body)).toEqual(["CATAN: Seafarers"]);
		expect(titles((await api.get(`/game?title=${encodeURIComponent("art|&")}`)).body)).toEqual(["Tigris & Euphrates", "Modern Art"]);
	});

	test("an empty title matches every game", async () => {
		expect((await api.get("/game?title=")).body).toHaveLength(games.length);
	});

	test.each(["(", "[a-", "a{2,1}", "(?<=a)b"])("an invalid pattern %s answers 400 with a msg", async pattern => {
		const answer = await api.get(`/game?title=${encodeURIComponent(pattern)}`);
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toBe("Error fetching games");
		expect(answer.body.errors[0]).toMatchObject({ field: "title" });
	});

	test.each([
		["a program of over 1000 instructions", "(a|aa|aaa){1,1000}x", "The 'title' filter is too complex a pattern"],
		["over 200 characters", "a".repeat(201), "The 'title' field length must be less than or equal to 200 characters long."],
		[
			"over 200 characters outside the BMP",
			"🎲".repeat(201),
			"The 'title' field length must be less than or equal to 200 characters long.",
		],
	])("a pattern with %s answers 400 with a msg", async (_case, pattern, message) => {
		const answer = await api.get(`/game?title=${encodeURIComponent(pattern)}`);
		expect(answer.status).toBe(400);
		expect(answer.body.errors[0]).toMatchObject({ field: "title", message });
	});

	test("a title filter of 200 characters is taken, characters counted as code points as a title's are", async () => {
		expect((await api.get(`/game?title=${encodeURIComponent("🎲".repeat(200))}`)).status).toBe(200);
	});

	test("idCategory keeps only the games of exactly that category", async () => {
		expect(titles((await api.get(`/game?idCategory=${strategy.id}`)).body)).toEqual(["Tigris & Euphrates", "CATAN: Seafarers"]);
		expect((await api.get(`/game?idCategory=${strategy.id.toLowerCase()}`)).body).toEqual([]);
		expect((await api.get("/game?idCategory=nope")).body).toEqual([]);
	});

	test("title and idCategory combine", async () => {
		expect(titles((await api.get(`/game?title=catan&idCategory=${family.id}`)).body)).toEqual(["Catan"]);
	});

	test("GET /game/{segment} ignores the segment and takes the same filters", async () => {
		const all = (await api.get("/game")).body;
		expect((await api.get(`/game/${games[0].id}`)).body).toEqual(all);
		expect(titles((await api.get(`/game/anything?title=catan&idCategory=${strategy.id}`)).body)).toEqual(["CATAN: Seafarers"]);
		// Not percent-encoded UTF-8: read as the text it is, and ignored the same.
		for (const segment of ["100%", "%ZZ", "%ED%A0%80"])
			expect(await api.get(`/game/${segment}`)).toMatchObject({ status: 200, body: all });
	});

	test("catastrophic patterns are answered quickly while other requests are served", async () => {
		// Each of these patterns takes a backtracking engine exponential time on 30 a's and a "!".
		const evil = [];
		for (let index = 0; index < 20; index++) evil.push(await api.game(`${"a".repeat(30 + index)}!`, family, knizia));
		const patterns = ["(a+)+$", "(a|aa)+$", "((a*)*)*b", "(a|a)+$", "^(a?){30}a{30}$"];
		try {
			const started = Date.now();
			const [evilAnswers, others] = await Promise.all([
				Promise.all(patterns.map(pattern => api.get(`/game?title=${encodeURIComponent(pattern)}`))),
				Promise.all(Array.from({ length: 20 }, () => api.get("/author"))),
			]);
			expect(Date.now() - started).toBeLessThan(2000);
			for (const answer of evilAnswers) {
				expect(answer.status).toBe(200);
				expect(titles(answer.body).filter(title => title.endsWith("!"))).toEqual([]);
			}
			expect(others.map(answer => answer.status)).toEqual(others.map(() => 200));
		} finally {
			for (const game of evil) await api.delete(`/game/${game.id}`);
		}
	});

	test("the broker calls per list do not grow with the number of games", async () => {
		const populateCalls = async () => {
			await forgetCachedAnswers(catalogue);
			calls.clear();
			await api.get("/game");
			return (calls.get("categories.get") ?? 0) + (calls.get("authors.get") ?? 0);
		};
		const few = await populateCalls();
		const extra = [];
		for (let index = 0; index < 30; index++)
			extra.push(await api.game(`Extra ${index}`, index % 2 ? strategy : family, index % 3 ? knizia : teuber));
		const many = await populateCalls();
		for (const game of extra) await api.delete(`/game/${game.id}`);
		expect(few).toBe(2);
		expect(many).toBe(2);
	});

	test("a failure answers 400 'Error fetching games'", async () => {
		const answer = await withBrokenStorage(catalogue, ["games", ["find", "findInSteps"]], () => api.get("/game"));
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error fetching games" } });
	});

	test("a storage failure in the author service answers 400 'Error fetching games'", async () => {
		const answer = await withBrokenStorage(catalogue, ["authors", "findByIds"], () => api.get("/game"));
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error fetching games" } });
	});
});
