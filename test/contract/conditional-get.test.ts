import type * as ZlibModule from "node:zlib";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { actionCounter } from "../support/calls";
import { forgetCachedAnswers, startCatalogue, type Api, type Catalogue } from "../support/catalogue";
import { rawRequest, type RawAnswer } from "../support/raw-http";

// Conditional GET and compression: docs/caching.md (ETags, compression).

let catalogue: Catalogue;
let api: Api;
const counter = actionCounter();

/** A GET with exactly these headers (support/raw-http.ts: not fetch, which adds its own). */
const rawGet = (path: string, headers: Record<string, string> = {}) => rawRequest(`${api.url}${path}`, "GET", headers);
const json = (answer: RawAnswer) => JSON.parse(answer.body.toString());

const tagOf = async (path: string) => (await rawGet(path)).headers.etag!;
const conditional = (path: string, tag: string) => rawGet(path, { "If-None-Match": tag });
/** The actions of the catalogue's services (not the gateway's own) run while `send` runs, on any node. */
async function serviceRuns(send: () => Promise<unknown>): Promise<string[]> {
	counter.calls.clear();
	await send();
	return [...counter.calls.keys()].filter(action => !action.startsWith("api."));
}

let family: { id: string };
let knizia: { id: string };

beforeAll(async () => {
	catalogue = await startCatalogue({ middlewares: [counter.middleware] });
	api = catalogue.api;
	family = await api.category("Family");
	knizia = await api.author("Reiner Knizia", "German");
	// Enough games that GET /game is well over 1 KB.
	for (let i = 0; i < 12; i++) await api.game(`Game number ${i} with a long enough title`, family, knizia);
});
afterAll(() => catalogue.stop());

const GETS = () => [
	"/author",
	`/author/${knizia.id}`,
	"/category",
	"/category?name=fam",
	`/category/${family.id}`,
	"/game",
	`/game?title=game&idCategory=${family.id}`,
	"/health/live",
	"/openapi.json",
];

describe("ETag and If-None-Match", () => {
	test("every 200 answer of a GET carries a weak ETag", async () => {
		for (const path of GETS()) {
			const { status, headers } = await rawGet(path);
			expect({ path, status, etag: headers.etag }).toEqual({ path, status: 200, etag: expect.stringMatching(/^W\/".+"$/) });
		}
	});

	test("If-None-Match with the current tag answers 304 with no body, the tag repeated", async () => {
		for (const path of GETS()) {
			const tag = await tagOf(path);
			const { status, headers, body } = await conditional(path, tag);
			expect({ path, status, etag: headers.etag, body: body.length }).toEqual({ path, status: 304, etag: tag, body: 0 });
		}
	});

	test("a tag among several, or *, matches too; another tag does not", async () => {
		const tag = await tagOf("/game");
		expect((await conditional("/game", `W/"other", ${tag}`)).status).toBe(304);
		expect((await conditional("/game", "*")).status).toBe(304);
		const other = await conditional("/game", 'W/"other"');
		expect(other.status).toBe(200);
		expect(json(other)).toHaveLength(12);
	});

	test("*, as a tag, is a 304 for an answer there is, kept or not; a read its service refuses keeps its 4xx and msg", async () => {
		for (const path of ["/author/not-an-id", "/category/01JD0000000000000000000000"]) {
			const plain = await rawGet(path);
			expect(plain.status).toBeGreaterThanOrEqual(400);
			const refused = await conditional(path, "*");
			expect({ path, status: refused.status, body: json(refused) }).toEqual({ path, status: plain.status, body: json(plain) });
		}
		await forgetCachedAnswers(catalogue);
		expect((await conditional("/game", "*")).status).toBe(304);
		expect((await conditional("/game", "*")).status).toBe(304);
	});

	test("a 304 says nothing of an encoding, whether the answer is cached or not, by its tag or by *", async () => {
		for (const path of ["/game", "/openapi.json"]) {
			const tag = (await rawGet(path, { "Accept-Encoding": "br" })).headers.etag!;
			for (const held of [tag, "*"]) {
				const { status, headers } = await rawGet(path, { "Accept-Encoding": "br", "If-None-Match": held });
				expect({ path, held, status, encoding: headers["content-encoding"] }).toEqual({
					path,
					held,
					status: 304,
					encoding: undefined,
				});
			}
		}
	});

	test("Cache-Control: no-cache gets the whole answer whatever the tag", async () => {
		const tag = await tagOf("/game");
		const answer = await rawGet("/game", { "If-None-Match": tag, "Cache-Control": "no-cache" });
		expect(answer.status).toBe(200);
		expect(json(answer)).toHaveLength(12);
	});

	test("a 304 for a cached read runs no service, even once the answer itself is gone: its tag comes from the cache's key", async () => {
		for (const path of GETS().slice(0, 7)) {
			await forgetCachedAnswers(catalogue);
			let tag = "";
			// Read afresh, the answer runs its service (the count sees it)...
			expect((await serviceRuns(async () => (tag = await tagOf(path)))).length).toBeGreaterThan(0);
			await forgetCachedAnswers(catalogue);
			// ...and the client's tag, still current, is answered without it.
			expect({ path, runs: await serviceRuns(() => conditional(path, tag)) }).toEqual({ path, runs: [] });
			expect((await conditional(path, tag)).status).toBe(304);
		}
	});

	test("after each kind of write the old tag no longer matches: 200 with the new data", async () => {
		const writes: [string, () => Promise<unknown>, string, (body: any) => boolean][] = [
			[
				"an author renamed",
				() => api.put(`/author/${knizia.id}`, { name: "R. Knizia", nationality: "German" }),
				"/game",
				body => body[0].author.name === "R. Knizia",
			],
			[
				"a category renamed",
				() => api.put(`/category/${family.id}`, { name: "Family games" }),
				`/category/${family.id}`,
				body => body.name === "Family games",
			],
			[
				"a game created",
				() => api.game("Lost Cities", family, knizia),
				"/game",
				body => body.some((game: { title: string }) => game.title === "Lost Cities"),
			],
			["an author created", () => api.author("Uwe Rosenberg", "German"), "/author", body => body.length === 2],
		];
		for (const [write, send, path, changed] of writes) {
			const before = await tagOf(path);
			await send();
			const after = await conditional(path, before);
			expect({ write, status: after.status }).toEqual({ write, status: 200 });
			expect({ write, changed: changed(json(after)) }).toEqual({ write, changed: true });
			expect(after.headers.etag).not.toBe(before);
		}
	});

	test("a failed read carries no ETag", async () => {
		const { status, headers } = await rawGet("/author/noExist");
		expect(status).toBe(400);
		expect(headers.etag).toBeUndefined();
	});

	test("writes and searches run whatever their conditional headers say", async () => {
		const created = await rawRequest(`${api.url}/category`, "PUT", { "If-None-Match": "*" }, { name: "Abstract" });
		expect(created.status).toBe(200);
		expect(json(created).category.name).toBe("Abstract");
		const pageable = { pageable: { pageNumber: 0, pageSize: 5 } };
		const first = await rawRequest(`${api.url}/author`, "POST", {}, pageable);
		// Their answers carry no tag: no request could use it.
		expect([created.headers.etag, first.headers.etag]).toEqual([undefined, undefined]);
		for (const tag of [await tagOf("/author"), "*"]) {
			const again = await rawRequest(`${api.url}/author`, "POST", { "If-None-Match": tag }, pageable);
			expect({ tag, status: again.status }).toEqual({ tag, status: 200 });
			expect(json(again)).toEqual(json(first));
		}
	});
});

describe("compression", () => {
	test.each([
		["gzip", gunzipSync],
		["br", brotliDecompressSync],
	])("%s when the client accepts it and the answer is over 1 KB; decompressed, the same bytes", async (encoding, decompress) => {
		const plain = await rawGet("/game");
		expect(plain.body.length).toBeGreaterThan(1024);
		const compressed = await rawGet("/game", { "Accept-Encoding": encoding });
		expect(compressed.status).toBe(200);
		expect(compressed.headers["content-encoding"]).toBe(encoding);
		expect(compressed.headers.vary).toMatch(/Accept-Encoding/i);
		expect(compressed.body.length).toBeLessThan(plain.body.length);
		expect(decompress(compressed.body).equals(plain.body)).toBe(true);
	});

	test("a client that accepts no encoding gets the answer as before, which says it varies with Accept-Encoding", async () => {
		const { headers, body } = await rawGet("/game");
		expect(headers["content-encoding"]).toBeUndefined();
		expect(headers.vary).toMatch(/Accept-Encoding/);
		expect(headers["content-type"]).toBe("application/json; charset=utf-8");
		expect(JSON.parse(body.toString())).toHaveLength(13);
	});

	test("an answer under 1 KB is sent as it is", async () => {
		const { headers, body } = await rawGet(`/category/${family.id}`, { "Accept-Encoding": "gzip, br" });
		expect(headers["content-encoding"]).toBeUndefined();
		expect(JSON.parse(body.toString()).id).toBe(family.id);
	});

	test("a compressed answer keeps its ETag, and a 304 stays empty", async () => {
		const compressed = await rawGet("/game", { "Accept-Encoding": "gzip" });
		const tag = compressed.headers.etag!;
		expect(tag).toBe(await tagOf("/game"));
		const notModified = await rawGet("/game", { "Accept-Encoding": "gzip", "If-None-Match": tag });
		expect(notModified.status).toBe(304);
		expect(notModified.body.length).toBe(0);
	});

	test("each compressed form of an answer is made once, however many clients ask for it, and kept beside the answer", async () => {
		await api.put(`/author/${knizia.id}`, { name: "Reiner Knizia", nationality: "German" });
		// The module itself, which lib/http/compression.ts calls (an import would give a copy of its exports).
		const zlib = jest.requireActual<typeof ZlibModule>("node:zlib");
		const gzip = jest.spyOn(zlib, "gzip");
		const brotli = jest.spyOn(zlib, "brotliCompress");
		try {
			const plain = await rawGet("/game");
			const asked = (encoding: string) => Promise.all([1, 2, 3].map(() => rawGet("/game", { "Accept-Encoding": encoding })));
			const answers = [...(await asked("gzip")), ...(await asked("gzip")), ...(await asked("br")), ...(await asked("br"))];
			expect({ gzip: gzip.mock.calls.length, br: brotli.mock.calls.length }).toEqual({ gzip: 1, br: 1 });
			for (const { headers, body } of answers) {
				const decompress = headers["content-encoding"] === "br" ? brotliDecompressSync : gunzipSync;
				expect(decompress(body).equals(plain.body)).toBe(true);
			}
			// A new answer is compressed anew.
			await api.author("Klaus Teuber", "German");
			await api.put(`/author/${knizia.id}`, { name: "R. Knizia", nationality: "German" });
			await rawGet("/game", { "Accept-Encoding": "gzip" });
			expect(gzip.mock.calls.length).toBe(2);
		} finally {
			gzip.mockRestore();
			brotli.mockRestore();
		}
	});
});
