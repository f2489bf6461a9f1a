import { newId } from "../../lib/catalogue/ids";
import { INTERNALS, startCatalogue, type Api, type Catalogue } from "../support/catalogue";
import { rawExchange, rawRequest } from "../support/raw-http";

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
		["POST", "/game/1", "DELETE, GET, HEAD, PUT", "This path does not answer POST; it answers DELETE, GET, HEAD, PUT"],
		["PATCH", `/game/${newId()}`, "DELETE, GET, HEAD, PUT", "This path does not answer PATCH; it answers DELETE, GET, HEAD, PUT"],
		["PATCH", "/author/1", "DELETE, GET, HEAD, PUT", "This path does not answer PATCH; it answers DELETE, GET, HEAD, PUT"],
		["DELETE", "/author", "GET, HEAD, POST, PUT", "This path does not answer DELETE; it answers GET, HEAD, POST, PUT"],
		["DELETE", "/category/", "GET, HEAD, PUT", "This path does not answer DELETE; it answers GET, HEAD, PUT"],
		["POST", "/category", "GET, HEAD, PUT", "Records are created with PUT /category, not POST; this path answers GET, HEAD, PUT"],
		["PUT", "/health/live", "GET, HEAD", "This path does not answer PUT; it answers GET, HEAD"],
		["POST", "/changes", "GET", "This path does not answer POST; it answers GET"],
	])("%s %s, a method the path does not answer, is 405 with Allow: %s", async (method, path, allow, msg) => {
		const answer = await api.send(method, path);
		expectCleanFailure(answer, 405);
		expect(answer.body).toEqual({ msg });
		expect(answer.headers.get("allow")).toBe(allow);
	});

	test.each([
		["/game", "405 Method Not Allowed", "This path does not answer CONNECT; it answers GET, HEAD, POST, PUT", "GET, HEAD, POST, PUT"],
		["example.com:443", "404 Not Found", "Not found", undefined],
	])("CONNECT %s, a proxy's method, is answered %s with a msg, not dropped", async (target, status, msg, allow) => {
		const answer = await rawExchange(api.url, `CONNECT ${target} HTTP/1.1\r\nHost: catalogue\r\n\r\n`);
		const [head, body] = answer.split("\r\n\r\n");
		expect(head.split("\r\n")[0]).toBe(`HTTP/1.1 ${status}`);
		expect(head).toContain("\r\nContent-Type: application/json; charset=utf-8\r\n");
		expect(/\r\nAllow: ([^\r]*)/.exec(head)?.[1]).toBe(allow);
		expect(JSON.parse(body)).toEqual({ msg });
	});

	describe("HEAD, on every path that answers GET", () => {
		/** A GET's answer and the HEAD of the same URL, with exactly these headers: the HEAD has the GET's status and headers, no body. */
		async function both(path: string, headers: Record<string, string> = {}) {
			const get = await rawRequest(api.url + path, "GET", headers);
			const head = await rawRequest(api.url + path, "HEAD", headers);
			expect(head.body.length).toBe(0);
			expect(head.status).toBe(get.status);
			for (const name of ["content-type", "etag", "content-encoding"])
				expect({ path, name, value: head.headers[name] }).toEqual({ path, name, value: get.headers[name] });
			// RFC 9110: a HEAD may leave Content-Length out, and never sends another length than the GET's.
			if (head.headers["content-length"] !== undefined) expect(head.headers["content-length"]).toBe(String(get.body.length));
			return { get, head };
		}

		test("HEAD of the lists, a record, the health paths and the documents answers as GET, without the body", async () => {
			const category = await api.category("Head category");
			const author = await api.author("Head author");
			await api.game("Head game", category, author);
			const paths = ["/game", "/author", "/category", `/category/${category.id}`, "/health/ready", "/health/live", "/openapi.json"];
			for (const path of paths) {
				const { head } = await both(path);
				expect({ path, status: head.status, etag: head.headers.etag }).toEqual({ path, status: 200, etag: expect.any(String) });
			}
			expect((await both("/docs")).head.status).toBe(200);
		});

		test("HEAD reads the list filters of its query, as GET does", async () => {
			const category = await api.category("Head filter");
			const author = await api.author("Head filter author");
			await api.game("Head filtered", category, author);
			const all = await both("/game");
			const filtered = await both(`/game?title=${encodeURIComponent("^Head filtered$")}`);
			expect(JSON.parse(filtered.get.body.toString())).toHaveLength(1);
			expect(filtered.head.headers.etag).not.toBe(all.head.headers.etag);
		});

		test("HEAD with the tag it holds answers 304; compressed, it names the encoding the GET is sent in", async () => {
			const { head } = await both("/game");
			expect((await rawRequest(`${api.url}/game`, "HEAD", { "If-None-Match": head.headers.etag! })).status).toBe(304);
			const compressed = await both("/openapi.json", { "Accept-Encoding": "gzip" });
			expect(compressed.head.headers["content-encoding"]).toBe("gzip");
		});

		test("HEAD of an unknown record answers the GET's 400, without the body", async () => {
			expect((await both(`/category/${newId()}`)).head.status).toBe(400);
		});

		test("HEAD /changes, a stream, is 405 with Allow: GET", async () => {
			const head = await rawRequest(`${api.url}/changes`, "HEAD");
			expect({ status: head.status, allow: head.headers.allow, body: head.body.length }).toEqual({
				status: 405,
				allow: "GET",
				body: 0,
			});
		});
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

	test.each(["application/json", "application/json; charset=utf-8"])(
		"a body as %s that is not UTF-8 (a name in Latin-1) answers 400 with a msg and stores nothing, not U+FFFD in its place",
		async type => {
			const before = (await api.get("/author")).body;
			const latin1 = Buffer.from('{"name":"Jos\xe9 Garc\xeda","nationality":"Espa\xf1ola"}', "latin1");
			const answer = await api.send("PUT", "/author", undefined, latin1, { "Content-Type": type });
			expectCleanFailure(answer, 400);
			expect(answer.body).toEqual({ msg: "The request body is not UTF-8 text: send it as UTF-8" });
			expect((await api.get("/author")).body).toEqual(before);
			// The same text in UTF-8 is stored as sent.
			const utf8 = await api.send("PUT", "/author", undefined, latin1.toString("latin1"), { "Content-Type": type });
			expect(utf8.body.author).toMatchObject({ name: "José García", nationality: "Española" });
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
