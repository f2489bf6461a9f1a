import { jsonInSteps } from "../../lib/cache/json-in-steps";
import { turnsDuring } from "../support/turns";

// The JSON of a cached answer, made in steps (lib/cache/json-in-steps.ts): the same bytes as
// JSON.stringify, and the event loop turns between the steps.

const game = (n: number) => ({ id: `g${n}`, title: `Jeu n°${n} ✓ \u2028 "quoted"`, age: n % 18, author: { id: "a", name: "Åsa" } });

test.each([
	["an empty list", []],
	["a list of one step", Array.from({ length: 3 }, (_, n) => game(n))],
	["a list of exactly two steps", Array.from({ length: 6 }, (_, n) => game(n))],
	[
		"a list of two steps and a bit, with holes JSON writes as null",
		[...Array.from({ length: 7 }, (_, n) => game(n)), undefined, () => 1],
	],
	["an object", { content: [game(1)], totalElements: 1 }],
	["a string", "text"],
	["null", null],
])("%s: the bytes JSON.stringify makes", async (_what, value) => {
	expect((await jsonInSteps(value, 3))?.toString()).toBe(JSON.stringify(value));
});

test("undefined, as JSON.stringify answers it", async () => {
	expect(await jsonInSteps(undefined, 3)).toBeUndefined();
});

test("10,000 games in steps of 1,000: the event loop turns between the steps, and between the copies into the answer", async () => {
	const games = Array.from({ length: 10_000 }, (_, n) => game(n));
	const { result: json, turns } = await turnsDuring(() => jsonInSteps(games, 1000));
	// 9 between the 10 slices serialized, 2 between the 3 copies of their 21 parts (brackets and commas included) into the answer.
	expect(turns).toBeGreaterThanOrEqual(11);
	expect(json?.equals(Buffer.from(JSON.stringify(games)))).toBe(true);
});
