import type { Api } from "../support/catalogue";
import { startCluster, type Cluster } from "../support/cluster";
import { answers, waitFor } from "../support/process";

// The catalogue as an operator runs it: one OS process per service, each started like `npm start`
// with SERVICES naming its service, all joined over a NATS server of the test's own. Memory
// storage: each service's records live in its own process and die with it.

type Ref = { id: string; name?: string };

const START_MS = 30_000;
let cluster: Cluster;
let api: Api;

beforeAll(async () => {
	cluster = await startCluster();
	api = cluster.api;
}, START_MS + 10_000);

afterAll(() => cluster?.stop());

const everyNode = () => [...cluster.nodes.values()];

describe("four processes over NATS, one per service", () => {
	let category: Ref;
	let author: Ref;

	test("a game created through the gateway is listed with its category and author from their processes", async () => {
		category = await api.category("Strategy");
		author = await api.author("Uwe Rosenberg", "German");
		const game = await api.game("Agricola", category, author, 12);
		expect(game).toEqual({ id: expect.any(String), title: "Agricola", age: 12, category: category.id, author: author.id });
		expect(await api.get("/game")).toMatchObject({ status: 200, body: [{ ...game, category, author }] });
	});

	test("a category that games refer to is not deleted: 400 'There are games related to this category'", async () => {
		expect(await api.delete(`/category/${category.id}`)).toMatchObject({
			status: 400,
			body: { msg: "There are games related to this category" },
		});
		expect((await api.get("/category")).body).toEqual([category]);
	});

	test("an unknown game id answers 400 'There is no game with that Id'", async () => {
		const change = { title: "Ghost", age: 10, category: { id: category.id }, author: { id: author.id } };
		expect(await api.put("/game/nope", change)).toMatchObject({ status: 400, body: { msg: "There is no game with that Id" } });
		expect(await api.delete("/game/nope")).toMatchObject({ status: 400, body: { msg: "There is no game with that Id" } });
	});

	test("a validation failure in the games process answers 400 listing every offending field", async () => {
		const answer = await api.put("/game", { title: "", age: "old" });
		expect(answer.status).toBe(400);
		expect(answer.body.errors.map((error: { field: string }) => error.field)).toEqual(["title", "age", "category", "author"]);
		expect(answer.body.msg).toBe(answer.body.errors[0].message);
	});

	test("with the games process stopped, what needs games is refused and the rest still answers", async () => {
		expect(await cluster.nodes.get("games")!.stop()).toBe(0);
		await waitFor(
			"the gateway stops answering GET /game",
			async () => (await api.get("/game")).status !== 200,
			everyNode().filter(node => node !== cluster.nodes.get("games")),
		);
		const unavailable = { status: 503, body: { msg: "The service is temporarily unavailable" } };
		expect(await api.get("/game")).toEqual(expect.objectContaining(unavailable));
		expect(
			await api.put("/game", { title: "Caverna", age: 12, category: { id: category.id }, author: { id: author.id } }),
		).toMatchObject(unavailable);
		// Deleting a category must ask games whether any refer to it: unable to, categories refuses
		// as unavailable (lib/catalogue/errors.ts errorHooks), and the category is kept.
		expect(await api.delete(`/category/${category.id}`)).toMatchObject(unavailable);
		expect(await api.get("/category")).toMatchObject({ status: 200, body: [category] });
		expect(await api.get("/author")).toMatchObject({ status: 200, body: [author] });
	});

	test(
		"a games process started again restores the service; its games were in memory, so none are left",
		async () => {
			cluster.start("games");
			await waitFor("the gateway answers GET /game again", answers(api, "/game"), everyNode(), START_MS);
			expect((await api.get("/game")).body).toEqual([]);
			const game = await api.game("Caverna", category, author, 12);
			expect((await api.get("/game")).body).toEqual([{ ...game, category, author }]);
			expect((await api.delete(`/category/${category.id}`)).body).toEqual({ msg: "There are games related to this category" });
		},
		START_MS + 10_000,
	);
});
