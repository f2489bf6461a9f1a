import { startCatalogue, withBrokenStorage, type Api, type Catalogue } from "../support/catalogue";
import { refusedPageables } from "../support/pageable";

type Author = { id: string; name: string; nationality: string };

let catalogue: Catalogue;
let api: Api;
let authors: Author[];

const names = (list: Author[]) => list.map(author => author.name);
const page = (pageable: unknown) => api.post("/author", { pageable });

beforeAll(async () => {
	catalogue = await startCatalogue();
	api = catalogue.api;
	authors = [];
	for (const [name, nationality] of [
		["Carl", "Dutch"],
		["Alba", "Spanish"],
		["Eve", "Dutch"],
		["Bea", "Spanish"],
		["Dan", "Dutch"],
		["Fay", "Irish"],
		["Alba", "Irish"],
	])
		authors.push(await api.author(name, nationality));
});
afterAll(() => catalogue.stop());

describe("POST /author (page)", () => {
	test("answers the page envelope: content, pageable.pageNumber, pageable.pageSize, totalElements", async () => {
		const { status, body } = await page({ pageNumber: 0, pageSize: 3 });
		expect(status).toBe(200);
		expect(Object.keys(body).sort()).toEqual(["content", "pageable", "totalElements"]);
		expect(body.pageable).toEqual({ pageNumber: 0, pageSize: 3 });
		expect(body.totalElements).toBe(authors.length);
		expect(body.content).toHaveLength(3);
		for (const author of body.content) expect(Object.keys(author).sort()).toEqual(["id", "name", "nationality"]);
	});

	test("without sort, orders by name ascending (equal names in creation order)", async () => {
		const { body } = await page({ pageNumber: 0, pageSize: 10 });
		expect(names(body.content)).toEqual(["Alba", "Alba", "Bea", "Carl", "Dan", "Eve", "Fay"]);
		expect(body.content[0].id).toBe(authors[1].id);
	});

	test("pageNumber is zero-based: page 1 of size 2 holds the third and fourth authors", async () => {
		const { body } = await page({ pageNumber: 1, pageSize: 2 });
		expect(names(body.content)).toEqual(["Bea", "Carl"]);
		expect(body.pageable).toEqual({ pageNumber: 1, pageSize: 2 });
	});

	test("pageNumber 0 is the first page and pageSize 0 means the default size 5", async () => {
		const { body } = await page({ pageNumber: 0, pageSize: 0 });
		expect(body.pageable).toEqual({ pageNumber: 0, pageSize: 5 });
		expect(names(body.content)).toEqual(["Alba", "Alba", "Bea", "Carl", "Dan"]);
	});

	test("numeric strings are accepted for pageNumber and pageSize", async () => {
		const { status, body } = await page({ pageNumber: "1", pageSize: "3" });
		expect(status).toBe(200);
		expect(body.pageable).toEqual({ pageNumber: 1, pageSize: 3 });
		expect(names(body.content)).toEqual(["Carl", "Dan", "Eve"]);
	});

	test("a page past the end has empty content and the true totalElements, however far past", async () => {
		for (const pageNumber of [40, 1_000_000_001, Number.MAX_SAFE_INTEGER, 1e20]) {
			const { status, body } = await page({ pageNumber, pageSize: 1000 });
			expect({ status, body }).toEqual({
				status: 200,
				body: { content: [], pageable: { pageNumber, pageSize: 1000 }, totalElements: authors.length },
			});
		}
	});

	test("pageSize 1000 is accepted", async () => {
		expect((await page({ pageNumber: 0, pageSize: 1000 })).body.content).toHaveLength(authors.length);
	});

	test.each([
		...refusedPageables,
		["sort property not an author field", { pageNumber: 0, pageSize: 5, sort: { property: "age" } }, "pageable.sort"],
		["sort list with a bad property", { pageNumber: 0, pageSize: 5, sort: [{ property: "password" }] }, "pageable.sort"],
		[
			"sort list longer than the 3 author fields",
			{ pageNumber: 0, pageSize: 5, sort: Array(4).fill({ property: "name" }) },
			"pageable.sort",
		],
	])("%s: 400 with a msg naming the field", async (_case, pageable, field) => {
		const answer = await api.post("/author", pageable === undefined ? {} : { pageable });
		expect(answer.status).toBe(400);
		expect(answer.body.msg).toContain(`'${field}`);
	});

	test.each([
		["an object", { property: "age" }, "pageable.sort[0].property"],
		["a list", [{ property: "name" }, { property: "age", direction: "desc" }], "pageable.sort[1].property"],
	])("a sort property that is no author field, sent as %s, is one error naming it and the fields", async (_case, sort, field) => {
		const answer = await page({ pageNumber: 0, pageSize: 5, sort });
		const msg = "The 'pageable.sort' property 'age' is not one of id, name, nationality.";
		expect(answer.status).toBe(400);
		expect(answer.body).toEqual({ msg, errors: [{ field, message: msg, type: "enumValue" }] });
	});

	test("sort { property, direction: 'desc' } orders descending by that property", async () => {
		const { body } = await page({ pageNumber: 0, pageSize: 10, sort: { property: "name", direction: "desc" } });
		expect(names(body.content)).toEqual(["Fay", "Eve", "Dan", "Carl", "Bea", "Alba", "Alba"]);
	});

	test.each([["DESC"], ["Desc"], ["asc"], ["down"], [undefined]])(
		"direction %s orders ascending (only lowercase 'desc' is descending)",
		async direction => {
			const { body } = await page({ pageNumber: 0, pageSize: 10, sort: { property: "name", direction } });
			expect(names(body.content)).toEqual(["Alba", "Alba", "Bea", "Carl", "Dan", "Eve", "Fay"]);
		},
	);

	test("a sort without property orders by name", async () => {
		const { body } = await page({ pageNumber: 0, pageSize: 10, sort: { direction: "desc" } });
		expect(names(body.content)).toEqual(["Fay", "Eve", "Dan", "Carl", "Bea", "Alba", "Alba"]);
	});

	test.each([
		["a null sort", null],
		["a null property", { property: null, direction: "desc" }],
	])("%s is an absent one: ordered by name", async (_case, sort) => {
		const { status, body } = await page({ pageNumber: 0, pageSize: 10, sort });
		expect(status).toBe(200);
		const ascending = ["Alba", "Alba", "Bea", "Carl", "Dan", "Eve", "Fay"];
		expect(names(body.content)).toEqual(sort === null ? ascending : [...ascending].reverse());
	});

	test("sort by id orders by creation", async () => {
		const { body } = await page({ pageNumber: 0, pageSize: 10, sort: [{ property: "id", direction: "desc" }] });
		expect(body.content.map((author: Author) => author.id)).toEqual(authors.map(author => author.id).reverse());
	});

	test("a sort list is a multi-key sort, first element first", async () => {
		const { body } = await page({
			pageNumber: 0,
			pageSize: 10,
			sort: [{ property: "nationality" }, { property: "name", direction: "desc" }],
		});
		expect(body.content.map((author: Author) => `${author.nationality}/${author.name}`)).toEqual([
			"Dutch/Eve",
			"Dutch/Dan",
			"Dutch/Carl",
			"Irish/Fay",
			"Irish/Alba",
			"Spanish/Bea",
			"Spanish/Alba",
		]);
	});

	test("GET on the same path still answers the full list", async () => {
		expect((await api.get("/author")).body).toEqual(authors);
	});

	test("a storage failure answers 400 'Error fetching authors page'", async () => {
		const answer = await withBrokenStorage(catalogue, ["authors", "count"], () => page({ pageNumber: 0, pageSize: 5 }));
		expect(answer).toMatchObject({ status: 400, body: { msg: "Error fetching authors page" } });
	});
});
