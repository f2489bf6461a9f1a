import path from "node:path";
import get from "lodash/get";
import isEqual from "lodash/isEqual";
import set from "lodash/set";
import unset from "lodash/unset";
import { Errors, ServiceBroker, type Service } from "moleculer";
import MongoDbAdapter from "moleculer-db-adapter-mongo";
import { config } from "../../lib/config/config";
import { texts } from "../../lib/catalogue/errors";
import { newId } from "../../lib/catalogue/ids";
import { ID_SHAPE } from "../../lib/catalogue/params";
import brokerOptions from "../../moleculer.config";
import { createAdapter, recordedWrite } from "../../lib/storage/adapter";
import { describeStorage } from "../../lib/storage/location";
import { SqliteAdapter } from "../../lib/storage/sqlite-adapter";
import {
	feedlessServer,
	mongoChangesAfter,
	mongoMarkPublished,
	mongoPruneChanges,
	mongoUnpublished,
	recordedMongoWrite,
	type MongoStore,
} from "../../lib/storage/mongo-feed";
import ApiService from "../../services/api.service";
import AuthorsService from "../../services/authors.service";
import CategoriesService from "../../services/categories.service";
import GamesService from "../../services/games.service";
import { gatewayApi, unknownIds, type Api } from "../support/catalogue";

// The services read their storage from the configuration when they are created: this file's
// configuration is the one a node with MONGO_URI set reads at boot. Hoisted above the imports.
jest.mock("../../lib/config/config", () => {
	const actual = jest.requireActual("../../lib/config/config");
	return { ...actual, config: actual.readConfig({ ...process.env, MONGO_URI: "mongodb://mongo.invalid:27017/catalogue" }) };
});

type Doc = Record<string, unknown>;
type SortSpec = Record<string, 1 | -1>;
/** The options of a call the feed makes in a transaction (`session`) or as an upsert. */
type Options = { session?: unknown; upsert?: boolean; returnDocument?: "before" | "after" };

/** One call the adapter made on a collection, with the cursor options of a `find`. */
interface Call {
	method: string;
	query?: Doc;
	sort?: [string, 1 | -1][];
	skip?: number;
	limit?: number;
	update?: Doc;
	/** Whether the call ran in a transaction's session. */
	session?: boolean;
	/** The read concern of a `find` outside a transaction, when one was asked. */
	readConcern?: string;
}

/** What the adapter keeps of its service and the id conversion, missing from its typings. */
interface MongoAdapter {
	uri: string;
	opts: Record<string, unknown>;
	service: Service & { schema: { collection: string } };
	collection: unknown;
	db: unknown;
	client: unknown;
	connect(): Promise<void>;
	stringToObjectID(id: string): unknown;
	entityToObject(entity: Doc): Doc;
}

const isOperator = (condition: unknown): condition is Doc =>
	condition !== null && typeof condition === "object" && Object.keys(condition).some(key => key.startsWith("$"));

/**
 * Equality, `$in`, `$regex`, `$exists`, `$lt`, `$gt`, `$lte`, `$gte`, `$ne` and `$or`, on dotted paths: the only conditions the
 * catalogue sends. Anything else throws.
 */
function matches(doc: Doc, query: Doc = {}): boolean {
	return Object.entries(query).every(([field, condition]) => {
		if (field === "$or") return (condition as Doc[]).some(branch => matches(doc, branch));
		const value = get(doc, field);
		if (!isOperator(condition)) return isEqual(condition, value);
		return Object.entries(condition).every(([operator, argument]) => {
			if (operator === "$in") return (argument as unknown[]).some(item => isEqual(item, value));
			if (operator === "$regex") return typeof value === "string" && (argument as RegExp).test(value);
			if (operator === "$exists") return (value !== undefined) === argument;
			if (operator === "$lt") return value !== undefined && (value as number) < (argument as number);
			if (operator === "$gt") return value !== undefined && (value as number) > (argument as number);
			if (operator === "$lte") return value !== undefined && (value as number) <= (argument as number);
			if (operator === "$gte") return value !== undefined && (value as number) >= (argument as number);
			if (operator === "$ne") return !isEqual(value, argument);
			throw new Error(`the recording collection does not understand ${operator}`);
		});
	});
}

/** `$set` and `$unset` on dotted paths; anything else throws. */
function apply(doc: Doc, update: Doc): void {
	for (const [operator, fields] of Object.entries(update)) {
		if (!["$set", "$unset", "$inc", "$max"].includes(operator)) throw new Error(`the recording collection does not apply ${operator}`);
		for (const [field, value] of Object.entries(fields as Doc)) {
			const now = get(doc, field) as number | undefined;
			if (operator === "$set") set(doc, field, value);
			else if (operator === "$inc") set(doc, field, (now ?? 0) + (value as number));
			else if (operator === "$max") set(doc, field, Math.max(now ?? -Infinity, value as number));
			else if (operator === "$unset") unset(doc, field);
		}
	}
}

function bySpec(spec: SortSpec) {
	return (a: Doc, b: Doc) => {
		for (const [field, direction] of Object.entries(spec)) {
			const [x, y] = [a[field] as string | number, b[field] as string | number];
			if (x !== y) return (x < y ? -1 : 1) * direction;
		}
		return 0;
	};
}

/**
 * A recording test double of the few mongodb Collection methods moleculer-db-adapter-mongo calls:
 * it records each query and its cursor options, and keeps documents in an array so the actions run
 * end to end. It is not a MongoDB emulator: it answers the conditions of `matches` and the updates
 * of `apply`, and nothing else.
 */
class RecordingCollection {
	constructor(readonly collectionName: string) {}
	readonly docs: Doc[] = [];
	readonly indexes: Doc[] = [];
	calls: Call[] = [];

	/** The calls made since the last time they were taken. */
	take(method?: string): Call[] {
		const calls = this.calls.filter(call => !method || call.method === method);
		this.calls = [];
		return calls;
	}

	/** The read concern of the view `at` made, for its reads. */
	readonly readConcern?: string;

	/** A view of this collection whose reads record `readConcern`, as `db.collection(name, { readConcern })` gives. */
	at(readConcern: string | undefined): RecordingCollection {
		return readConcern ? (Object.assign(Object.create(this), { readConcern }) as RecordingCollection) : this;
	}

	find(query?: Doc, options?: Options) {
		const call: Call = {
			method: "find",
			query,
			...(options?.session ? { session: true } : {}),
			...(this.readConcern ? { readConcern: this.readConcern } : {}),
		};
		this.calls.push(call);
		const cursor = {
			sort: (spec: SortSpec) => ((call.sort = Object.entries(spec)), cursor),
			skip: (count: number) => ((call.skip = count), cursor),
			limit: (count: number) => ((call.limit = count), cursor),
			toArray: async () => {
				const found = this.docs.filter(doc => matches(doc, query)).sort(bySpec(Object.fromEntries(call.sort ?? [])));
				return structuredClone(found.slice(call.skip ?? 0, call.limit ? (call.skip ?? 0) + call.limit : undefined));
			},
		};
		return cursor;
	}

	async countDocuments(query?: Doc) {
		this.calls.push({ method: "countDocuments", query });
		return this.docs.filter(doc => matches(doc, query)).length;
	}

	async findOne(query: Doc) {
		this.calls.push({ method: "findOne", query });
		return structuredClone(this.docs.find(doc => matches(doc, query)) ?? null);
	}

	async insertOne(doc: Doc) {
		this.calls.push({ method: "insertOne" });
		this.docs.push(structuredClone(doc));
		return { insertedCount: 1, ops: [doc] };
	}

	async insertMany(docs: Doc[], options?: Options) {
		this.calls.push({ method: "insertMany", ...(options?.session ? { session: true } : {}) });
		this.docs.push(...structuredClone(docs));
		return { insertedCount: docs.length, ops: docs };
	}

	async findOneAndUpdate(query: Doc, update: Doc, options?: Options) {
		this.calls.push({ method: "findOneAndUpdate", query, update, ...(options?.session ? { session: true } : {}) });
		// The driver answers the document as it was unless asked for it after.
		const before = structuredClone(this.docs.find(candidate => matches(candidate, query)) ?? null);
		const doc = this.upserted(query, update, options);
		return { value: options?.returnDocument === "after" ? structuredClone(doc ?? null) : before };
	}

	async updateOne(query: Doc, update: Doc, options?: Options) {
		this.calls.push({ method: "updateOne", query, update, ...(options?.session ? { session: true } : {}) });
		this.upserted(query, update, options);
	}

	/** The document of `query`, updated, or with `upsert` a new one made from the query's equalities and `$setOnInsert`. */
	private upserted(query: Doc, { $setOnInsert, ...update }: Doc, options?: Options): Doc | undefined {
		let doc = this.docs.find(candidate => matches(candidate, query));
		if (!doc && options?.upsert) {
			doc = { ...query, ...($setOnInsert as Doc) };
			this.docs.push(doc);
		}
		if (doc) apply(doc, update);
		return doc;
	}

	async updateMany(query: Doc, update: Doc, options?: Options) {
		this.calls.push({ method: "updateMany", query, update, ...(options?.session ? { session: true } : {}) });
		const docs = this.docs.filter(doc => matches(doc, query));
		let modifiedCount = 0;
		for (const doc of docs) {
			const before = JSON.stringify(doc);
			apply(doc, update);
			if (JSON.stringify(doc) !== before) modifiedCount++;
		}
		// MongoDB's own counts: a document written with the values it has is matched, not modified.
		return { matchedCount: docs.length, modifiedCount };
	}

	async deleteMany(query: Doc, options?: Options) {
		this.calls.push({ method: "deleteMany", query, ...(options?.session ? { session: true } : {}) });
		const kept = this.docs.filter(doc => !matches(doc, query));
		const deletedCount = this.docs.length - kept.length;
		this.docs.splice(0, this.docs.length, ...kept);
		return { deletedCount };
	}

	async findOneAndDelete(query: Doc) {
		this.calls.push({ method: "findOneAndDelete", query });
		const index = this.docs.findIndex(doc => matches(doc, query));
		return { value: index < 0 ? null : this.docs.splice(index, 1)[0] };
	}

	async createIndex(spec: Doc, options: { sparse?: boolean } = {}) {
		this.indexes.push(options.sparse ? { ...spec, sparse: true } : spec);
		return Object.keys(spec).join("_");
	}
}

/** A session whose transaction runs once and counts; no isolation, which MongoDB gives. */
class RecordingSession {
	static transactions = 0;
	async withTransaction(run: () => Promise<void>) {
		RecordingSession.transactions++;
		await run();
	}
	endSession() {}
}

const MONGO_URI = config.mongoUri!;

describe("createAdapter and describeStorage", () => {
	const dataDir = path.resolve("/tmp/catalogue-data");
	const fields = { indexes: [], sparseIndexes: [], orders: [], leading: [] };
	const storage = { mongoUri: null, storage: "file", dataDir, redisUrl: null, transporter: null, cacheMaxBytes: 1 } as const;

	test("a MongoDB URI gives a MongoDbAdapter for that URI", () => {
		const adapter = createAdapter("authors", fields, { ...storage, mongoUri: MONGO_URI });
		expect(adapter).toBeInstanceOf(MongoDbAdapter);
		expect((adapter as unknown as MongoAdapter).uri).toBe(MONGO_URI);
	});

	test("without a URI, SQLite in DATA_DIR, held alone unless the cache is shared, or in memory", () => {
		const file = createAdapter("authors", fields, storage);
		expect(file).toBeInstanceOf(SqliteAdapter);
		expect(file).toMatchObject({ options: { dataDir, collection: "authors", holding: "alone" } });
		for (const shared of [{ redisUrl: "redis://r" }, { transporter: "nats://n" }, { cacheMaxBytes: 0 }])
			expect(createAdapter("authors", fields, { ...storage, ...shared })).toMatchObject({ options: { holding: "shared" } });
		expect(createAdapter("authors", fields, { ...storage, storage: "memory" })).toMatchObject({ options: { dataDir: null } });
	});

	test("the storage description never shows a MongoDB password", () => {
		const described = describeStorage({ mongoUri: "mongodb://user:secret@host/db", storage: "file", dataDir });
		expect(described).not.toContain("secret");
		expect(described).toBe("MongoDB at mongodb://user:***@host/db");
		expect(describeStorage({ mongoUri: null, storage: "file", dataDir })).toBe(`SQLite database ${dataDir}/catalogue.sqlite`);
		expect(describeStorage({ mongoUri: null, storage: "memory", dataDir })).toBe("memory");
	});
});

describe("id conversion of the real MongoDB adapter", () => {
	const adapter = createAdapter(
		"authors",
		{ indexes: [], sparseIndexes: [], orders: [], leading: [] },
		config,
	) as unknown as MongoAdapter;

	test("the catalogue's ids stay strings, so stored _ids are strings and come back unchanged", () => {
		for (const id of Array.from({ length: 50 }, () => newId())) {
			expect(adapter.stringToObjectID(id)).toBe(id);
			expect(adapter.entityToObject({ _id: id, name: "Uwe" })).toEqual({ _id: id, name: "Uwe" });
		}
	});

	const clientIds: [string, string][] = [
		...unknownIds,
		["24 hexadecimal digits", "5f0c9d2e8b3a4c1d2e3f4a5b"],
		["12 characters", "abcdefghijkl"],
		["a blank", " "],
		["odd unicode", "\u{1F3B2}\u0000\u202E\uFFFF"],
		["12 UTF-16 units of emoji", "\u{1F3B2}".repeat(6)],
	];

	test.each(clientIds)("a client id of %s is converted without throwing", (_shape, id) => {
		const converted = adapter.stringToObjectID(id);
		// Only 24 hexadecimal digits become an ObjectID (which no stored string _id equals).
		if (/^[0-9a-f]{24}$/.test(id)) expect((converted as { toHexString(): string }).toHexString()).toBe(id);
		else expect(converted).toBe(id);
	});
});

describe("queries the services send to MongoDB (recording collections, no server)", () => {
	const collections = new Map<string, RecordingCollection>();
	const collection = (name: string) => collections.get(name)!;
	const collectionNamed = (name: string) => {
		if (!collections.has(name)) collections.set(name, new RecordingCollection(name));
		return collection(name);
	};
	let broker: ServiceBroker;
	let api: Api;

	beforeAll(async () => {
		broker = new ServiceBroker({ ...brokerOptions, nodeID: `mongo-${process.pid}`, logger: false, middlewares: [] });
		const services = [AuthorsService, CategoriesService, GamesService].map(schema => broker.createService(schema));
		for (const service of services) {
			const adapter = (service as unknown as { adapter: MongoAdapter }).adapter;
			// In place of MongoClient: the collection the schema names, as `db.collection(name)` would.
			adapter.connect = async () => {
				adapter.collection = collectionNamed(adapter.service.schema.collection);
				// The feed's collections, and a replica set's answer: MongoDB's transactions are there.
				adapter.db = {
					collection: (name: string, options?: { readConcern?: { level: string } }) =>
						collectionNamed(name).at(options?.readConcern?.level),
					admin: () => ({ command: async () => ({ ismaster: true, setName: "rs0" }) }),
				};
				adapter.client = { startSession: () => new RecordingSession() };
			};
		}
		broker.createService(ApiService);
		await broker.start();
		api = gatewayApi(broker);
	});

	afterAll(() => broker?.stop());

	beforeEach(() => {
		for (const store of collections.values()) store.docs.length = 0;
	});

	test("an update to the values a record has answers 1, as any update (MongoDB matches it without modifying it)", async () => {
		const category = await api.category("Same");
		expect(await api.put(`/category/${category.id}`, { name: "Same" })).toMatchObject({ status: 200, body: 1 });
		const author = await api.author("Same", "Same");
		expect(await api.put(`/author/${author.id}`, { name: "Same", nationality: "Same" })).toMatchObject({ status: 200, body: 1 });
	});

	test("each service has a MongoDbAdapter for MONGO_URI and a collection of its own", () => {
		for (const name of ["authors", "categories", "games"]) {
			const adapter = (broker.getLocalService(name) as unknown as { adapter: MongoAdapter }).adapter;
			expect(adapter).toBeInstanceOf(MongoDbAdapter);
			expect(adapter.uri).toBe(MONGO_URI);
			expect(adapter.collection).toBe(collection(name));
		}
		// Besides them, each one's change feed, and the feed's counters.
		expect([...collections.keys()].sort()).toEqual([
			"authors",
			"authors_changes",
			"catalogue_meta",
			"categories",
			"categories_changes",
			"games",
			"games_changes",
		]);
	});

	test("indexes are created on connect for the references (a delete counts games by them), the orders pages are read in, ascending and descending, and sparse for the claims only writes in progress have", () => {
		expect(collection("authors").indexes).toEqual([
			{ name: 1, _id: 1 },
			{ name: -1, _id: 1 },
			{ nationality: 1, _id: 1 },
			{ nationality: -1, _id: 1 },
		]);
		expect(collection("categories").indexes).toEqual([]);
		expect(collection("games").indexes).toEqual([
			{ category: 1 },
			{ author: 1 },
			{ draft: 1, sparse: true },
			{ "change.category": 1, sparse: true },
			{ "change.author": 1, sparse: true },
			{ "change.at": 1, sparse: true },
			{ draft: 1, _id: 1 },
			{ draft: 1, title: 1, _id: 1 },
			{ draft: 1, title: -1, _id: 1 },
			{ draft: 1, age: 1, _id: 1 },
			{ draft: 1, age: -1, _id: 1 },
		]);
	});

	test("created records are stored with their string id as _id and read back by it", async () => {
		const author = await api.author("Uwe Rosenberg", "German");
		expect(collection("authors").docs).toEqual([{ _id: author.id, name: "Uwe Rosenberg", nationality: "German" }]);
		expect(author.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
		collection("authors").take();
		expect((await api.get(`/author/${author.id}`)).body).toEqual(author);
		expect(collection("authors").take("findOne")).toEqual([{ method: "findOne", query: { _id: author.id } }]);
		expect((await api.put(`/author/${author.id}`, { name: "Uwe", nationality: "Deutsch" })).body).toBe(1);
		expect(collection("authors").docs).toEqual([{ _id: author.id, name: "Uwe", nationality: "Deutsch" }]);
	});

	test("the category name filter is a case-insensitive $regex with special characters escaped", async () => {
		await api.category("Dice (d6)");
		await api.category("Dice d6");
		await api.category("Euro");
		collection("categories").take();
		const answer = await api.get(`/category?name=${encodeURIComponent("(D6)")}`);
		expect(answer.body.map((category: { name: string }) => category.name)).toEqual(["Dice (d6)"]);
		expect(collection("categories").take("find")).toEqual([
			{ method: "find", query: { name: { $regex: /\(D6\)/i } }, sort: [["_id", 1]] },
		]);
	});

	test("games of a category are queried by category, sorted by _id, and populated in one query per service", async () => {
		const [euro, dice] = [await api.category("Euro"), await api.category("Dice")];
		const [uwe, reiner] = [await api.author("Uwe Rosenberg"), await api.author("Reiner Knizia")];
		const agricola = await api.game("Agricola", euro, uwe);
		await api.game("Qwixx", dice, reiner);
		const caverna = await api.game("Caverna", euro, uwe);
		const modern = await api.game("Modern Art", euro, reiner);
		for (const name of collections.keys()) collection(name).take();

		const answer = await api.get(`/game?idCategory=${euro.id}`);
		expect(answer.body.map((game: { id: string }) => game.id)).toEqual([agricola.id, caverna.id, modern.id]);
		expect(answer.body[0]).toMatchObject({ category: euro, author: uwe });
		expect(collection("games").take("find")).toEqual([
			{ method: "find", query: { draft: { $exists: false }, category: euro.id }, sort: [["_id", 1]] },
		]);
		expect(collection("categories").take("find")).toEqual([{ method: "find", query: { _id: { $in: [euro.id] } } }]);
		const [authors] = collection("authors").take("find");
		expect((authors.query!._id as { $in: string[] }).$in.sort()).toEqual([uwe.id, reiner.id].sort());
	});

	test("an author page sorts by name then _id, and skips and limits by page number and size", async () => {
		const names = ["Martin Wallace", "Alan Moon", "Uwe Rosenberg", "Alan Moon", "Bruno Cathala"];
		const authors = [];
		for (const name of names) authors.push(await api.author(name, "Any"));
		collection("authors").take();

		const answer = await api.post("/author", { pageable: { pageNumber: 1, pageSize: 2 } });
		expect(answer.body.content.map((author: { id: string }) => author.id)).toEqual([authors[4].id, authors[0].id]);
		expect(answer.body.totalElements).toBe(5);
		expect(collection("authors").take()).toEqual([
			{
				method: "find",
				query: undefined,
				sort: [
					["name", 1],
					["_id", 1],
				],
				skip: 2,
				limit: 2,
			},
			{ method: "countDocuments", query: undefined },
		]);
	});

	test("an author page sorted by nationality descending, then id, sends that order", async () => {
		await api.author("Uwe Rosenberg", "German");
		collection("authors").take();
		const sort = [{ property: "nationality", direction: "desc" }, { property: "id" }];
		await api.post("/author", { pageable: { pageNumber: 0, pageSize: 3, sort } });
		expect(collection("authors").take("find")).toEqual([
			{
				method: "find",
				query: undefined,
				sort: [
					["nationality", -1],
					["_id", 1],
				],
				limit: 3,
			},
		]);
	});

	test("a game page without a title has MongoDB sort, skip, limit and count; with one, MongoDB sorts and only the page is populated", async () => {
		const [euro, dice] = [await api.category("Euro"), await api.category("Dice")];
		const [uwe, reiner] = [await api.author("Uwe Rosenberg"), await api.author("Reiner Knizia")];
		await api.game("Agricola", euro, uwe, 12);
		await api.game("Qwixx", dice, reiner, 8);
		const caverna = await api.game("Caverna", euro, uwe, 12);
		const modern = await api.game("Modern Art", euro, reiner, 10);
		for (const name of collections.keys()) collection(name).take();

		const sort = [{ property: "age", direction: "desc" }, { property: "title" }];
		const paged = await api.post("/game", { pageable: { pageNumber: 1, pageSize: 2, sort }, idCategory: euro.id });
		expect(paged.body).toEqual({
			content: [{ ...modern, category: euro, author: reiner }],
			pageable: { pageNumber: 1, pageSize: 2 },
			totalElements: 3,
		});
		const query = { draft: { $exists: false }, category: euro.id };
		expect(collection("games").take()).toEqual([
			{
				method: "find",
				query,
				sort: [
					["age", -1],
					["title", 1],
					["_id", 1],
				],
				skip: 2,
				limit: 2,
			},
			{ method: "countDocuments", query },
		]);
		expect(collection("categories").take("find")).toEqual([{ method: "find", query: { _id: { $in: [euro.id] } } }]);
		expect(collection("authors").take("find")).toEqual([{ method: "find", query: { _id: { $in: [reiner.id] } } }]);

		const searched = await api.post("/game", {
			pageable: { pageNumber: 0, pageSize: 1, sort: { property: "title", direction: "desc" } },
			title: "^ca|^ag",
		});
		expect(searched.body).toEqual({
			content: [{ ...caverna, category: euro, author: uwe }],
			pageable: { pageNumber: 0, pageSize: 1 },
			totalElements: 2,
		});
		expect(collection("games").take()).toEqual([
			{
				method: "find",
				query: { draft: { $exists: false } },
				sort: [
					["title", -1],
					["_id", 1],
				],
			},
		]);
		expect(collection("authors").take("find")).toEqual([{ method: "find", query: { _id: { $in: [uwe.id] } } }]);
	});

	test("games.countBy counts games that refer to the category or author now or are being changed to", async () => {
		const euro = await api.category("Euro");
		const uwe = await api.author("Uwe Rosenberg");
		await api.game("Agricola", euro, uwe);
		collection("games").take();
		await expect(broker.call("games.countBy", { category: euro.id })).resolves.toBe(1);
		await expect(broker.call("games.countBy", { author: "nobody" })).resolves.toBe(0);
		expect((await api.delete(`/author/${uwe.id}`)).body).toEqual({ msg: texts.authorHasGames });
		const changingTo = (field: string, id: string) => ({ [`change.${field}`]: id, $or: [{ [field]: { $ne: id } }] });
		expect(collection("games").take("countDocuments")).toEqual([
			{ method: "countDocuments", query: changingTo("category", euro.id) },
			{ method: "countDocuments", query: { category: euro.id } },
			{ method: "countDocuments", query: changingTo("author", "nobody") },
			{ method: "countDocuments", query: { author: "nobody" } },
			{ method: "countDocuments", query: changingTo("author", uwe.id) },
			{ method: "countDocuments", query: { author: uwe.id } },
		]);
	});

	test("a game is inserted as a draft, then published by a conditional update once its references are checked", async () => {
		const [euro, uwe] = [await api.category("Euro"), await api.author("Uwe Rosenberg")];
		for (const name of collections.keys()) collection(name).take();
		const game = await api.game("Agricola", euro, uwe);
		// The publication is recorded: the records the condition finds, updated, in the transaction of their change.
		expect(collection("games").take()).toEqual([
			{ method: "insertOne" },
			{ method: "find", query: { _id: game.id, draft: { $exists: true } }, session: true, sort: [["_id", 1]] },
			{ method: "updateMany", query: { _id: { $in: [game.id] } }, update: { $unset: { draft: true } }, session: true },
		]);
		expect(collection("authors").take()).toEqual([{ method: "findOne", query: { _id: uwe.id } }]);
		expect(collection("games").docs).toEqual([{ _id: game.id, title: "Agricola", age: 10, category: euro.id, author: uwe.id }]);
	});

	test("a delete marks the record, counts its games, then removes it only while it holds the mark", async () => {
		const uwe = await api.author("Uwe Rosenberg");
		collection("authors").take();
		expect((await api.delete(`/author/${uwe.id}`)).status).toBe(200);
		// The mark is taken in one step, which answers the record as well: no read before it.
		const [mark, removal, deletion] = collection("authors").take();
		expect(mark).toEqual({
			method: "findOneAndUpdate",
			query: { _id: uwe.id, deleting: { $exists: false } },
			update: { $set: { deleting: { token: expect.any(String), at: expect.any(Number) } } },
		});
		expect(removal).toEqual({
			method: "find",
			query: { _id: uwe.id, "deleting.token": (mark.update!.$set as Doc & { deleting: { token: string } }).deleting.token },
			session: true,
			sort: [["_id", 1]],
		});
		expect(deletion).toEqual({ method: "deleteMany", query: { _id: { $in: [uwe.id] } }, session: true });
		expect(collection("authors").docs).toEqual([]);
	});

	test("each write and its changes are one transaction, numbered in the feed, which `changes` reads back in order", async () => {
		for (const name of collections.keys()) collection(name).take();
		const transactions = RecordingSession.transactions;
		const euro = await api.category("Euro");
		expect((await api.put(`/category/${euro.id}`, { name: "Eurogame" })).status).toBe(200);
		expect((await api.delete(`/category/${euro.id}`)).status).toBe(200);
		expect(RecordingSession.transactions - transactions).toBe(3);
		expect(collection("categories_changes").take("insertMany")).toEqual(Array(3).fill({ method: "insertMany", session: true }));
		expect(collection("catalogue_meta").take("findOneAndUpdate")).toEqual(
			Array(3).fill({ method: "findOneAndUpdate", query: { _id: "feed categories" }, update: { $inc: { seq: 1 } }, session: true }),
		);
		const { changes, first, last } = await broker.call<{ changes: Doc[]; first: number; last: number }, object>("categories.changes", {
			after: 0,
		});
		expect(changes.map(({ seq, type, record }) => ({ seq, type, record }))).toEqual([
			{ seq: 1, type: "created", record: { id: euro.id, name: "Euro" } },
			{ seq: 2, type: "updated", record: { id: euro.id, name: "Eurogame" } },
			{ seq: 3, type: "removed", record: { id: euro.id } },
		]);
		expect({ first, last }).toEqual({ first: 1, last: 3 });
	});

	test("a refused write records no change: an update of an unknown id numbers nothing", async () => {
		const euro = await api.category("Euro");
		for (const name of collections.keys()) collection(name).take();
		expect((await api.put(`/category/${newId()}`, { name: "Nobody" })).status).toBe(400);
		expect(collection("categories_changes").docs.map(doc => doc._id)).toEqual([1]);
		expect(collection("catalogue_meta").take("findOneAndUpdate")).toEqual([]);
		expect(collection("categories").take("updateMany")).toEqual([]);
		expect(euro.name).toBe("Euro");
	});

	test("the records one write changes are numbered in id order, as the SQLite store numbers them", async () => {
		const store = (broker.getLocalService("categories") as unknown as { adapter: MongoStore }).adapter;
		await store.collection.insertMany(["order-c", "order-a", "order-b"].map(_id => ({ _id, name: _id })));
		const write = { query: { _id: { $in: ["order-b", "order-c", "order-a"] } }, update: { $set: { name: "renamed" } } };
		const { changes } = await recordedMongoWrite(store, write, id => ({ record: { id } }));
		expect(changes.map(change => (change.record as { id: string }).id)).toEqual(["order-a", "order-b", "order-c"]);
	});

	test("a write that must be whole (an import's batch) writes and numbers nothing when its query matches fewer, feed or not", async () => {
		const store = (broker.getLocalService("categories") as unknown as { adapter: MongoStore }).adapter;
		await store.collection.insertMany(["whole-a", "whole-b"].map(_id => ({ _id, name: _id })));
		for (const name of collections.keys()) collection(name).take();
		const write = { query: { _id: { $in: ["whole-a", "whole-b", "whole-c"] } }, update: { $set: { name: "renamed" } }, whole: 3 };
		expect(await recordedMongoWrite(store, write, id => ({ record: { id } }))).toEqual({ written: 0, changes: [] });
		expect(await recordedWrite(store, write, null)).toEqual({ written: 0, changes: [] });
		expect(collection("categories").take("updateMany")).toEqual([]);
		expect(collection("categories_changes").take("insertMany")).toEqual([]);
		expect(await recordedWrite(store, { ...write, whole: 2 }, null)).toEqual({ written: 2, changes: [] });
	});

	test("the outbox: changes after the published mark, which never moves back; pruning keeps what is not published", async () => {
		for (let index = 0; index < 4; index++) await api.category(`Outbox ${index}`);
		const store = (broker.getLocalService("categories") as unknown as { adapter: MongoStore }).adapter;
		expect((await mongoUnpublished(store, 10)).changes.map(change => change.seq)).toEqual([1, 2, 3, 4]);
		await mongoMarkPublished(store, 3);
		await mongoMarkPublished(store, 2);
		const outbox = await mongoUnpublished(store, 10);
		expect(outbox).toMatchObject({ published: 3, last: 4, oldestAt: expect.any(Number) });
		expect(outbox.changes.map(change => change.seq)).toEqual([4]);
		// Retention of one change, but the unpublished fourth is kept, and the third, published, goes with the others.
		expect(await mongoPruneChanges(store, { maxAgeMs: 60_000, maxChanges: 0 }, true)).toBe(3);
		expect(collection("categories_changes").docs.map(doc => doc._id)).toEqual([4]);
		expect(await mongoChangesAfter(store, 0, 10)).toMatchObject({ first: 4, last: 4 });
	});

	test("pruning by age stops at the first change young enough to keep: one stamped by a clock set back waits for those before it", async () => {
		for (let index = 0; index < 4; index++) await api.category(`Stamped ${index}`);
		const store = (broker.getLocalService("categories") as unknown as { adapter: MongoStore }).adapter;
		const stamp = (seq: number, at: number) => (collection("categories_changes").docs.find(doc => doc._id === seq)!.at = at);
		[1, 2, 4].forEach(seq => stamp(seq, 0));
		stamp(3, Date.now() + 1_000_000);
		expect(await mongoPruneChanges(store, { maxAgeMs: 1, maxChanges: 100 }, false)).toBe(2);
		expect(collection("categories_changes").docs.map(doc => doc._id)).toEqual([3, 4]);
		stamp(3, 0);
		expect(await mongoPruneChanges(store, { maxAgeMs: 1, maxChanges: 100 }, false)).toBe(2);
		expect(collection("categories_changes").docs).toEqual([]);
	});

	test("the feed and its marks are read at read concern majority: a change a failover rolls back is never handed out", async () => {
		await api.category("Majority");
		const store = (broker.getLocalService("categories") as unknown as { adapter: MongoStore }).adapter;
		for (const name of collections.keys()) collection(name).take();
		await mongoChangesAfter(store, 0, 10);
		await mongoUnpublished(store, 10);
		await mongoPruneChanges(store, { maxAgeMs: 60_000, maxChanges: 1000 }, true);
		const reads = [...collection("categories_changes").take("find"), ...collection("catalogue_meta").take("find")];
		expect(reads.length).toBeGreaterThanOrEqual(5);
		for (const read of reads) expect(read).toMatchObject({ readConcern: "majority" });
	});

	test("a server that is not a replica set has no transactions: it is named as the reason the feed cannot be kept", async () => {
		const store = (broker.getLocalService("categories") as unknown as { adapter: MongoStore }).adapter;
		const answering = (hello: Doc) => ({ ...store, db: { ...store.db, admin: () => ({ command: async () => hello }) } });
		expect(await feedlessServer(answering({ ismaster: true }))).toMatch(/^its server is not a replica set/);
		expect(await feedlessServer(answering({ ismaster: true, setName: "rs0" }))).toBeUndefined();
		expect(await feedlessServer(answering({ ismaster: true, msg: "isdbgrid" }))).toBeUndefined();
	});

	const oddIds: [string, string][] = [
		...unknownIds,
		["24 hexadecimal digits", "5f0c9d2e8b3a4c1d2e3f4a5b"],
		["12 characters", "abcdefghijkl"],
		["odd unicode", "\u{1F3B2}\u202E\uFFFF"],
	];

	test.each(oddIds)("an unknown id of %s is answered 400 with the documented text, never a 500", async (_shape, id) => {
		await api.author();
		const notFound = { code: 400, message: texts.authorNotFound };
		await expect(broker.call("authors.get", { id })).rejects.toBeInstanceOf(Errors.MoleculerClientError);
		await expect(broker.call("authors.get", { id })).rejects.toMatchObject(notFound);
		// A write refuses an id of another shape than the service issues before it reaches the store:
		// over the broker as a validation failure (as every refused param is), over HTTP as a 400.
		const unknownGame = ID_SHAPE.test(id)
			? { code: 400, message: texts.gameNotFound }
			: { name: "ValidationError", data: [expect.objectContaining({ field: "id", message: texts.gameNotFound })] };
		await expect(broker.call("games.remove", { id })).rejects.toMatchObject(unknownGame);
		const encoded = encodeURIComponent(id);
		expect(await api.get(`/author/${encoded}`)).toMatchObject({ status: 400, body: { msg: texts.authorNotFound } });
		expect(await api.delete(`/game/${encoded}`)).toMatchObject({ status: 400, body: { msg: texts.gameNotFound } });
		expect(await api.put(`/category/${encoded}`, { name: "Euro" })).toMatchObject({
			status: 400,
			body: { msg: texts.categoryNotFound },
		});
	});
});
