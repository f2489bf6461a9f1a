import { RECORDED_INSERT, startCatalogue, withBrokenStorage, unknownIds, type Api, type Catalogue } from "../support/catalogue";

let catalogue: Catalogue;
let api: Api;

beforeAll(async () => {
	catalogue = await startCatalogue();
	api = catalogue.api;
});
afterAll(() => catalogue.stop());

const names = (list: { name: string }[]) => list.map(category => category.name);

describe("PUT /category (create)", () => {
	test("answers { category: { id, name } }", async () => {
		const answer = await api.put("/category", { name: " Party " });
		expect(answer).toMatchObject({ status: 200, body: { category: { id: expect.any(String), name: "Party" } } });
		expect(Object.keys(answer.body.category).sort()).toEqual(["id", "name"]);
	});

	test.each([
		["name missing", {}],
		["name empty", { name: "" }],
		["name only spaces", { name: "  " }],
		["name over 100 characters", { name: "c".repeat(101) }],
		["name not a string", { name: ["Party"] }],
		["name with a control character", { name: "Party\u0085" }],
	])("%s: 400 naming the field and nothing stored", async (_case, body) => {
		const before = (await api.get("/category")).body.length;
		const answer = await api.put("/category", body);
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toContain("'name'");
		expect((await api.get("/category")).body).toHaveLength(before);
	});

	test("a storage failure answers 400 with a msg", async () => {
		const answer = await withBrokenStorage(catalogue, ["categories", RECORDED_INSERT], () => api.put("/category", { name: "Broken" }));
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error creating category" } });
	});
});

describe("PUT /category/{id} (update)", () => {
	test("answers 1 and renames the category", async () => {
		const category = await api.category("Abstrat");
		expect(await api.put(`/category/${category.id}`, { name: "Abstract" })).toMatchObject({ status: 200, body: 1 });
		expect((await api.get(`/category/${category.id}`)).body).toEqual({ id: category.id, name: "Abstract" });
	});

	test.each(unknownIds)("an unknown id (%s) answers 400 'There is no category with that Id'", async (_shape, id) => {
		expect(await api.put(`/category/${id}`, { name: "X" })).toMatchObject({
			status: 400,
			body: { msg: "There is no category with that Id" },
		});
	});

	test("an empty name answers 400 and the category keeps its name", async () => {
		const category = await api.category("Wargame");
		expect((await api.put(`/category/${category.id}`, { name: "" })).status).toBe(400);
		expect((await api.get(`/category/${category.id}`)).body).toEqual(category);
	});
});

describe("GET /category", () => {
	test("answers every category ordered by id, which is creation order", async () => {
		const created = [await api.category("Zeta"), await api.category("Alpha")];
		const { status, body } = await api.get("/category");
		expect(status).toBe(200);
		const ids = body.map((category: { id: string }) => category.id);
		expect(ids).toEqual([...ids].sort());
		expect(ids.slice(-2)).toEqual(created.map(category => category.id));
	});

	test("?name= keeps the categories whose name contains the text, ignoring case", async () => {
		await api.category("Deck Building");
		await api.category("Deduction");
		expect(names((await api.get("/category/?name=DE")).body)).toEqual(["Deck Building", "Deduction"]);
		expect(names((await api.get("/category?name=building")).body)).toEqual(["Deck Building"]);
	});

	test("?name= ignores case as Unicode folds it: straße finds STRAẞE, and the Kelvin sign K finds k", async () => {
		await api.category("STRAẞENBAHNSPIELE");
		await api.category("\u212Aartenspiele");
		expect(names((await api.get(`/category?name=${encodeURIComponent("straßenbahn")}`)).body)).toEqual(["STRAẞENBAHNSPIELE"]);
		expect(names((await api.get("/category?name=kartenspiele")).body)).toEqual(["\u212Aartenspiele"]);
	});

	test("?name= is literal text, not a pattern", async () => {
		await api.category("Cards (Classic)");
		expect(names((await api.get(`/category?name=${encodeURIComponent("(classic")}`)).body)).toEqual(["Cards (Classic)"]);
		expect((await api.get(`/category?name=${encodeURIComponent("D.ck")}`)).body).toEqual([]);
		expect((await api.get(`/category?name=${encodeURIComponent(".*")}`)).body).toEqual([]);
	});

	test("?name= with a character no name can hold (a NUL, a control character) is refused with a msg, in both stores alike", async () => {
		for (const text of ["a\u0000b", "a\tb", "\u0085"]) {
			const answer = await api.get(`/category?name=${encodeURIComponent(text)}`);
			expect(answer.status).toBe(400);
			expect(answer.body.msg).toBe("The 'name' field must not contain control characters or invalid Unicode.");
		}
	});

	test("an empty ?name= keeps every category", async () => {
		expect((await api.get("/category?name=")).body).toEqual((await api.get("/category")).body);
	});

	test("a storage failure answers 400 with a msg", async () => {
		const answer = await withBrokenStorage(catalogue, ["categories", "find"], () => api.get("/category"));
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error fetching categories" } });
	});
});

describe("GET /category/{id}", () => {
	test("answers the category record", async () => {
		const category = await api.category("Cooperative");
		expect(await api.get(`/category/${category.id}`)).toMatchObject({ status: 200, body: category });
	});

	test.each(unknownIds)("an unknown id (%s) answers 400 'There is no category with that Id'", async (_shape, id) => {
		expect(await api.get(`/category/${id}`)).toMatchObject({
			status: 400,
			body: { msg: "There is no category with that Id" },
		});
	});
});

describe("DELETE /category/{id}", () => {
	test("answers { category: <deleted> } and the category is gone", async () => {
		const category = await api.category("Dexterity");
		expect(await api.delete(`/category/${category.id}`)).toMatchObject({ status: 200, body: { category } });
		expect((await api.get(`/category/${category.id}`)).status).toBe(400);
	});

	test.each(unknownIds)("an unknown id (%s) answers 400 'There is no category with that Id'", async (_shape, id) => {
		expect(await api.delete(`/category/${id}`)).toMatchObject({
			status: 400,
			body: { msg: "There is no category with that Id" },
		});
	});

	test("a category with games answers 400 'There are games related to this category' and is kept", async () => {
		const category = await api.category("Worker Placement");
		await api.game("Agricola", category, await api.author("Uwe Rosenberg", "German"));
		expect(await api.delete(`/category/${category.id}`)).toMatchObject({
			status: 400,
			body: { msg: "There are games related to this category" },
		});
		expect((await api.get(`/category/${category.id}`)).body).toEqual(category);
	});

	test("once its games are deleted, the category can be deleted", async () => {
		const category = await api.category("Roll and Write");
		const game = await api.game("Ganz schön clever", category, await api.author("Wolfgang Warsch", "German"));
		await api.delete(`/game/${game.id}`);
		expect((await api.delete(`/category/${category.id}`)).status).toBe(200);
	});
});
