import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceBroker, type Service } from "moleculer";
import { createAdapter } from "../../lib/storage/adapter";

// A record that carries a claim or a draft mark is not written to its NeDB file: the file is this
// process's alone, and a crash ends every claim it held (docs/storage.md, "What a crash can and cannot lose").

let dataDir: string;
let broker: ServiceBroker;
beforeEach(async () => {
	dataDir = await mkdtemp(path.join(tmpdir(), "catalogue-claims-"));
	broker = new ServiceBroker({ logger: false });
});
afterEach(() => rm(dataDir, { recursive: true, force: true }));

type Adapter = ReturnType<typeof createAdapter> & {
	insert(doc: object): Promise<unknown>;
	updateMany(query: object, update: object): Promise<number>;
	removeMany(query: object): Promise<number>;
	findById(id: string): Promise<unknown>;
	disconnect(): Promise<void>;
};

/** The games' store in `dataDir`, loaded from its file, as the games service makes it. */
async function games(): Promise<Adapter> {
	const adapter = createAdapter("games", { storage: "file", dataDir, mongoUri: null }, ["draft", "change"]);
	adapter.init(broker, { broker, logger: broker.getLogger("games") } as unknown as Service);
	await adapter.connect();
	return adapter;
}

const lines = async () =>
	(await readFile(path.join(dataDir, "games.db"), "utf8"))
		.split("\n")
		.filter(Boolean)
		.map(line => JSON.parse(line));

const ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
const game = { _id: ID, title: "Tigris", age: 12, category: "01ARZ3NDEKTSV4RRFFQ69G5FAW", author: "01ARZ3NDEKTSV4RRFFQ69G5FAX" };
const claim = { token: "t", at: 1, category: "c", author: "a" };

test("a create (a draft, then published) and an update (claimed, then written) append one line each", async () => {
	const store = await games();
	await store.insert({ ...game, draft: Date.now() });
	expect(await lines()).toEqual([]);
	await store.updateMany({ _id: ID, draft: { $exists: true } }, { $unset: { draft: true } });
	expect(await lines()).toEqual([game]);
	await store.updateMany({ _id: ID }, { $set: { change: claim } });
	expect(await lines()).toEqual([game]);
	await store.updateMany({ _id: ID, "change.token": "t" }, { $set: { title: "Tigris & Euphrates" }, $unset: { change: true } });
	expect(await lines()).toEqual([game, { ...game, title: "Tigris & Euphrates" }]);
	await store.disconnect();
});

test("after a crash, a claimed record comes back as it was before the claim, and a draft not at all", async () => {
	const store = await games();
	await store.insert(game);
	await store.updateMany({ _id: ID }, { $set: { change: claim } });
	await store.insert({ ...game, _id: "01ARZ3NDEKTSV4RRFFQ69G5FAY", draft: Date.now() });
	// No disconnect: the process is gone. The next one loads the file.
	const restarted = await games();
	expect(await restarted.findById(ID)).toEqual(game);
	expect(await restarted.findById("01ARZ3NDEKTSV4RRFFQ69G5FAY")).toBeNull();
	await restarted.disconnect();
});

test("a released claim appends the record as it was, and a dropped draft only its removal", async () => {
	const store = await games();
	await store.insert({ ...game, _id: "01ARZ3NDEKTSV4RRFFQ69G5FAY", draft: Date.now() });
	await store.removeMany({ _id: "01ARZ3NDEKTSV4RRFFQ69G5FAY", draft: { $exists: true } });
	expect(await lines()).toEqual([{ $$deleted: true, _id: "01ARZ3NDEKTSV4RRFFQ69G5FAY" }]);
	await store.insert(game);
	await store.updateMany({ _id: ID }, { $set: { change: claim } });
	await store.updateMany({ _id: ID, "change.token": "t" }, { $unset: { change: true } });
	expect((await lines()).slice(1)).toEqual([game, game]);
	await store.disconnect();
});
