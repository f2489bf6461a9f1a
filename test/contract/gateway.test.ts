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
		["PATCH", "/nothing"],
		["GET", "/author/1/games"],
		["DELETE", "/author/1/games"],
	])("an unknown route %s %s answers 404 with a msg", async (method, path) => {
		expectCleanFailure(await api.send(method, path), 404);
		expect((await api.send(method, path)).body).toEqual({ msg: "Not found" });
	});

	test.each([
		["POST", "/game/1", "DELETE, GET, PUT", "This path does not answer POST; it answers DELETE, GET, PUT"],
		["PATCH", `/game/${newId()}`, "DELETE, GET, PUT", "This path does not answer PATCH; it answers DELETE, GET, PUT"],
		["PATCH", "/author/1", "DELETE, GET, PUT", "This path does not answer PATCH; it answers DELETE, GET, PUT"],
		["DELETE", "/author", "GET, POST, PUT", "This path does not answer DELETE; it answers GET, POST, PUT"],
		["DELETE", "/category/", "GET, PUT", "This path does not answer DELETE; it answers GET, PUT"],
		["POST", "/category", "GET, PUT", "Records are created with PUT /category, not POST; this path answers GET, PUT"],
		["PUT", "/health/live", "GET", "This path does not answer PUT; it answers GET"],
		["POST", "/changes", "GET", "This path does not answer POST; it answers GET"],
	])("%s %s, a method the path does not answer, is 405 with Allow: %s", async (method, path, allow, msg) => {
		const answer = await api.send(method, path);
		expectCleanFailure(answer, 405);
		expect(answer.body).toEqual({ msg });
		expect(answer.headers.get("allow")).toBe(allow);
	});

	test("a 405 runs nothing: POST /category with a body creates no category", async () => {
		const before = (await api.get("/category")).body;
		expect((await api.post("/category", { name: "Via POST" })).status).toBe(405);
		expect((await api.get("/category")).body).toEqual(before);
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

	test.each([
		["text/plain", "PUT", "/game"],
		["text/plain;charset=UTF-8", "PUT", "/category"],
		["application/x-www-form-urlencoded", "PUT", "/category"],
		["multipart/form-data; boundary=x", "POST", "/author"],
		["application/vnd.api+json", "PUT", "/author"],
		[undefined, "PUT", "/category"],
	])(
		"a JSON body sent as %s to %s %s answers 415 naming Content-Type: application/json, and stores nothing",
		async (type, method, path) => {
			const before = (await api.get("/category")).body;
			const body = method === "POST" ? { pageable: { pageNumber: 0, pageSize: 5 } } : { name: "Sent as text" };
			const response = await fetch(api.url + path, {
				method,
				headers: type === undefined ? {} : { "Content-Type": type },
				body: new TextEncoder().encode(JSON.stringify(body)),
			});
			const answer = { status: response.status, body: (await response.json()) as unknown, headers: response.headers };
			expectCleanFailure(answer, 415);
			expect(answer.body).toEqual({ msg: "The request body is read as JSON only: send it with Content-Type: application/json" });
			expect((await api.get("/category")).body).toEqual(before);
		},
	);

	test.each(["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"])("a body sent as %s is read", async type => {
		const answer = await api.send("PUT", "/category", undefined, JSON.stringify({ name: "Typed" }), { "Content-Type": type });
		expect(answer.status).toBe(200);
		expect(answer.body.category.name).toBe("Typed");
	});

	test("requests without a body keep their answers whatever their type: GET, DELETE, an empty POST", async () => {
		const plain = { "Content-Type": "text/plain" };
		expect((await api.send("GET", "/category", undefined, undefined, plain)).status).toBe(200);
		const deleted = await api.send("DELETE", `/category/${newId()}`, undefined, undefined, plain);
		expect(deleted.body).toEqual({ msg: "There is no category with that Id" });
		// fetch sends an empty string as text/plain: the page's own rule answers, not the type.
		const empty = await api.send("POST", "/author", undefined, "", plain);
		expectCleanFailure(empty, 400);
		expect(empty.body.msg).toBe("The 'pageable' field is required.");
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
