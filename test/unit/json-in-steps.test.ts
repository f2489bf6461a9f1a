import { jsonInSteps, jsonItems, joinedInSteps } from "../../lib/cache/json-in-steps";
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

test("10,000 games in steps of 1,000: the event loop turns between the steps", async () => {
	const games = Array.from({ length: 10_000 }, (_, n) => game(n));
	const { result: json, turns } = await turnsDuring(() => jsonInSteps(games, 1000));
	// 9 between the 10 slices serialized.
	expect(turns).toBeGreaterThanOrEqual(9);
	expect(json?.equals(Buffer.from(JSON.stringify(games)))).toBe(true);
});

test("parts joined into one answer: a JSON array of their items, with a turn of the event loop between the copies", async () => {
	const games = Array.from({ length: 40 }, (_, n) => game(n));
	const parts = [games.slice(0, 10), games.slice(10, 11), games.slice(11)].map(jsonItems);
	// A copy of about 1,000 bytes per turn: the 3 parts (about 4,000 bytes) take 2 turns.
	const { result: json, turns } = await turnsDuring(() => joinedInSteps(parts, 1000));
	expect(turns).toBeGreaterThanOrEqual(2);
	expect(json.toString()).toBe(JSON.stringify(games));
	expect((await joinedInSteps([])).toString()).toBe("[]");
});
