import { startCatalogue, withBrokenStorage, unknownIds, type Api, type Catalogue } from "../support/catalogue";

type Ref = { id: string };

let catalogue: Catalogue;
let api: Api;
let strategy: Ref;
let family: Ref;
let knizia: Ref;
let feld: Ref;

const body = (title: string, age: unknown, category: unknown, author: unknown) => ({ title, age, category, author });

beforeAll(async () => {
	catalogue = await startCatalogue();
	api = catalogue.api;
	strategy = await api.category("Strategy");
	family = await api.category("Family");
	knizia = await api.author("Reiner Knizia", "German");
	feld = await api.author("Stefan Feld", "German");
});
afterAll(() => catalogue.stop());

describe("PUT /game (create)", () => {
	test("answers { game } with category and author as ids", async () => {
		const answer = await api.put("/game", body("Tigris & Euphrates", 12, { id: strategy.id }, { id: knizia.id }));
		expect(answer.status).toBe(200);
		expect(answer.body).toEqual({
			game: { id: expect.any(String), title: "Tigris & Euphrates", age: 12, category: strategy.id, author: knizia.id },
		});
	});

	test.each([
		["a numeric string", "7", 7],
		["0", 0, 0],
		["99", 99, 99],
		["a numeric string with spaces", " 8 ", 8],
	])("age as %s is stored and answered as a number", async (_case, age, stored) => {
		const answer = await api.put("/game", body("Lost Cities", age, { id: family.id }, { id: knizia.id }));
		expect(answer.status).toBe(200);
		expect(answer.body.game.age).toBe(stored);
	});

	test("title is trimmed", async () => {
		const answer = await api.put("/game", body("  Ra  ", 12, { id: family.id }, { id: knizia.id }));
		expect(answer.body.game.title).toBe("Ra");
	});

	const valid = () => body("Valid", 10, { id: strategy.id }, { id: knizia.id });
	const without = (key: string) => () => Object.fromEntries(Object.entries(valid()).filter(([name]) => name !== key));
	const withField = (key: string, value: unknown) => () => ({ ...valid(), [key]: value });

	test.each([
		["title missing", without("title"), "title"],
		["title only spaces", withField("title", " "), "title"],
		["title over 200 characters", withField("title", "t".repeat(201)), "title"],
		["title with a control character", withField("title", "Catan\u0007"), "title"],
		["age missing", without("age"), "age"],
		["age 12.5", withField("age", 12.5), "age"],
		["age 'abc'", withField("age", "abc"), "age"],
		["age ''", withField("age", ""), "age"],
		["age -1", withField("age", -1), "age"],
		["age 100", withField("age", 100), "age"],
		["age '100'", withField("age", "100"), "age"],
		["age true", withField("age", true), "age"],
		["age [5]", withField("age", [5]), "age"],
		["category missing", without("category"), "category"],
		["category a string", withField("category", "x"), "category"],
		["category id empty", withField("category", { id: "" }), "category.id"],
		["category id a number", withField("category", { id: 5 }), "category.id"],
		["author missing", without("author"), "author"],
		["author id missing", withField("author", {}), "author.id"],
		["author an array", withField("author", [{ id: "x" }]), "author"],
	])("%s: 400 naming the field and nothing stored", async (_case, game, field) => {
		const before = (await api.get("/game")).body.length;
		const answer = await api.put("/game", game());
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toContain(`'${field}'`);
		expect((await api.get("/game")).body).toHaveLength(before);
	});

	test.each(unknownIds)("a category id that is %s answers 400 'There is no category with that Id'", async (_shape, id) => {
		const answer = await api.put("/game", body("Orphan", 10, { id }, { id: knizia.id }));
		expect(answer).toMatchObject({ status: 400, body: { msg: "There is no category with that Id" } });
	});

	test.each(unknownIds)("an author id that is %s answers 400 'There is no author with that Id'", async (_shape, id) => {
		const answer = await api.put("/game", body("Orphan", 10, { id: strategy.id }, { id }));
		expect(answer).toMatchObject({ status: 400, body: { msg: "There is no author with that Id" } });
	});

	test("with both references unknown, the category is reported first", async () => {
		const answer = await api.put("/game", body("Orphan", 10, { id: "nope" }, { id: "nope" }));
		expect(answer.body.msg).toBe("There is no category with that Id");
	});

	test("a refused reference stores nothing", async () => {
		const before = (await api.get("/game")).body.length;
		await api.put("/game", body("Orphan", 10, { id: "nope" }, { id: knizia.id }));
		expect((await api.get("/game")).body).toHaveLength(before);
	});

	test("a storage failure answers 400 'Error creating game'", async () => {
		const answer = await withBrokenStorage(catalogue, ["games", "insert"], () =>
			api.put("/game", body("Broken", 10, { id: strategy.id }, { id: knizia.id })),
		);
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error creating game" } });
	});
});

describe("PUT /game/{id} (update)", () => {
	test("answers 1 and replaces title, age, category and author", async () => {
		const game = await api.game("Amun-Re", strategy, knizia);
		const answer = await api.put(`/game/${game.id}`, body("Amun-Re (2nd)", "14", { id: family.id }, { id: feld.id }));
		expect(answer).toMatchObject({ status: 200, body: 1 });
		const listed = (await api.get("/game")).body.find((item: Ref) => item.id === game.id);
		expect(listed).toMatchObject({ title: "Amun-Re (2nd)", age: 14, category: family, author: feld });
	});

	test.each(unknownIds)("a game id that is %s answers 400 'There is no game with that Id'", async (_shape, id) => {
		const answer = await api.put(`/game/${id}`, body("Ghost", 10, { id: strategy.id }, { id: knizia.id }));
		expect(answer).toMatchObject({ status: 400, body: { msg: "There is no game with that Id" } });
	});

	test.each([
		["category", () => body("Changed", 3, { id: "nope" }, { id: knizia.id }), "There is no category with that Id"],
		["author", () => body("Changed", 3, { id: strategy.id }, { id: "nope" }), "There is no author with that Id"],
	])("an unknown %s answers 400 with its message and the game is unchanged", async (_which, change, msg) => {
		const game = await api.game("Bora Bora", strategy, feld);
		expect(await api.put(`/game/${game.id}`, change())).toMatchObject({ status: 400, body: { msg } });
		const listed = (await api.get("/game")).body.find((item: Ref) => item.id === game.id);
		expect(listed).toMatchObject({ title: "Bora Bora", age: 10, category: strategy, author: feld });
	});

	test("an unknown game is reported before unknown references", async () => {
		const answer = await api.put("/game/nope", body("Ghost", 10, { id: "nope" }, { id: "nope" }));
		expect(answer.body.msg).toBe("There is no game with that Id");
	});

	test("the same validation as creation applies", async () => {
		const game = await api.game("Macao", strategy, feld);
		const answer = await api.put(`/game/${game.id}`, body("Macao", 100, { id: strategy.id }, { id: feld.id }));
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toContain("'age'");
	});
});

describe("DELETE /game/{id}", () => {
	test("answers { game: <deleted game> } and the game is gone", async () => {
		const game = await api.game("Medici", strategy, knizia);
		expect(await api.delete(`/game/${game.id}`)).toMatchObject({ status: 200, body: { game } });
		expect((await api.get("/game")).body.map((item: Ref) => item.id)).not.toContain(game.id);
	});

	test.each(unknownIds)("a game id that is %s answers 400 'There is no game with that Id'", async (_shape, id) => {
		expect(await api.delete(`/game/${id}`)).toMatchObject({ status: 400, body: { msg: "There is no game with that Id" } });
	});
});

describe("internal actions", () => {
	test.each([
		["GET", "/games/countBy"],
		["POST", "/games/countBy"],
		["GET", "/game/countBy/x"],
		["POST", "/games.countBy"],
		["GET", "/api/games/countBy"],
		["GET", "/~node/actions"],
	])("%s %s is not reachable over HTTP (404)", async (method, path) => {
		const answer = await api.send(method, path);
		expect(answer.status).toBe(404);
		expect(typeof answer.body.msg).toBe("string");
	});

	test("games.countBy is reachable over the broker from the authors' node (over NATS, only theirs and categories' may call it)", async () => {
		const authorsNode = catalogue.brokers.find(broker => broker.getLocalService("authors"))!;
		const count = await authorsNode.call("games.countBy", { author: knizia.id });
		expect(count).toBeGreaterThan(0);
	});
});
