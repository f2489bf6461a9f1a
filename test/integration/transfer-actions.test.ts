import { newId } from "../../lib/catalogue/ids";
import { texts } from "../../lib/catalogue/errors";
import { reasonOf } from "../../lib/transfer/import";
import { config } from "../../lib/config/config";
import type { Store } from "../../mixins/db.mixin";
import { ServiceBroker } from "moleculer";
import { callsByAction } from "../../middlewares/calls-by-action.middleware";
import { clusterMember, localService, startCatalogue, type Catalogue } from "../support/catalogue";

/**
 * The internal actions of export and import (mixins/transfer.mixin.ts), each service on its own broker over NATS, called from a
 * node of their own logged in as the REPL, the kind NATS lets call any action (the gateway's may not call these).
 */
let catalogue: Catalogue;
let caller: ServiceBroker;
beforeAll(async () => {
	catalogue = await startCatalogue({ topology: "nats" });
	const member = clusterMember(catalogue.nats!, "repl", `repl.test-${process.pid}`);
	caller = new ServiceBroker({ ...member, namespace: catalogue.namespace, middlewares: [callsByAction], logger: false });
	await caller.start();
	await caller.waitForServices(["authors", "categories", "games"], 10_000);
}, 60_000);
afterAll(async () => {
	await caller?.stop();
	await catalogue?.stop();
});

const call = <T = unknown>(action: string, params: object) => caller.call<T, object>(action, params);

describe("importRecords: records stored with their ids through the services' rules", () => {
	test("absent: created with its id; the same again: unchanged; other fields: updated through update", async () => {
		const id = newId();
		expect(await call("categories.importRecords", { records: [{ id, name: " Eurogames " }] })).toEqual({
			created: 1,
			unchanged: 0,
			updated: 0,
		});
		expect(await call("categories.importRecords", { records: [{ id, name: "Eurogames" }] })).toEqual({
			created: 0,
			unchanged: 1,
			updated: 0,
		});
		expect(await call("categories.importRecords", { records: [{ id, name: "Party" }] })).toEqual({
			created: 0,
			unchanged: 0,
			updated: 1,
		});
		expect((await catalogue.api.get(`/category`)).body).toContainEqual({ id, name: "Party" });
	});

	test("games: listed with their category and author once imported; a batch with a reference missing is refused whole and leaves no game, not even a draft", async () => {
		const [category, author] = [newId(), newId()];
		await call("categories.importRecords", { records: [{ id: category, name: "Abstract" }] });
		await call("authors.importRecords", { records: [{ id: author, name: "Kris Burm", nationality: "Belgian" }] });
		const game = (id: string, c = category) => ({ id, title: `Gipf ${id}`, age: 9, category: c, author });
		const [good, bad] = [newId(), newId()];

		await expect(call("games.importRecords", { records: [game(good), game(bad, newId())] })).rejects.toMatchObject({
			message: texts.categoryNotFound,
			code: 400,
		});
		expect(await call("games.exportPage", { ids: [good, bad] })).toEqual([]);
		expect(await call("games.countBy", { category })).toBe(0);

		expect(await call("games.importRecords", { records: [game(good)] })).toEqual({ created: 1, unchanged: 0, updated: 0 });
		const listed = (await catalogue.api.get("/game")).body as { id: string }[];
		expect(listed.find(each => each.id === good)).toEqual({
			id: good,
			title: `Gipf ${good}`,
			age: 9,
			category: { id: category, name: "Abstract" },
			author: { id: author, name: "Kris Burm", nationality: "Belgian" },
		});
		// The category it refers to cannot be deleted now.
		expect((await catalogue.api.delete(`/category/${category}`)).body).toEqual({ msg: texts.categoryHasGames });
	});

	test.each([
		[
			"an id named twice",
			(id: string) => [
				{ id, name: "A" },
				{ id, name: "B" },
			],
			texts.importedTwice,
		],
		["an id the catalogue does not issue", () => [{ id: "42", name: "A" }], "'id' is not an id the catalogue issues"],
		[
			"a name too long",
			(id: string) => [{ id, name: "x".repeat(101) }],
			"The 'records[0].name' field length must be less than or equal to 100 characters long.",
		],
	])("refused, storing nothing: %s", async (_name, records, message) => {
		const id = newId();
		const refused = await call("categories.importRecords", { records: records(id) }).then(
			() => "stored",
			(err: unknown) => reasonOf(err),
		);
		expect(refused).toContain(message);
		expect(await call("categories.exportPage", { ids: [id] })).toEqual([]);
	});

	test("internal: not on HTTP", async () => {
		for (const path of ["/categories/importRecords", "/api/categories/importRecords", "/categories/exportPage"])
			expect((await catalogue.api.post(path, { records: [] })).status).toBe(404);
	});
});

describe("exportPage: records in id order, a page at a time", () => {
	test("after an id, up to a limit; or those of some ids that exist", async () => {
		const ids = [newId(), newId(), newId()];
		await call("authors.importRecords", { records: ids.map(id => ({ id, name: `Author ${id}`, nationality: "Dutch" })) });
		const page = await call<{ id: string }[]>("authors.exportPage", { after: ids[0], limit: 1 });
		expect(page).toEqual([{ id: ids[1], name: `Author ${ids[1]}`, nationality: "Dutch" }]);
		expect((await call<{ id: string }[]>("authors.exportPage", { ids: [ids[2], newId()] })).map(author => author.id)).toEqual([ids[2]]);
	});

	test("referable takes a batch of ids, and refuses it when one does not exist", async () => {
		const id = newId();
		await call("categories.importRecords", { records: [{ id, name: "Family" }] });
		expect(await call("categories.referable", { id: [id] })).toBe(true);
		await expect(call("categories.referable", { id: [id, newId()] })).rejects.toMatchObject({ message: texts.categoryNotFound });
	});
});

describe("two imports of the same records at once", () => {
	test("each record is stored once: the batch that loses the race is refused as stored meanwhile, and sent again it finds them present", async () => {
		const records = Array.from({ length: 50 }, (_, i) => ({ id: newId(), name: `Twice ${i}` }));
		const outcomes = await Promise.allSettled([
			call("categories.importRecords", { records }),
			call("categories.importRecords", { records }),
		]);
		for (const outcome of outcomes)
			if (outcome.status === "rejected") expect(reasonOf(outcome.reason)).toBe(texts.importedMeanwhile);
			else
				expect([
					{ created: 50, unchanged: 0, updated: 0 },
					{ created: 0, unchanged: 50, updated: 0 },
				]).toContainEqual(outcome.value);
		expect(outcomes.some(outcome => outcome.status === "fulfilled")).toBe(true);
		expect(await call("categories.importRecords", { records })).toEqual({ created: 0, unchanged: 50, updated: 0 });
		const listed = (await catalogue.api.get("/category")).body as { id: string }[];
		expect(listed.filter(category => records.some(record => record.id === category.id))).toHaveLength(50);
	});
});

describe("imported games' drafts", () => {
	const lease = config.claimLeaseMs;
	async function categoryAndAuthor() {
		const [category, author] = [newId(), newId()];
		await call("categories.importRecords", { records: [{ id: category, name: "Drafts" }] });
		await call("authors.importRecords", { records: [{ id: author, name: "Draft author", nationality: "Danish" }] });
		return { category, author };
	}

	test("a draft an import left when its node was killed (older than the lease) is replaced; a newer one is another import's in flight: refused as stored meanwhile", async () => {
		const { category, author } = await categoryAndAuthor();
		const games = localService<Store>(catalogue, "games").adapter;
		const [left, inFlight] = [newId(), newId()];
		const draft = (id: string, at: number) => ({ _id: id, title: "Left", age: 1, category, author, draft: at, importing: "another" });
		await games.insert(draft(left, Date.now() - lease - 1000));
		await games.insert(draft(inFlight, Date.now()));
		const game = (id: string) => ({ id, title: `Imported ${id}`, age: 3, category, author });

		expect(await call("games.importRecords", { records: [game(left)] })).toEqual({ created: 1, unchanged: 0, updated: 0 });
		expect(await call("games.exportPage", { ids: [left] })).toEqual([game(left)]);
		const refused = await call("games.importRecords", { records: [game(inFlight)] }).then(
			() => "stored",
			(err: unknown) => reasonOf(err),
		);
		expect(refused).toBe(texts.importedMeanwhile);
		// The other import's draft is untouched.
		expect(await games.findOne({ _id: inFlight })).toMatchObject({ title: "Left", importing: "another" });
	});

	test("a batch whose drafts another import took over past the lease is published whole or not at all: none of it, no change", async () => {
		const { category, author } = await categoryAndAuthor();
		const games = localService<Store & { checkReferences(...args: unknown[]): Promise<void> }>(catalogue, "games");
		const { last } = await call<{ last: number }>("games.changes", { after: 0, limit: 1 });
		const records = [newId(), newId(), newId()].map(id => ({ id, title: `Whole ${id}`, age: 4, category, author }));
		// While this batch's references are checked (as long as a stalled node takes), another import removes one of its drafts as
		// past the lease and stores its own.
		const check = games.checkReferences;
		games.checkReferences = async (...args: unknown[]) => {
			await games.adapter.removeMany({ _id: records[1].id });
			await games.adapter.insert({ ...records[1], _id: records[1].id, id: undefined, draft: Date.now(), importing: "another" });
			return check.apply(games, args);
		};
		try {
			await expect(call("games.importRecords", { records })).rejects.toThrow(/outlived their lease/);
		} finally {
			games.checkReferences = check;
		}
		expect(await call("games.exportPage", { ids: records.map(record => record.id) })).toEqual([]);
		expect((await call<{ changes: unknown[] }>("games.changes", { after: last })).changes).toEqual([]);
		// The other import's draft is untouched; this batch's own are gone.
		expect(await games.adapter.find({ query: { _id: { $in: records.map(record => record.id) } } })).toEqual([
			expect.objectContaining({ _id: records[1].id, importing: "another" }),
		]);
	});

	test("two imports of the same games at once: each game stored once, published, with its references", async () => {
		const { category, author } = await categoryAndAuthor();
		const records = Array.from({ length: 40 }, (_, i) => ({ id: newId(), title: `Race ${i}`, age: 5, category, author }));
		const outcomes = await Promise.allSettled([call("games.importRecords", { records }), call("games.importRecords", { records })]);
		for (const outcome of outcomes) if (outcome.status === "rejected") expect(reasonOf(outcome.reason)).toBe(texts.importedMeanwhile);
		expect(await call("games.importRecords", { records })).toEqual({ created: 0, unchanged: 40, updated: 0 });
		expect(await call("games.exportPage", { ids: records.map(record => record.id) })).toEqual(records);
		expect(await call("games.countBy", { category })).toBe(40);
	});
});

test("games.countBy counts the games of a reference, and refuses a call that names none rather than count every game", async () => {
	const category = newId();
	expect(await call("games.countBy", { category })).toBe(0);
	for (const params of [{}, { other: category }])
		await expect(call("games.countBy", params)).rejects.toMatchObject({ name: "ValidationError", code: 422 });
});
