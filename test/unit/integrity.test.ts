import { orphans, referringTo } from "../../lib/integrity/integrity";

const game = (id: string, category: string, author: string) => ({ id, title: `Game ${id}`, category, author });

describe("orphans", () => {
	const existing = { categories: new Set(["c1"]), authors: new Set(["a1"]) };

	test("a game whose category and author exist is not listed", () => {
		expect(orphans([game("g1", "c1", "a1")], existing)).toEqual([]);
	});

	test("lists each game with what is missing, in the order given", () => {
		const games = [game("g1", "gone", "a1"), game("g2", "c1", "a1"), game("g3", "c1", "gone"), game("g4", "gone", "gone")];
		expect(orphans(games, existing)).toEqual([
			{ ...games[0], missing: ["category"] },
			{ ...games[2], missing: ["author"] },
			{ ...games[3], missing: ["category", "author"] },
		]);
	});

	test("no games, no orphans", () => {
		expect(orphans([], { categories: new Set(), authors: new Set() })).toEqual([]);
	});
});

describe("referringTo", () => {
	test("games that refer to the author now, and games being changed to it that do not refer to it now", () => {
		expect(referringTo({ author: "a1" })).toEqual({
			now: { author: "a1" },
			changing: { "change.author": "a1", $or: [{ author: { $ne: "a1" } }] },
		});
	});

	test("every reference given must match; those not given are left out", () => {
		expect(referringTo({ category: "c1", author: "a1" })).toEqual({
			now: { category: "c1", author: "a1" },
			changing: { "change.category": "c1", "change.author": "a1", $or: [{ category: { $ne: "c1" } }, { author: { $ne: "a1" } }] },
		});
		expect(referringTo({ category: "c1", author: undefined })).toEqual({
			now: { category: "c1" },
			changing: { "change.category": "c1", $or: [{ category: { $ne: "c1" } }] },
		});
	});
});
