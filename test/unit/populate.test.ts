import { ServiceBroker, type Context } from "moleculer";
import { populatesInSteps } from "../../mixins/db.mixin";
import { turnsDuring } from "../support/turns";

// The games' populates (mixins/db.mixin.ts populatesInSteps): one call per field for every id, the records filled in 1,000 at a time
// with a turn of the event loop between.

const broker = new ServiceBroker({ logger: false });
const asked: unknown[] = [];
/** Ids no category has. */
const MISSING = ["gone", "constructor"];
broker.createService({
	name: "categories",
	actions: {
		get(ctx: Context<{ id: string[]; mapping: boolean }>) {
			asked.push(ctx.params);
			return Object.fromEntries(ctx.params.id.filter(id => !MISSING.includes(id)).map(id => [id, { id, name: `Category ${id}` }]));
		},
	},
});
beforeAll(() => broker.start());
afterAll(() => broker.stop());
beforeEach(() => (asked.length = 0));

const { category } = populatesInSteps({ category: "categories.get" });
const populate = (ids: string[], docs: Record<string, unknown>[]) => category.handler(ids, docs, {}, broker.ContextFactory.create(broker));

test("2,500 games: one call for every id, each game given its record, at most 1,000 filled between two turns of the loop", async () => {
	const docs: Record<string, unknown>[] = Array.from({ length: 2500 }, (_, n) => ({ id: `g${n}`, category: `c${n % 7}` }));
	const filled = () => docs.filter(doc => typeof doc.category === "object").length;
	const { most } = await turnsDuring(() => populate(["c0", "c1", "c2", "c3", "c4", "c5", "c6"], docs), filled);
	expect(asked).toEqual([{ id: ["c0", "c1", "c2", "c3", "c4", "c5", "c6"], mapping: true }]);
	expect(docs[2498]).toEqual({ id: "g2498", category: { id: "c6", name: "Category c6" } });
	expect(docs.every(doc => (doc.category as { id: string }).id === `c${Number(String(doc.id).slice(1)) % 7}`)).toBe(true);
	expect(most).toBeLessThanOrEqual(1000);
});

test("a record that does not exist leaves its field undefined, as moleculer-db's own populate does", async () => {
	const docs: Record<string, unknown>[] = [{ id: "g1", category: "gone" }];
	await populate(["gone"], docs);
	expect(docs).toEqual([{ id: "g1", category: undefined }]);
});

test("no ids: nothing is asked", async () => {
	await populate([], []);
	expect(asked).toEqual([]);
});

test("a list populated a slice at a time in one call: each id asked for once, by the first slice that holds it", async () => {
	const ctx = broker.ContextFactory.create(broker);
	const slices = [
		[{ category: "c1" }, { category: "c2" }],
		[{ category: "c2" }, { category: "c3" }],
		[{ category: "c1" }, { category: "c3" }],
	] as Record<string, unknown>[][];
	for (const docs of slices) await category.handler([...new Set(docs.map(doc => doc.category as string))], docs, {}, ctx);
	expect(asked).toEqual([
		{ id: ["c1", "c2"], mapping: true },
		{ id: ["c3"], mapping: true },
	]);
	expect(slices.flat().map(doc => (doc.category as { id: string }).id)).toEqual(["c1", "c2", "c2", "c3", "c1", "c3"]);
	// Another call asks again: what it lists is read afresh.
	await populate(["c1"], [{ category: "c1" }]);
	expect(asked).toHaveLength(3);
});

test("an id named as one of Object's own fields, which no record has, leaves its field undefined", async () => {
	const docs: Record<string, unknown>[] = [{ id: "g1", category: "constructor" }];
	await category.handler(["constructor"], docs, {}, broker.ContextFactory.create(broker));
	expect(docs).toEqual([{ id: "g1", category: undefined }]);
});

test("a call sent again by moleculer's Retry (a copy of its context, sharing its locals) asks for the records again", async () => {
	const failed = broker.ContextFactory.create(broker);
	await category.handler(["c1"], [{ category: "c1" }], {}, failed);
	// A write may have come between: the retry must not fill in what the failed attempt found.
	await category.handler(["c1"], [{ category: "c1" }], {}, failed.copy());
	expect(asked).toEqual([
		{ id: ["c1"], mapping: true },
		{ id: ["c1"], mapping: true },
	]);
});
