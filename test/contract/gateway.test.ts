import { newId } from "../../lib/catalogue/ids";
import { INTERNALS, startCatalogue, type Api, type Catalogue } from "../support/catalogue";

let catalogue: Catalogue;
let api: Api;

beforeAll(async () => {
	catalogue = await startCatalogue();
	api = catalogue.api;
});
afterAll(() => catalogue.stop());

/** Every failure: JSON with a string msg, no "Error:" prefix, nothing internal. */
function expectCleanFailure(answer: { status: number; body: unknown; headers: Headers }, status: number) {
	expect(answer.status).toBe(status);
	expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
	const body = answer.body as Record<string, unknown>;
	expect(typeof body.msg).toBe("string");
	expect(body.msg).not.toMatch(/^Error:/);
	expect(JSON.stringify(body)).not.toMatch(INTERNALS);
}

describe("the gateway", () => {
	test.each([
		["GET", "/nothing"],
		["GET", "/authors"],
		["POST", "/game/1"],
		["PATCH", "/author/1"],
		["DELETE", "/author"],
		["POST", "/category"],
		["GET", "/author/1/games"],
	])("an unknown route %s %s answers 404 with a msg", async (method, path) => {
		expectCleanFailure(await api.send(method, path), 404);
	});

	test.each(['{"name":', "{name: 'x'}", "not json", '{"name":"a",}'])("malformed JSON %s answers 400 with a msg", async raw => {
		const answer = await api.send("PUT", "/author", undefined, raw);
		expectCleanFailure(answer, 400);
		expect((answer.body as { msg: string }).msg).toBe("The request body is not valid JSON");
	});

	test("a body over the size limit answers 413 with a msg and stores nothing", async () => {
		const before = (await api.get("/author")).body.length;
		const answer = await api.put("/author", { name: "A", nationality: "B", padding: "p".repeat(200_000) });
		expectCleanFailure(answer, 413);
		expect((await api.get("/author")).body).toHaveLength(before);
	});

	test.each([
		["an array", [{ name: "A", nationality: "B" }]],
		["a string", "Ann"],
		["null", null],
	])("a body that is %s answers 400 with a msg", async (_case, body) => {
		expectCleanFailure(await api.put("/author", body), 400);
	});

	test("a request without a body answers 400 naming the first missing field", async () => {
		const answer = await api.send("PUT", "/author");
		expectCleanFailure(answer, 400);
		expect((answer.body as { msg: string }).msg).toBe("The 'name' field is required.");
	});

	test("a validation failure lists every offending field as { field, message, type }", async () => {
		const answer = await api.put("/game", { title: "", age: "old" });
		expectCleanFailure(answer, 400);
		const { msg, errors } = answer.body as { msg: string; errors: { field: string; message: string; type: string }[] };
		expect(msg).toBe(errors[0].message);
		expect(errors.map(error => error.field)).toEqual(["title", "age", "category", "author"]);
		for (const error of errors) expect(Object.keys(error).sort()).toEqual(["field", "message", "type"]);
	});

	test("a filter sent twice answers 400 rather than failing", async () => {
		expectCleanFailure(await api.get("/game?title=a&title=b"), 400);
		expectCleanFailure(await api.get("/category?name=a&name=b"), 400);
	});

	test("a __proto__ key in the body cannot supply fields", async () => {
		const before = (await api.get("/author")).body.length;
		const raw = '{"__proto__":{"name":"Mallory","nationality":"Nowhere"}}';
		const answer = await api.send("PUT", "/author", undefined, raw);
		expectCleanFailure(answer, 400);
		expect((answer.body as { msg: string }).msg).toBe("The 'name' field is required.");
		expect((await api.get("/author")).body).toHaveLength(before);
	});

	test("documented error texts are sent without the 'Error:' prefix", async () => {
		const answer = await api.delete(`/author/${newId()}`);
		expect(answer.body).toEqual({ msg: "There is no author with that Id" });
	});

	test("success answers are JSON", async () => {
		const answer = await api.get("/author");
		expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
	});
});
