import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { chosenEncoding, compress } from "../../lib/http/compression";

describe("chosenEncoding", () => {
	test.each([
		[undefined, null],
		["", null],
		["identity", null],
		["gzip", "gzip"],
		["gzip, deflate", "gzip"],
		["gzip, deflate, br", "br"],
		["br;q=0.5, gzip", "gzip"],
		["br;q=0, gzip;q=0", null],
		["deflate", null],
		["*", "br"],
	])("Accept-Encoding %p: %p", (header, expected) => {
		expect(chosenEncoding(header === undefined ? {} : { "accept-encoding": header })).toBe(expected);
	});
});

describe("compress", () => {
	const json = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ id: String(i), title: `Game ${i}` })));

	test.each([
		["br", brotliDecompressSync],
		["gzip", gunzipSync],
	] as const)("%s: smaller, and decompresses to the same text", async (encoding, decompress) => {
		const bytes = await compress(json, encoding);
		expect(bytes.length).toBeLessThan(json.length);
		expect(decompress(bytes).toString()).toBe(json);
	});
});
