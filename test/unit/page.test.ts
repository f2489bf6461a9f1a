import Validator from "fastest-validator";
import { sortOf } from "../../lib/catalogue/kind";
import { AUTHOR, GAME } from "../../lib/catalogue/kinds";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, effectivePage, listParams, pageSlice, pageableRule, sortKeys } from "../../lib/catalogue/page";

const AUTHOR_SORT = sortOf(AUTHOR)!;
const GAME_SORT = sortOf(GAME)!;

describe("effectivePage", () => {
	test("keeps a given page number and size", () => {
		expect(effectivePage({ pageNumber: 3, pageSize: 20 })).toEqual({ pageNumber: 3, pageSize: 20 });
	});

	test("a falsy page number is page 0 and a falsy size is the default size", () => {
		expect(effectivePage({ pageNumber: 0, pageSize: 0 })).toEqual({ pageNumber: 0, pageSize: DEFAULT_PAGE_SIZE });
		expect(DEFAULT_PAGE_SIZE).toBe(5);
	});
});

describe("listParams", () => {
	test("the store skips the pages before and reads one page; moleculer-db's page is one-based", () => {
		expect(listParams({ pageNumber: 0, pageSize: 5 })).toEqual({ page: 1, pageSize: 5, offset: 0, limit: 5 });
		expect(listParams({ pageNumber: 3, pageSize: 20 })).toEqual({ page: 4, pageSize: 20, offset: 60, limit: 20 });
	});
});

describe("pageSlice", () => {
	const all = ["a", "b", "c", "d", "e", "f", "g"];

	test("cuts the page out of every record in order", () => {
		expect(pageSlice(all, { pageNumber: 0, pageSize: 3 })).toEqual(["a", "b", "c"]);
		expect(pageSlice(all, { pageNumber: 1, pageSize: 3 })).toEqual(["d", "e", "f"]);
		expect(pageSlice(all, { pageNumber: 2, pageSize: 3 })).toEqual(["g"]);
	});

	test("a page past the end is empty", () => {
		expect(pageSlice(all, { pageNumber: 3, pageSize: 3 })).toEqual([]);
		expect(pageSlice(all, { pageNumber: 1_000_000_000, pageSize: 1000 })).toEqual([]);
	});
});

describe("sortKeys", () => {
	test("no sort orders by the records' default, then by id", () => {
		expect(sortKeys(undefined, AUTHOR_SORT)).toEqual(["name", "_id"]);
		expect(sortKeys([], AUTHOR_SORT)).toEqual(["name", "_id"]);
		expect(sortKeys(null, AUTHOR_SORT)).toEqual(["name", "_id"]);
		expect(sortKeys([null], AUTHOR_SORT)).toEqual(["name", "_id"]);
		expect(sortKeys({ property: null as unknown as "name", direction: "desc" }, AUTHOR_SORT)).toEqual(["-name", "_id"]);
	});

	test("games are ordered by id by default, the order of GET /game", () => {
		expect(sortKeys(undefined, GAME_SORT)).toEqual(["_id"]);
		expect(sortKeys({ direction: "desc" }, GAME_SORT)).toEqual(["-_id"]);
		expect(sortKeys([{ property: "age", direction: "desc" }, { property: "title" }], GAME_SORT)).toEqual(["-age", "title", "_id"]);
	});

	test("an order without property sorts by the default", () => {
		expect(sortKeys({ direction: "desc" }, AUTHOR_SORT)).toEqual(["-name", "_id"]);
	});

	test("only lowercase desc is descending", () => {
		expect(sortKeys({ property: "nationality", direction: "desc" }, AUTHOR_SORT)).toEqual(["-nationality", "_id"]);
		expect(sortKeys({ property: "nationality", direction: "DESC" }, AUTHOR_SORT)).toEqual(["nationality", "_id"]);
		expect(sortKeys({ property: "nationality", direction: "asc" }, AUTHOR_SORT)).toEqual(["nationality", "_id"]);
	});

	test("a list is a multi-key sort, first element first", () => {
		expect(sortKeys([{ property: "nationality" }, { property: "name", direction: "desc" }], AUTHOR_SORT)).toEqual([
			"nationality",
			"-name",
			"_id",
		]);
	});

	test("id maps to the stored id and is not added twice", () => {
		expect(sortKeys({ property: "id", direction: "desc" }, AUTHOR_SORT)).toEqual(["-_id"]);
		expect(sortKeys([{ property: "name" }, { property: "id" }], AUTHOR_SORT, "id")).toEqual(["name", "id"]);
	});

	test("a field sorted twice counts the first time only", () => {
		expect(sortKeys([{ property: "name", direction: "desc" }, { property: "name" }], AUTHOR_SORT)).toEqual(["-name", "_id"]);
	});
});

describe("pageableRule", () => {
	/** The errors as "field: type". */
	const check = (fields: readonly string[], pageable: unknown) => {
		const result = new Validator({ useNewCustomCheckerFunction: true }).validate({ pageable }, { pageable: pageableRule(fields) });
		return result === true ? [] : (result as { field: string; type: string }[]).map(({ field, type }) => `${field}: ${type}`);
	};

	test("the sort properties are the record's own fields", () => {
		expect(check(GAME_SORT.fields, { pageNumber: 0, pageSize: 5, sort: { property: "title" } })).toEqual([]);
		expect(check(GAME_SORT.fields, { pageNumber: 0, pageSize: 5, sort: [{ property: "age" }, { property: "id" }] })).toEqual([]);
		expect(check(GAME_SORT.fields, { pageNumber: 0, pageSize: 5, sort: { property: "name" } })).toEqual([
			"pageable.sort[0].property: enumValue",
		]);
		expect(check(AUTHOR_SORT.fields, { pageNumber: 0, pageSize: 5, sort: { property: "age" } })).toEqual([
			"pageable.sort[0].property: enumValue",
		]);
	});

	test("one order is taken as a list of one, so a wrong one is one error", () => {
		const params = { pageable: { pageNumber: 0, pageSize: 5, sort: { property: "name", direction: "desc" } } };
		expect(new Validator({ useNewCustomCheckerFunction: true }).validate(params, { pageable: pageableRule(AUTHOR_SORT.fields) })).toBe(
			true,
		);
		expect(params.pageable.sort).toEqual([{ property: "name", direction: "desc" }]);
		expect(check(AUTHOR_SORT.fields, { pageNumber: 0, pageSize: 5, sort: "name" })).toEqual(["pageable.sort[0]: object"]);
	});

	test("a sort list has at most one order per field", () => {
		expect(check(GAME_SORT.fields, { pageNumber: 0, pageSize: 5, sort: Array(3).fill({ property: "title" }) })).toEqual([]);
		expect(check(GAME_SORT.fields, { pageNumber: 0, pageSize: 5, sort: Array(4).fill({ property: "title" }) })).toContain(
			"pageable.sort: arrayMax",
		);
	});

	test("both numbers are required, whole and in range", () => {
		expect(check(GAME_SORT.fields, { pageNumber: 0, pageSize: MAX_PAGE_SIZE })).toEqual([]);
		expect(check(GAME_SORT.fields, { pageSize: 5 })).toEqual(["pageable.pageNumber: required"]);
		expect(check(GAME_SORT.fields, { pageNumber: -1, pageSize: MAX_PAGE_SIZE + 1 })).toEqual([
			"pageable.pageNumber: numberMin",
			"pageable.pageSize: numberMax",
		]);
	});
});
