import { RECORDED_INSERT, startCatalogue, withBrokenStorage, unknownIds, type Api, type Catalogue } from "../support/catalogue";

let catalogue: Catalogue;
let api: Api;

beforeAll(async () => {
	catalogue = await startCatalogue();
	api = catalogue.api;
});
afterAll(() => catalogue.stop());

describe("PUT /author (create)", () => {
	test("answers { author } with a string id, the name and the nationality, and nothing else", async () => {
		const { status, body } = await api.put("/author", { name: "Uwe Rosenberg", nationality: "German" });
		expect(status).toBe(200);
		expect(Object.keys(body)).toEqual(["author"]);
		expect(body.author).toEqual({ id: expect.any(String), name: "Uwe Rosenberg", nationality: "German" });
	});

	test("trims name and nationality", async () => {
		const { body } = await api.put("/author", { name: "  Klaus Teuber ", nationality: "\tGerman\n" });
		expect(body.author).toMatchObject({ name: "Klaus Teuber", nationality: "German" });
	});

	test("ignores an id sent in the body", async () => {
		const { body } = await api.put("/author", { id: "chosen", name: "Vlaada Chvátil", nationality: "Czech" });
		expect(body.author.id).not.toBe("chosen");
		expect((await api.get("/author/chosen")).status).toBe(400);
	});

	test.each([
		["name missing", { nationality: "Spanish" }, "name"],
		["nationality missing", { name: "Ana" }, "nationality"],
		["name empty", { name: "", nationality: "Spanish" }, "name"],
		["name only spaces", { name: "   ", nationality: "Spanish" }, "name"],
		["nationality empty after trim", { name: "Ana", nationality: "  " }, "nationality"],
		["name not a string", { name: 42, nationality: "Spanish" }, "name"],
		["name over 200 characters", { name: "n".repeat(201), nationality: "Spanish" }, "name"],
		["name over 200 characters outside the BMP", { name: "🎲".repeat(201), nationality: "Spanish" }, "name"],
		["nationality over 100 characters", { name: "Ana", nationality: "x".repeat(101) }, "nationality"],
		["name with a NUL", { name: "An\u0000a", nationality: "Spanish" }, "name"],
		["name with a newline", { name: "Ana\nBelén", nationality: "Spanish" }, "name"],
		["nationality with an escape character", { name: "Ana", nationality: "Span\u001bish" }, "nationality"],
		["name with half a surrogate pair", { name: "Ana\ud83d", nationality: "Spanish" }, "name"],
	])("%s: 400 naming the field, with the errors list, and nothing stored", async (_case, body, field) => {
		const before = (await api.get("/author")).body.length;
		const answer = await api.put("/author", body);
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toContain(`'${field}'`);
		expect(answer.body.errors[0]).toEqual({ field, message: answer.body.msg, type: expect.any(String) });
		expect((await api.get("/author")).body).toHaveLength(before);
	});

	test("a control character is refused with a msg saying so", async () => {
		const answer = await api.put("/author", { name: "Ana", nationality: "Span\tish" });
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toBe("The 'nationality' field must not contain control characters or invalid Unicode.");
	});

	test("stores Unicode text exactly: accents, other scripts, emoji, right-to-left, combining marks", async () => {
		for (const [name, nationality] of [
			["Zoë Ødegård", "Norsk"],
			["王小明", "中国"],
			["Ana 👩‍💻🎲", "España 🇪🇸"],
			["דוד כהן", "ישראלי"],
			["Jose\u0301", "Mexicano"],
		]) {
			const { author } = (await api.put("/author", { name, nationality })).body;
			expect((await api.get(`/author/${author.id}`)).body).toEqual({ id: author.id, name, nationality });
		}
	});

	test("accepts a 200-character name and a 100-character nationality, characters counted as code points", async () => {
		const { status } = await api.put("/author", { name: "n".repeat(200), nationality: "x".repeat(100) });
		expect(status).toBe(200);
		// Each 🎲 is two UTF-16 units: a limit in those would refuse the name at 101. Spaces around are trimmed first.
		const name = "🎲".repeat(200);
		const answer = await api.put("/author", { name: ` ${name} `, nationality: "🇪".repeat(100) });
		expect(answer.status).toBe(200);
		expect(answer.body.author.name).toBe(name);
		expect((await api.put("/author", { name: "🎲".repeat(201), nationality: "x" })).body.msg).toBe(
			"The 'name' field length must be less than or equal to 200 characters long.",
		);
	});

	test("a storage failure answers 400 'Error creating author'", async () => {
		const author = { name: "Ana", nationality: "Spanish" };
		const answer = await withBrokenStorage(catalogue, ["authors", RECORDED_INSERT], () => api.put("/author", author));
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error creating author" } });
	});
});

describe("PUT /author/{id} (update)", () => {
	test("answers the number 1 and applies the fields sent", async () => {
		const author = await api.author("Martin Wallace", "British");
		const answer = await api.put(`/author/${author.id}`, { name: "Martin Wallace", nationality: "English" });
		expect(answer.status).toBe(200);
		expect(answer.body).toBe(1);
		expect((await api.get(`/author/${author.id}`)).body).toEqual({ ...author, nationality: "English" });
	});

	test.each(unknownIds)("an unknown id (%s) answers 400 'There is no author with that Id'", async (_shape, id) => {
		const answer = await api.put(`/author/${id}`, { name: "A", nationality: "B" });
		expect(answer).toMatchObject({ status: 400, body: { msg: "There is no author with that Id" } });
	});

	test("an invalid body answers 400 and leaves the author as it was", async () => {
		const author = await api.author("Antoine Bauza", "French");
		const answer = await api.put(`/author/${author.id}`, { name: "", nationality: "Belgian" });
		expect(answer.status).toBe(400);
		expect((await api.get(`/author/${author.id}`)).body).toEqual(author);
	});
});

describe("GET /author", () => {
	test("answers every author as a JSON array ordered by id, which is creation order", async () => {
		const created = [await api.author("Zoe", "Z"), await api.author("Mia", "M"), await api.author("Abe", "A")];
		const { status, body } = await api.get("/author");
		expect(status).toBe(200);
		const ids = body.map((author: { id: string }) => author.id);
		expect(ids).toEqual([...ids].sort());
		expect(ids.filter((id: string) => created.some(author => author.id === id))).toEqual(created.map(author => author.id));
	});

	test("records carry id, name and nationality, never _id", async () => {
		const { body } = await api.get("/author");
		for (const author of body) expect(Object.keys(author).sort()).toEqual(["id", "name", "nationality"]);
	});

	test("a storage failure answers 400 'Error fetching authors'", async () => {
		const answer = await withBrokenStorage(catalogue, ["authors", "find"], () => api.get("/author"));
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error fetching authors" } });
	});
});

describe("GET /author/{id}", () => {
	test("answers the author record", async () => {
		const author = await api.author("Friedemann Friese", "German");
		expect(await api.get(`/author/${author.id}`)).toMatchObject({ status: 200, body: author });
	});

	test.each(unknownIds)("an unknown id (%s) answers 400 'There is no author with that Id'", async (_shape, id) => {
		expect(await api.get(`/author/${id}`)).toMatchObject({ status: 400, body: { msg: "There is no author with that Id" } });
	});
});

describe("DELETE /author/{id}", () => {
	test("answers { author: <deleted author> } and the author is gone", async () => {
		const author = await api.author("Bruno Cathala", "French");
		expect(await api.delete(`/author/${author.id}`)).toMatchObject({ status: 200, body: { author } });
		expect((await api.get(`/author/${author.id}`)).status).toBe(400);
	});

	test.each(unknownIds)("an unknown id (%s) answers 400 'There is no author with that Id'", async (_shape, id) => {
		expect(await api.delete(`/author/${id}`)).toMatchObject({ status: 400, body: { msg: "There is no author with that Id" } });
	});

	test("an author with games answers 400 'There are games related to this author' and is kept", async () => {
		const author = await api.author("Stefan Feld", "German");
		await api.game("Trajan", await api.category(), author);
		expect(await api.delete(`/author/${author.id}`)).toMatchObject({
			status: 400,
			body: { msg: "There are games related to this author" },
		});
		expect((await api.get(`/author/${author.id}`)).body).toEqual(author);
	});
});
