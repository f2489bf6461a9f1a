import { CatalogueError } from "../../lib/catalogue/errors";
import { gameSearch } from "../../lib/catalogue/game-search";

const visible = { draft: { $exists: false } };

describe("gameSearch", () => {
	test("without filters: every visible game, and no title test, so the store can page alone", () => {
		expect(gameSearch({}, visible)).toEqual({ query: visible });
		expect(gameSearch({ title: "", idCategory: "" }, visible)).toEqual({ query: visible });
	});

	test("idCategory selects the category exactly, in the store's query", () => {
		expect(gameSearch({ idCategory: "01CAT" }, visible)).toEqual({ query: { ...visible, category: "01CAT" } });
	});

	test("a title is a case-insensitive regular expression matched anywhere, run in the service", () => {
		const { query, title } = gameSearch({ title: "^cat.*ers$", idCategory: "01CAT" }, visible);
		expect(query).toEqual({ ...visible, category: "01CAT" });
		expect(title?.("CATAN: Seafarers")).toBe(true);
		expect(title?.("Catan")).toBe(false);
	});

	test.each([
		["(", "The 'title' filter is not a valid pattern"],
		["(a|aa|aaa){1,1000}x", "The 'title' filter is too complex a pattern"],
	])("the pattern %s is a 400 'Error fetching games' naming the title field", (pattern, message) => {
		let refused: unknown;
		try {
			gameSearch({ title: pattern }, visible);
		} catch (err) {
			refused = err;
		}
		expect(refused).toBeInstanceOf(CatalogueError);
		expect(refused).toMatchObject({
			code: 400,
			type: "INVALID_PATTERN",
			message: "Error fetching games",
			data: [{ field: "title", message, type: "pattern" }],
		});
	});
});
