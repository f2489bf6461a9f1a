import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { boundedServer } from "../../lib/http/connections";
import { carriesToken, answerClientError } from "../../lib/http/http-guards";
import { dropPrototypeKeys, isNestedDeeperThan } from "../../lib/http/json";

describe("carriesToken", () => {
	const token = "0123456789abcdef-token";

	test.each([
		[`Bearer ${token}`, true],
		[`bearer ${token}`, true],
		[`Bearer  ${token} `, true],
		[undefined, false],
		["", false],
		[`Bearer ${token}x`, false],
		[`Bearer ${token.slice(1)}`, false],
		[`Basic ${token}`, false],
		[token, false],
		["Bearer ", false],
	])("%p carries the token: %p", (header, expected) => {
		expect(carriesToken(header, token)).toBe(expected);
	});
});

describe("isNestedDeeperThan", () => {
	test.each([
		["a scalar", "x", 0, false],
		["an empty object", {}, 1, false],
		["an empty object", {}, 0, true],
		["an author page request", { pageable: { sort: [{ property: "name" }] } }, 4, false],
		["an author page request", { pageable: { sort: [{ property: "name" }] } }, 3, true],
	])("%s within %#", (_case, value, max, deeper) => {
		expect(isNestedDeeperThan(value, max)).toBe(deeper);
	});

	test("a body nested 100,000 deep is measured without overflowing the stack", () => {
		const deep = JSON.parse("[".repeat(100_000) + "]".repeat(100_000));
		expect(isNestedDeeperThan(deep, 32)).toBe(true);
	});
});

describe("dropPrototypeKeys", () => {
	test("removes the keys Object.prototype has, at every level, and keeps the rest", () => {
		const body = JSON.parse(
			'{"__proto__":{"name":"x"},"name":"Ann","list":[{"__proto__":{"a":1},"b":2,"toString":1}],"constructor":1,"nested":{"valueOf":1,"hasOwnProperty":2,"c":3}}',
		);
		dropPrototypeKeys(body);
		expect(body).toEqual({ name: "Ann", list: [{ b: 2 }], nested: { c: 3 } });
		expect(Object.hasOwn(body, "__proto__")).toBe(false);
		expect(Object.assign({}, body).name).toBe("Ann");
		expect(String(body.list)).toBe("[object Object]");
	});
});

describe("answerClientError", () => {
	let server: Server;
	let port: number;

	beforeAll(async () => {
		server = createServer({ connectionsCheckingInterval: 50 }, (_req, res) => res.end("ok"));
		server.headersTimeout = 300;
		server.requestTimeout = 300;
		server.on("clientError", answerClientError);
		await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
		port = (server.address() as AddressInfo).port;
	});
	afterAll(() => new Promise(resolve => server.close(resolve)));

	/** What the server answers to `bytes`, then waiting for it to close the connection. */
	function answerTo(bytes: string, to = port): Promise<string> {
		return new Promise((resolve, reject) => {
			const socket = connect(to, "127.0.0.1", () => socket.write(bytes));
			let answer = "";
			socket.setEncoding("utf8");
			socket.on("data", (chunk: string) => (answer += chunk));
			socket.on("close", () => resolve(answer));
			socket.on("error", reject);
		});
	}

	test.each([
		["bytes that are not HTTP", "400 Bad Request", "HELLO\r\n\r\n", "The request is not valid HTTP"],
		[
			"headers over Node's limit",
			"431 Request Header Fields Too Large",
			`GET / HTTP/1.1\r\nX: ${"x".repeat(20_000)}\r\n\r\n`,
			"The request headers are too large",
		],
		[
			"headers that never finish arriving",
			"408 Request Timeout",
			"GET / HTTP/1.1\r\nHost: x\r\n",
			"The request took too long to arrive",
		],
	])("%s answer %s as JSON with a msg, then the connection closes", async (_case, status, bytes, msg) => {
		const answer = await answerTo(bytes);
		expect(answer.startsWith(`HTTP/1.1 ${status}\r\n`)).toBe(true);
		expect(answer).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/);
		expect(JSON.parse(answer.split("\r\n\r\n")[1])).toEqual({ msg });
	});

	describe("on the gateway's server, where an answer may have begun", () => {
		let bounded: Server;
		let boundedPort: number;

		beforeAll(async () => {
			const bounds = { total: 10, perClient: 10, headersTimeoutMs: 300, keepAliveTimeoutMs: 5000 };
			// An event stream answers at once, whatever its request's body; other paths once the request has arrived.
			bounded = boundedServer(bounds, 300, (req, res) => {
				if (req.url !== "/changes") return void req.resume().on("end", () => res.end("ok"));
				res.writeHead(200, { "Content-Type": "text/event-stream" });
				res.write("retry: 2000\n\n");
			});
			bounded.on("clientError", answerClientError);
			await new Promise<void>(resolve => bounded.listen(0, "127.0.0.1", resolve));
			boundedPort = (bounded.address() as AddressInfo).port;
		});
		afterAll(() => new Promise(resolve => bounded.close(resolve)));

		const answerOn = (bytes: string) => answerTo(bytes, boundedPort);

		test("a request whose body never comes, answered by an event stream: the connection is closed, no 408 inside the stream", async () => {
			const answer = await answerOn("GET /changes HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc");
			expect(answer.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
			expect(answer).toContain("retry: 2000");
			expect(answer).not.toContain("408");
		});

		test("an event stream pipelined behind another request, its body never coming: no 408 inside the stream either", async () => {
			const answer = await answerOn(
				"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /changes HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc",
			);
			expect(answer.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
			expect(answer).toContain("retry: 2000");
			expect(answer).not.toContain("408");
		});

		test("a kept-alive connection's next request that is late gets its 408 after the answer before it", async () => {
			const answer = await answerOn("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n");
			expect(answer.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
			expect(answer).toContain("\r\n\r\nokHTTP/1.1 408 Request Timeout\r\n");
		});
	});
});
