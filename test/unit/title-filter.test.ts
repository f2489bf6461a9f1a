import { compileTitleFilter, type TitleFilter } from "../../lib/catalogue/title-filter";

/** The compiled filter, failing the test if the pattern was refused. */
function compiled(pattern: string): TitleFilter {
	const filter = compileTitleFilter(pattern);
	if (typeof filter !== "function") throw new Error(`${pattern} was refused: ${filter.refused}`);
	return filter;
}

describe("compileTitleFilter", () => {
	test("an empty pattern matches every title", () => {
		expect(compiled("")("anything")).toBe(true);
	});

	test("matches anywhere in the title, ignoring case", () => {
		const matches = compiled("catan");
		expect(matches("The Settlers of CATAN")).toBe(true);
		expect(matches("Carcassonne")).toBe(false);
	});

	test("is a regular expression", () => {
		const matches = compiled("^ti.*s$");
		expect(matches("Tigris")).toBe(true);
		expect(matches("A Tigris")).toBe(false);
	});

	test.each(["(", "[a-", "a{2,1}", "(?<=a)b", "(a)\\1"])("%s is not a valid pattern", pattern => {
		expect(compileTitleFilter(pattern)).toEqual({ refused: "The 'title' filter is not a valid pattern" });
	});

	test.each(["a{1001}", "((a{100}){100}){100}", "(a{1000}){1000}"])("%s repeats more than RE2 allows: not a valid pattern", pattern => {
		expect(compileTitleFilter(pattern)).toEqual({ refused: "The 'title' filter is not a valid pattern" });
	});

	test.each(["(a|aa|aaa){1,1000}x", ".{1000}", "(?:a?){1000}(?:a?){1000}"])("%s compiles too large a program: too complex", pattern => {
		expect(compileTitleFilter(pattern)).toEqual({ refused: "The 'title' filter is too complex a pattern" });
	});

	test.each([
		["a class repeated up to the title length", "[a-z]{1,200}x"],
		["200 letters of any script", "\\pL{200}"],
		["200 characters of plain text", "x".repeat(200)],
		["a list of alternatives", "(catan|carcassonne|agricola|puerto rico|tigris)+"],
	])("%s is an ordinary pattern, well within the limit", (_case, pattern) => {
		expect(typeof compileTitleFilter(pattern)).toBe("function");
	});

	test("a catastrophic-backtracking pattern runs in linear time", () => {
		const matches = compiled("(a+)+$");
		const started = process.hrtime.bigint();
		expect(matches(`${"a".repeat(5000)}!`)).toBe(false);
		expect(matches("a".repeat(5000))).toBe(true);
		expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
	});
});
