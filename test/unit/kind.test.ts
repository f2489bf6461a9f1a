import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Validator from "fastest-validator";
import { ServiceBroker, type Service } from "moleculer";
import {
	actionParams,
	defineKind,
	exampleOf,
	fieldNames,
	fileRules,
	sortOf,
	storeIndexes,
	type BodyOf,
	type RecordOf,
	type SortFieldOf,
} from "../../lib/catalogue/kind";
import { AUTHOR } from "../../lib/catalogue/kinds";
import { wholeNumber } from "../../lib/catalogue/params";
import { openApiDocument } from "../../lib/http/openapi";
import { openDatabase } from "../../lib/storage/sqlite-database";
import { SqliteAdapter } from "../../lib/storage/sqlite-adapter";
import { info, operations, params, recordSchema, schemas } from "../../services/api.docs";
import { routeAliases, signInDoc } from "../../services/api.routes";

/** Authors with one field more, added as docs/architecture.md says: a line in the definition. */
const BORN = defineKind({
	...AUTHOR,
	fields: {
		...AUTHOR.fields,
		born: { rule: wholeNumber(1000, 2100), description: "The year the author was born.", example: 1957, sortable: true },
	},
});

const validator = new Validator({ useNewCustomCheckerFunction: true });
const check = (rules: object, value: object) => validator.validate(value, { ...rules }) as true | { field: string; message: string }[];
const knizia = { name: "Reiner Knizia", nationality: "German" };

const root = mkdtempSync(path.join(tmpdir(), "catalogue-kind-"));
const broker = new ServiceBroker({ logger: false });
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a field added to a kind's definition", () => {
	test("is validated by create and update, as a whole number in range", () => {
		const { create, update } = actionParams(BORN);
		expect(check(create, { ...knizia, born: 1957 })).toBe(true);
		expect(check(create, knizia)).toEqual([expect.objectContaining({ field: "born", message: "The 'born' field is required." })]);
		expect(check(update, { id: BORN.exampleId, ...knizia, born: 1957.5 })).toEqual([expect.objectContaining({ field: "born" })]);
		expect(check(actionParams(AUTHOR).create, knizia)).toBe(true);
	});

	test("sorts pages, and is a field the services answer with", () => {
		expect(sortOf(BORN)?.fields).toEqual(["id", "name", "nationality", "born"]);
		expect(check(actionParams(BORN).page!, { pageable: { pageNumber: 0, pageSize: 5, sort: { property: "born" } } })).toBe(true);
		expect(fieldNames(BORN)).toEqual(["id", "name", "nationality", "born"]);
	});

	test("is in the types: a record, a body and a sort must carry it as a number", () => {
		const author: RecordOf<typeof BORN> = { id: BORN.exampleId, ...knizia, born: 1957 };
		const body: BodyOf<typeof BORN> = { ...knizia, born: 1957 };
		const sortedOn: SortFieldOf<typeof BORN> = "born";
		// @ts-expect-error: a record of the definition without the field is not one.
		const without: RecordOf<typeof BORN> = { id: BORN.exampleId, ...knizia };
		// @ts-expect-error: the field holds a number.
		const asText: BodyOf<typeof BORN> = { ...knizia, born: "1957" };
		expect([author.born, body.born, sortedOn, without.id, asText.name]).toEqual([1957, 1957, "born", BORN.exampleId, knizia.name]);
	});

	test("is in the OpenAPI document: the request body, the record's schema and its example", () => {
		const document = openApiDocument({
			info,
			routes: routeAliases,
			params: { ...params, "authors.create": actionParams(BORN).create },
			operations,
			schemas: { ...schemas, Author: recordSchema(BORN) },
			signIn: signInDoc({ apiToken: null, signIn: null }),
		});
		const paths = document.paths as Record<string, Record<string, { requestBody: { content: Record<string, { schema: object }> } }>>;
		const body = paths["/author"].put.requestBody.content["application/json"].schema as { properties: object; required: string[] };
		expect(body.properties).toHaveProperty("born", expect.objectContaining({ oneOf: expect.any(Array) }));
		expect(body.required).toContain("born");
		const author = (document.components as { schemas: Record<string, { properties: object; required: string[] }> }).schemas.Author;
		expect(author.properties).toHaveProperty("born", expect.objectContaining({ description: "The year the author was born." }));
		expect(author.required).toContain("born");
		expect(exampleOf(BORN)).toEqual({ id: BORN.exampleId, ...knizia, born: 1957 });
	});

	test("is checked in export files: a line without it, or with another value, is refused", () => {
		const line = { id: BORN.exampleId, ...knizia, born: 1957 };
		expect(check(fileRules(BORN), line)).toBe(true);
		expect(check(fileRules(BORN), { ...line, born: undefined })).toEqual([expect.objectContaining({ field: "born" })]);
		expect(check(fileRules(BORN), { ...line, born: 3000 })).toEqual([expect.objectContaining({ field: "born" })]);
	});

	test("is a column of the store, and a page sorted on it is read in an index's order", async () => {
		const dataDir = mkdtempSync(path.join(root, "data-"));
		const adapter = new SqliteAdapter({ dataDir, holding: "alone", collection: "authors", sparseIndexes: [], ...storeIndexes(BORN) });
		adapter.init(broker, { logger: broker.getLogger("store") } as unknown as Service);
		await adapter.connect();
		const database = openDatabase(dataDir, "alone");
		try {
			await adapter.insertMany([1957, 1931, 1990].map((born, n) => ({ _id: `a${n}`, ...knizia, born })));
			expect((await adapter.find({ sort: ["born", "_id"], limit: 3 })).map(author => author.born)).toEqual([1931, 1957, 1990]);
			const columns = (database.writer.prepare("PRAGMA table_xinfo(authors)").all() as { name: string }[]).map(({ name }) => name);
			expect(columns).toContain("born");
			const plan = database.writer.prepare(`EXPLAIN QUERY PLAN SELECT _id FROM authors ORDER BY born, _id LIMIT 5`).all() as {
				detail: string;
			}[];
			expect(plan.map(step => step.detail)).toEqual(["SCAN authors USING COVERING INDEX authors_by_born__id"]);
		} finally {
			database.release();
			await adapter.disconnect();
		}
	});
});
