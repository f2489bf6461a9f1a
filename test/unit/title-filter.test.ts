import { compileTitleFilter } from "../../lib/title-filter";

describe("compileTitleFilter", () => {
	test("an empty pattern matches every title", () => {
		expect(compileTitleFilter("")?.("anything")).toBe(true);
	});

	test("matches anywhere in the title, ignoring case", () => {
		const matches = compileTitleFilter("catan")!;
		expect(matches("The Settlers of CATAN")).toBe(true);
		expect(matches("Carcassonne")).toBe(false);
	});

	test("is a regular expression", () => {
		const matches = compileTitleFilter("^ti.*s$")!;
		expect(matches("Tigris")).toBe(true);
		expect(matches("A Tigris")).toBe(false);
	});

	test.each(["(", "[a-", "a{2,1}", "(?<=a)b", "(a)\\1"])("%s is not a valid pattern", pattern => {
		expect(compileTitleFilter(pattern)).toBeUndefined();
	});

	test("a catastrophic-backtracking pattern runs in linear time", () => {
		const matches = compileTitleFilter("(a+)+$")!;
		const started = process.hrtime.bigint();
		expect(matches(`${"a".repeat(5000)}!`)).toBe(false);
		expect(matches("a".repeat(5000))).toBe(true);
		expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
	});
});
