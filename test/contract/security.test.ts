import type { Server } from "node:http";
import { connect } from "node:net";
import { gzipSync } from "node:zlib";
import type { Middleware } from "moleculer";
import { newId } from "../../lib/catalogue/ids";
import { REQUEST_ARRIVAL_MS } from "../../services/api.service";
import { localService, startCatalogue, type Answer, type Api, type Catalogue, type CatalogueOptions } from "../support/catalogue";
import { roomInWindow } from "../support/rate-limit";
import { rawRequest as httpRequest } from "../support/raw-http";

/** A catalogue for one describe block, started with its own gateway settings. */
function catalogueWith(options: CatalogueOptions = {}): { api(): Api; catalogue(): Catalogue } {
	let catalogue: Catalogue;
	beforeAll(async () => {
		catalogue = await startCatalogue(options);
	});
	afterAll(() => catalogue.stop());
	return { api: () => catalogue.api, catalogue: () => catalogue };
}

/** Every failure: JSON whose msg is `msg`, with nothing internal in it. */
function expectFailure(answer: Answer, status: number, msg: string) {
	expect({ status: answer.status, body: answer.body }).toEqual({ status, body: { msg } });
	expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
}

/** Sends raw bytes to the gateway (then half-closes, unless told not to) and resolves with everything it answers before closing. */
function rawRequest(api: Api, bytes: string, halfClose = true): Promise<string> {
	const { hostname, port } = new URL(api.url);
	return new Promise((resolve, reject) => {
		const socket = connect(Number(port), hostname, () => (halfClose ? socket.end(bytes) : socket.write(bytes)));
		let answer = "";
		socket.setEncoding("utf8");
		socket.on("data", (chunk: string) => (answer += chunk));
		socket.on("end", () => resolve(answer));
		socket.on("error", reject);
	});
}

/** Status line and JSON body of a raw HTTP answer. */
function parseRaw(answer: string): { status: number; body: unknown; head: string } {
	const [head, body] = answer.split("\r\n\r\n");
	return { status: Number(head.split(" ")[1]), body: JSON.parse(body), head };
}

/** The gateway's warnings from now on: call `lines()` to read them, `stop()` to stop listening. */
function gatewayWarnings(catalogue: Catalogue) {
	const { logger } = localService<{ logger: { warn(...args: unknown[]): void } }>(catalogue, "api");
	const spy = jest.spyOn(logger, "warn");
	return {
		lines: () => spy.mock.calls.map(call => call.join(" ")).filter(line => line.startsWith("A browser at")),
		stop: () => spy.mockRestore(),
	};
}

/** Nested arrays `depth` deep around a string: `[["x"]]` is depth 2. */
const nested = (depth: number) => "[".repeat(depth) + '"x"' + "]".repeat(depth);

const TOKEN = "test-token-0123456789abcdef";

describe("limits and headers (default settings)", () => {
	const { api, catalogue } = catalogueWith();

	test("every answer carries the security headers: success, validation failure and unknown route", async () => {
		for (const answer of [await api().get("/author"), await api().put("/author", {}), await api().get("/nothing")]) {
			expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
			expect(answer.headers.get("content-security-policy")).toBe("default-src 'none';frame-ancestors 'none'");
			expect(answer.headers.get("x-frame-options")).toBe("DENY");
			expect(answer.headers.get("referrer-policy")).toBe("no-referrer");
			expect(answer.headers.get("x-powered-by")).toBeNull();
		}
	});

	test("an Expect other than 100-continue is served as without it, headers and all, where Node would answer a bare 417", async () => {
		const answer = await httpRequest(`${api().url}/author`, "GET", { Expect: "the-unknown" });
		expect(answer.status).toBe(200);
		expect(answer.headers["x-request-id"]).toEqual(expect.any(String));
		expect(answer.headers["x-content-type-options"]).toBe("nosniff");
		expect(JSON.parse(answer.body.toString())).toEqual(expect.any(Array));
	});

	test("a URL over 4096 characters answers 414 with a msg; one of 4096 is served", async () => {
		const path = (length: number) => `/author/${"x".repeat(length - "/author/".length)}`;
		expectFailure(await api().get(path(4097)), 414, "The request URL is too long");
		expectFailure(await api().get(path(4096)), 400, "There is no author with that Id");
	});

	test("a request line or headers beyond what Node reads answer 431 as JSON with a msg", async () => {
		const answer = parseRaw(await rawRequest(api(), `GET /author/${"x".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
		expect(answer.status).toBe(431);
		expect(answer.body).toEqual({ msg: "The request headers are too large" });
		expect(answer.head).toMatch(/content-type: application\/json/i);
	});

	test("a request must arrive within 30 s (Node's default is 5 minutes)", () => {
		expect(localService<{ server: Server }>(catalogue(), "api").server.requestTimeout).toBe(REQUEST_ARRIVAL_MS);
		expect(REQUEST_ARRIVAL_MS).toBe(30_000);
	});

	test("bytes that are not HTTP answer 400 as JSON with a msg", async () => {
		const answer = parseRaw(await rawRequest(api(), "HELLO THERE\r\n\r\n"));
		expect(answer).toMatchObject({ status: 400, body: { msg: "The request is not valid HTTP" } });
	});

	test("an HTTP/1.1 request without a Host header answers 400 as JSON with a msg; HTTP/1.0 needs none", async () => {
		const answer = parseRaw(await rawRequest(api(), "GET /category HTTP/1.1\r\n\r\n"));
		expect(answer).toMatchObject({ status: 400, body: { msg: "The request has no Host header, which HTTP/1.1 requires" } });
		expect(answer.head).toMatch(/content-type: application\/json/i);
		// Left open until the gateway closes it: a half-closed HTTP/1.0 request is given up when its answer takes a while.
		expect(parseRaw(await rawRequest(api(), "GET /category HTTP/1.0\r\n\r\n", false)).status).toBe(200);
	});

	test("a body nested more than 32 deep answers 400 with a msg and stores nothing", async () => {
		const before = (await api().get("/author")).body;
		const raw = `{"name":"Deep","nationality":"Nowhere","extra":${nested(32)}}`;
		expectFailure(await api().send("PUT", "/author", undefined, raw), 400, "The request body is nested too deeply");
		expectFailure(
			await api().send("PUT", "/author", undefined, `{"name":${nested(5000)}}`),
			400,
			"The request body is nested too deeply",
		);
		expect((await api().get("/author")).body).toEqual(before);
	});

	test("a body 32 deep is read as usual", async () => {
		const raw = `{"name":"Deep","nationality":"Nowhere","extra":${nested(31)}}`;
		const answer = await api().send("PUT", "/author", undefined, raw);
		expect(answer.status).toBe(200);
		await api().delete(`/author/${answer.body.author.id}`);
	});

	test.each([
		["a charset nobody knows", { "Content-Type": "application/json; charset=klingon" }, 'unsupported charset "KLINGON"'],
		["an unknown content encoding", { "Content-Encoding": "snappy" }, 'unsupported content encoding "snappy"'],
	])("a body in %s answers 415 with a msg and stores nothing", async (_case, headers, msg) => {
		const before = (await api().get("/author")).body;
		expectFailure(await api().send("PUT", "/author", { name: "Ann", nationality: "Irish" }, undefined, headers), 415, msg);
		expect((await api().get("/author")).body).toEqual(before);
	});

	test.each([
		["gzip", "not gzip at all"],
		["gzip", new Uint8Array(gzipSync(JSON.stringify({ name: "Ann", nationality: "Irish" })).subarray(0, 20))],
		["deflate", "not deflate"],
		["br", new Uint8Array([0xff, 0xff, 0xff, 0xff])],
		["zstd", "{}"],
	])("a body that is not in the Content-Encoding it names (%s) answers 400 with a msg and stores nothing", async (encoding, raw) => {
		const before = (await api().get("/author")).body;
		const answer = await api().send("PUT", "/author", undefined, raw, { "Content-Encoding": encoding });
		expectFailure(answer, 400, "The request body is not in the Content-Encoding it names");
		expect((await api().get("/author")).body).toEqual(before);
	});

	test("a body in the Content-Encoding it names is read", async () => {
		const raw = new Uint8Array(gzipSync(JSON.stringify({ name: "Zipped", nationality: "Irish" })));
		const answer = await api().send("PUT", "/author", undefined, raw, { "Content-Encoding": "gzip" });
		expect(answer.status).toBe(200);
		await api().delete(`/author/${answer.body.author.id}`);
	});

	test.each([
		["GET", "/game?idCategory[$ne]=x", undefined, "idCategory"],
		["GET", "/game?title[$regex]=.*", undefined, "title"],
		["GET", "/category?name[$gt]=", undefined, "name"],
		["PUT", "/game", { title: "T", age: 1, category: { id: { $ne: null } }, author: { id: { $exists: true } } }, "category.id"],
	])("a query operator smuggled in as a value (%s %s) is a wrong type: 400 naming the field", async (method, path, body, field) => {
		const answer = await api().send(method, path, body);
		expect(answer.status).toBe(400);
		expect(answer.body.errors[0].field).toBe(field);
	});

	test("a write takes its fields from the body alone: the query string cannot supply or replace them", async () => {
		const before = (await api().get("/author")).body;
		expect((await api().send("PUT", "/author?name=Mallory&nationality=Nowhere", {})).status).toBe(400);
		const created = await api().send("PUT", "/author?name=Mallory", { name: "Ann", nationality: "Irish" });
		expect(created.body.author).toMatchObject({ name: "Ann", nationality: "Irish" });
		const { id } = created.body.author;
		expect((await api().send("PUT", `/author/${id}?name=Mallory`, { name: "Anna", nationality: "Irish" })).body).toBe(1);
		expect((await api().get(`/author/${id}`)).body).toEqual({ id, name: "Anna", nationality: "Irish" });
		expect((await api().send("POST", "/author?pageable[pageNumber]=0&pageable[pageSize]=2", {})).status).toBe(400);
		await api().delete(`/author/${id}`);
		expect((await api().get("/author")).body).toEqual(before);
	});

	test("a read takes its filters from the query string alone: a GET or HEAD with a JSON body answers as its URL says", async () => {
		const puzzles = await api().category("Puzzles for the body test");
		const url = `${api().url}/category`;
		const filter = { name: "Puzzles for the body" };
		// Node sends a GET's body only with its length given.
		const json = { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(JSON.stringify(filter))) };
		const plain = await httpRequest(url, "GET");
		for (const method of ["GET", "HEAD"]) {
			const withBody = await httpRequest(url, method, json, filter);
			expect({ method, status: withBody.status, etag: withBody.headers.etag }).toEqual({
				method,
				status: 200,
				etag: plain.headers.etag,
			});
		}
		expect(JSON.parse(plain.body.toString())).toContainEqual(puzzles);
		await api().delete(`/category/${puzzles.id}`);
	});

	test.each([
		["toString", '{"name":[{"toString":1}],"nationality":"Irish"}'],
		["valueOf and toString", '{"name":"Ann","nationality":[{"valueOf":1,"toString":1}]}'],
		["hasOwnProperty", '{"name":{"hasOwnProperty":1},"nationality":"Irish"}'],
	])("a value whose %s is not a function is a wrong type, not a crash: 400 naming the field", async (_case, raw) => {
		const answer = await api().send("PUT", "/author", undefined, raw);
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toMatch(/^The '(name|nationality)' field must be a string\.$/);
	});

	test("an id in the query or the body cannot replace the one in the path", async () => {
		const author = await api().author("Kept", "Safe");
		const answer = await api().send("DELETE", `/author/${newId()}?id=${author.id}&id[$ne]=x`, { id: author.id });
		expectFailure(answer, 400, "There is no author with that Id");
		expect((await api().get(`/author/${author.id}`)).status).toBe(200);
		await api().delete(`/author/${author.id}`);
	});

	test("without RATE_LIMIT nobody is limited and no rate-limit headers are sent", async () => {
		const answers = await Promise.all(Array.from({ length: 60 }, () => api().get("/category")));
		expect(answers.map(answer => answer.status)).toEqual(answers.map(() => 200));
		expect(answers[0].headers.get("x-rate-limit-limit")).toBeNull();
	});

	test("without CORS_ORIGINS no origin is allowed: no CORS headers, no preflight", async () => {
		const answer = await api().send("GET", "/author", undefined, undefined, { Origin: "https://app.example.com" });
		expect(answer.status).toBe(200);
		expect(answer.headers.get("access-control-allow-origin")).toBeNull();
		const preflight = await api().send("OPTIONS", "/author", undefined, undefined, {
			Origin: "https://app.example.com",
			"Access-Control-Request-Method": "PUT",
		});
		expect(preflight.status).toBe(404);
	});

	test("a browser at another origin is told of once per origin, naming CORS_ORIGINS; the gateway's own origin is not", async () => {
		const warnings = gatewayWarnings(catalogue());
		try {
			const { host } = new URL(api().url);
			for (const origin of ["http://localhost:5173", "http://localhost:5173", "https://other.example", `http://${host}`])
				expect((await api().send("GET", "/author", undefined, undefined, { Origin: origin })).status).toBe(200);
			expect(warnings.lines()).toEqual([
				"A browser at http://localhost:5173 called the API; its answers carry no Access-Control-Allow-Origin: add it to CORS_ORIGINS to let it read them",
				"A browser at https://other.example called the API; its answers carry no Access-Control-Allow-Origin: add it to CORS_ORIGINS to let it read them",
			]);
		} finally {
			warnings.stop();
		}
	});

	test("an OPTIONS request of a read, the docs page or the change stream runs nothing: 404", async () => {
		for (const [path, headers] of [
			["/author", {}],
			["/docs", {}],
			["/docs", { "Access-Control-Request-Method": "GET" }],
			["/changes", {}],
		] as const) {
			const answer = await api().send("OPTIONS", path, undefined, undefined, headers);
			expect({ path, headers, status: answer.status, type: answer.headers.get("content-type") }).toEqual({
				path,
				headers,
				status: 404,
				type: "application/json; charset=utf-8",
			});
		}
	});

	test("an OPTIONS request naming a write method runs nothing: 404, the store unchanged", async () => {
		const before = (await api().get("/author")).body;
		const answer = await api().send("OPTIONS", "/author", { name: "Via", nationality: "Options" }, undefined, {
			"Access-Control-Request-Method": "PUT",
		});
		expectFailure(answer, 404, "Not found");
		expect((await api().get("/author")).body).toEqual(before);
	});

	test("without API_TOKEN writes are open", async () => {
		const answer = await api().put("/category", { name: "Open" });
		expect(answer.status).toBe(200);
		await api().delete(`/category/${answer.body.category.id}`);
	});
});

describe("an unexpected error", () => {
	/** Makes the gateway's handling of every request fail as a bug would, with a stack and file paths. */
	const bug: Middleware = {
		localAction(next, action) {
			if (action.name !== "api.rest") return next;
			return () => Promise.reject(new TypeError(`Cannot read properties of undefined at ${__filename}:1:1`));
		},
	};
	const { api } = catalogueWith({ middlewares: [bug] });

	test("answers 500 'Internal server error', without a stack or a path", async () => {
		const answer = await api().get("/author");
		expectFailure(answer, 500, "Internal server error");
		expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
	});
});

describe("RATE_LIMIT", () => {
	const { api, catalogue } = catalogueWith({ settings: { rateLimit: { limit: 3, windowMs: 60_000 } } });
	beforeAll(() => roomInWindow(60_000, 10_000), 15_000);

	test("a client address gets its limit per window, then 429 with a msg and Retry-After", async () => {
		const allowed = [];
		for (let index = 0; index < 3; index++) allowed.push(await api().get("/author"));
		expect(allowed.map(answer => answer.status)).toEqual([200, 200, 200]);
		expect(allowed.map(answer => answer.headers.get("x-rate-limit-remaining"))).toEqual(["2", "1", "0"]);
		expect(allowed[0].headers.get("x-rate-limit-limit")).toBe("3");

		const refused = await api().put("/author", { name: "Ann", nationality: "Irish" });
		expectFailure(refused, 429, "Too many requests from this address; try again later");
		const retryAfter = Number(refused.headers.get("retry-after"));
		expect(retryAfter).toBeGreaterThanOrEqual(1);
		expect(retryAfter).toBeLessThanOrEqual(60);
		expect(await catalogue().broker.call("authors.list")).toEqual(allowed[0].body);
	});

	test("X-Forwarded-For does not buy a fresh budget: the key is the connection's address", async () => {
		const answer = await api().send("GET", "/author", undefined, undefined, { "X-Forwarded-For": "203.0.113.7" });
		expect(answer.status).toBe(429);
	});
});

describe("RATE_LIMIT behind a proxy TRUST_PROXY declares", () => {
	const { api } = catalogueWith({ settings: { rateLimit: { limit: 1, windowMs: 60_000 }, trustProxy: { proxies: ["loopback"] } } });
	beforeAll(() => roomInWindow(60_000, 10_000), 15_000);
	const via = (forwardedFor?: string) =>
		api().send("GET", "/author", undefined, undefined, forwardedFor === undefined ? {} : { "X-Forwarded-For": forwardedFor });

	test("each client is known by the address the proxy forwarded, and limited on its own", async () => {
		expect((await via("198.51.100.1")).status).toBe(200);
		expectFailure(await via("198.51.100.1"), 429, "Too many requests from this address; try again later");
		expect((await via("198.51.100.2")).status).toBe(200);
		// The address the client wrote itself, before the one the proxy appended, is not believed.
		expect((await via("203.0.113.9, 198.51.100.1")).status).toBe(429);
		// A request the proxy sent without forwarding anyone is the proxy's own.
		expect((await via()).status).toBe(200);
	});
});

describe("RATE_LIMIT on the docs page's files", () => {
	const { api } = catalogueWith({ settings: { rateLimit: { limit: 3, windowMs: 60_000 } } });
	beforeAll(() => roomInWindow(60_000, 10_000), 15_000);

	test("the files /docs serves spend the same budget as its page, then answer 429", async () => {
		const statuses = [];
		for (let index = 0; index < 3; index++) {
			const answer = await fetch(`${api().url}/docs/swagger-ui.css`);
			await answer.arrayBuffer();
			statuses.push([answer.status, answer.headers.get("x-rate-limit-remaining")]);
		}
		expect(statuses).toEqual([
			[200, "2"],
			[200, "1"],
			[200, "0"],
		]);
		expectFailure(await api().get("/docs/swagger-ui-bundle.js"), 429, "Too many requests from this address; try again later");
		expect((await api().get("/docs/")).status).toBe(429);
	});
});

describe("RATE_LIMIT_WINDOW", () => {
	const { api } = catalogueWith({ settings: { rateLimit: { limit: 1, windowMs: 1000 } } });

	test("the budget comes back when the window starts again", async () => {
		await roomInWindow(1000, 500);
		await api().get("/author");
		const refused = await api().get("/author");
		expect(refused.status).toBe(429);
		await new Promise(resolve => setTimeout(resolve, Number(refused.headers.get("retry-after")) * 1000 + 100));
		expect((await api().get("/author")).status).toBe(200);
	});
});

describe("CORS_ORIGINS", () => {
	const { api, catalogue } = catalogueWith({ settings: { corsOrigins: ["https://app.example.com", "http://localhost:5173"] } });
	const from = (origin: string, headers: Record<string, string> = {}) => ({ Origin: origin, ...headers });

	test("a listed origin is allowed, on answers and on failures", async () => {
		for (const answer of [
			await api().send("GET", "/author", undefined, undefined, from("https://app.example.com")),
			await api().send("PUT", "/author", {}, undefined, from("http://localhost:5173")),
		]) {
			expect(answer.headers.get("access-control-allow-origin")).toBe(
				answer.status === 200 ? "https://app.example.com" : "http://localhost:5173",
			);
			expect(answer.headers.get("vary")).toMatch(/Origin/);
			// A page reads the id its request was given, and when to try again.
			expect(answer.headers.get("access-control-expose-headers")).toMatch(/\bX-Request-ID\b/);
			expect(answer.headers.get("access-control-expose-headers")).toMatch(/\bRetry-After\b/);
		}
	});

	test("a preflight from a listed origin answers 204 with the methods and headers a front end needs", async () => {
		const preflight = await api().send("OPTIONS", "/author/123", undefined, undefined, {
			Origin: "https://app.example.com",
			"Access-Control-Request-Method": "PUT",
			"Access-Control-Request-Headers": "content-type, authorization",
		});
		expect(preflight.status).toBe(204);
		expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
		expect(preflight.headers.get("access-control-allow-methods")).toBe("GET, PUT, POST, DELETE");
		expect(preflight.headers.get("access-control-allow-headers")).toBe("Content-Type, Authorization, Last-Event-ID, X-Request-ID");
		expect(preflight.headers.get("access-control-max-age")).toBe("600");
	});

	test("an origin not listed, even one that is part of a listed one, answers 403 with a msg and changes nothing", async () => {
		const before = (await api().get("/author")).body;
		for (const origin of ["https://evil.example.net", "https://app.example.co", "https://app", "http://app.example.com"]) {
			const answer = await api().send("PUT", "/author", { name: "Eve", nationality: "Nowhere" }, undefined, from(origin));
			expectFailure(answer, 403, "Requests from this origin are not allowed");
			expect(answer.headers.get("access-control-allow-origin")).toBeNull();
		}
		expect((await api().get("/author")).body).toEqual(before);
	});

	test("an OPTIONS request that is no preflight (it names no method) runs nothing: 404, even from a listed origin", async () => {
		for (const path of ["/author", "/changes", "/docs"]) {
			const answer = await api().send("OPTIONS", path, undefined, undefined, from("https://app.example.com"));
			expect({ path, status: answer.status }).toEqual({ path, status: 404 });
		}
	});

	test("an OPTIONS request naming a write method is answered as a preflight and runs nothing", async () => {
		const before = (await api().get("/author")).body;
		for (const headers of [
			{ "Access-Control-Request-Method": "PUT" },
			from("https://app.example.com", { "Access-Control-Request-Method": "PUT" }),
		]) {
			const answer = await api().send("OPTIONS", "/author", { name: "Via", nationality: "Options" }, undefined, headers);
			expect(answer.status).toBe(204);
		}
		expect((await api().get("/author")).body).toEqual(before);
	});

	test("an origin not listed is told of once, naming CORS_ORIGINS; a listed one is not", async () => {
		const warnings = gatewayWarnings(catalogue());
		try {
			for (const origin of ["https://staging.example.com", "https://app.example.com", "https://staging.example.com"])
				await api().send("GET", "/author", undefined, undefined, from(origin));
			expect(warnings.lines()).toEqual([
				"A browser at https://staging.example.com called the API and was refused (403): add it to CORS_ORIGINS to let it call",
			]);
		} finally {
			warnings.stop();
		}
	});

	test("a request without an Origin (not from a browser) is served as usual", async () => {
		expect((await api().get("/author")).status).toBe(200);
	});
});

describe("CORS_ORIGINS=*", () => {
	const { api } = catalogueWith({ settings: { corsOrigins: ["*"] } });

	test("any origin is allowed", async () => {
		const answer = await api().send("GET", "/author", undefined, undefined, { Origin: "https://anywhere.example" });
		expect(answer.headers.get("access-control-allow-origin")).toBe("*");
	});
});

describe("API_TOKEN", () => {
	const { api } = catalogueWith({ settings: { apiToken: TOKEN } });
	const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

	test("a write without the token answers 401 with a msg and a Bearer challenge, and changes nothing", async () => {
		const before = (await api().get("/category")).body;
		const answer = await api().put("/category", { name: "Sneaky" });
		expectFailure(answer, 401, "Changing the catalogue needs the API token: send Authorization: Bearer <token>");
		expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="game-catalogue"');
		expect((await api().get("/category")).body).toEqual(before);
	});

	test.each([
		["a wrong token", bearer("test-token-0123456789abcdeX")],
		["a prefix of the token", bearer(TOKEN.slice(0, -1))],
		["another scheme", { Authorization: `Basic ${TOKEN}` }],
	])("a write with %s answers 401 and names the token invalid", async (_case, headers) => {
		const answer = await api().send("PUT", "/category", { name: "Sneaky" }, undefined, headers);
		expect(answer.status).toBe(401);
		expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="game-catalogue", error="invalid_token"');
	});

	test("PUT and DELETE with the token are served; without it a DELETE is refused and the record kept", async () => {
		const created = await api().send("PUT", "/category", { name: "Allowed" }, undefined, bearer(TOKEN));
		expect(created.status).toBe(200);
		const { id } = created.body.category;
		expect((await api().send("PUT", `/category/${id}`, { name: "Renamed" }, undefined, bearer(TOKEN))).body).toBe(1);
		expect((await api().delete(`/category/${id}`)).status).toBe(401);
		expect((await api().get(`/category/${id}`)).body).toEqual({ id, name: "Renamed" });
		expect((await api().send("DELETE", `/category/${id}`, undefined, undefined, { Authorization: `bearer ${TOKEN}` })).status).toBe(
			200,
		);
	});

	test("an OPTIONS request naming PUT cannot write past the token", async () => {
		const before = (await api().get("/author")).body;
		const answer = await api().send("OPTIONS", "/author", { name: "Via", nationality: "Options" }, undefined, {
			"Access-Control-Request-Method": "PUT",
		});
		expect(answer.status).toBe(404);
		expect((await api().get("/author")).body).toEqual(before);
	});

	test("reads stay open: GET, and POST /author (a search)", async () => {
		expect((await api().get("/author")).status).toBe(200);
		expect((await api().get("/game?title=a")).status).toBe(200);
		expect((await api().post("/author", { pageable: { pageNumber: 0, pageSize: 5 } })).status).toBe(200);
	});

	test.each([
		["GET", "/games/countBy"],
		["POST", "/games/countBy"],
		["PUT", "/games/countBy"],
		["GET", "/games.countBy"],
		["GET", "/authors/referable?id=x"],
		["GET", "/games/orphans"],
		["GET", "/~node/actions"],
		["GET", "/$node/list"],
		["GET", "/api/authors/list"],
	])("internal action %s %s stays unreachable, even with the token", async (method, path) => {
		expectFailure(await api().send(method, path, undefined, undefined, bearer(TOKEN)), 404, "Not found");
		expectFailure(await api().send(method, path), 404, "Not found");
	});
});
