import { DEFAULT_PAGE_SIZE, effectivePage, sortKeys } from "../../lib/page";

describe("effectivePage", () => {
	test("keeps a given page number and size", () => {
		expect(effectivePage({ pageNumber: 3, pageSize: 20 })).toEqual({ pageNumber: 3, pageSize: 20 });
	});

	test("a falsy page number is page 0 and a falsy size is the default size", () => {
		expect(effectivePage({ pageNumber: 0, pageSize: 0 })).toEqual({ pageNumber: 0, pageSize: DEFAULT_PAGE_SIZE });
		expect(DEFAULT_PAGE_SIZE).toBe(5);
	});
});

describe("sortKeys", () => {
	test("no sort orders by name, then by id", () => {
		expect(sortKeys(undefined)).toEqual(["name", "_id"]);
		expect(sortKeys([])).toEqual(["name", "_id"]);
	});

	test("an order without property sorts by name", () => {
		expect(sortKeys({ direction: "desc" })).toEqual(["-name", "_id"]);
	});

	test("only lowercase desc is descending", () => {
		expect(sortKeys({ property: "nationality", direction: "desc" })).toEqual(["-nationality", "_id"]);
		expect(sortKeys({ property: "nationality", direction: "DESC" })).toEqual(["nationality", "_id"]);
		expect(sortKeys({ property: "nationality", direction: "asc" })).toEqual(["nationality", "_id"]);
	});

	test("a list is a multi-key sort, first element first", () => {
		expect(sortKeys([{ property: "nationality" }, { property: "name", direction: "desc" }])).toEqual([
			"nationality",
			"-name",
			"_id",
		]);
	});

	test("id maps to the stored id and is not added twice", () => {
		expect(sortKeys({ property: "id", direction: "desc" })).toEqual(["-_id"]);
		expect(sortKeys([{ property: "name" }, { property: "id" }], "id")).toEqual(["name", "id"]);
	});

	test("a field sorted twice counts the first time only", () => {
		expect(sortKeys([{ property: "name", direction: "desc" }, { property: "name" }])).toEqual(["-name", "_id"]);
	});
});
