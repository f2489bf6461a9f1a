// Read your writes, model-based (decisions.md, "Read your writes"; docs/caching.md): fast-check
// generates sequences of writes and reads, each sent through one of two gateways or, for the lists,
// called from a node without catalogue services (as `npm run repl` starts one), to a catalogue over
// NATS whose games service runs twice on one store, every node sharing a Redis cache, both
// gateways under a read load of their own. A model of the catalogue (plain records) says what each
// read must answer once the writes before it were answered, and whether a tag handed out earlier
// for its URL may still match: every answer is compared with it exactly. The seed is printed
// first; FUZZ_SEED replays a run, FUZZ_RUNS sets how many sequences it runs.
import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { ServiceBroker, type Middleware } from "moleculer";
import { cacherOptions } from "../../lib/cache/cache";
import { texts } from "../../lib/catalogue/errors";
import { DATA_SERVICE_NAMES, type DataServiceName } from "../../lib/catalogue/services";
import { config } from "../../lib/config/config";
import brokerOptions from "../../moleculer.config";
import { apiService } from "../../services/api.service";
import AuthorsService from "../../services/authors.service";
import type { Author } from "../../services/authors.types";
import CategoriesService from "../../services/categories.service";
import type { Category } from "../../services/categories.types";
import GamesService from "../../services/games.service";
import type { Game, ListedGame } from "../../services/games.types";
import { actionCounter } from "../support/calls";
import { gatewayApi, within } from "../support/catalogue";
import { ReadLoad } from "../support/load";
import { startNats, type NatsServer } from "../support/nats";
import { waitFor } from "../support/process";
import { fuzzRuns, fuzzSeed } from "../support/fuzz";
import { rawRequest } from "../support/raw-http";
import { startRedis, type RedisServer } from "../support/redis";
import { replicaOf } from "../support/replica";

/** Sequences of commands (FUZZ_RUNS). */
const RUNS = fuzzRuns(60);
/** The most commands one sequence holds. */
const MAX_COMMANDS = 40;
/** How long the sequences may take; then the property stops where it is, and the sequences run so far count. */
const TIME_LIMIT_MS = 30_000;
/** Fewer sequences than this within the time limit, and the test says so rather than pass on too few. */
const MINIMUM_SEQUENCES = Math.ceil(RUNS / 4);
/** A request or call that takes longer than this counts as a hang and fails the sequence. */
const REQUEST_TIMEOUT_MS = 10_000;
const START_TIMEOUT_MS = 20_000;
/** Keep-alive connections reading GET /game from each gateway all along: reads racing with the sequence's writes. */
const LOAD_CONNECTIONS = 1;
/** The page size the interface gives a pageSize of 0. */
const DEFAULT_PAGE_SIZE = 5;
/** An id no record ever has. */
const UNKNOWN_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

const GATEWAYS = ["A", "B"] as const;
/** The services a game list or page is made of. */
const GAME_SOURCES: DataServiceName[] = ["games", "authors", "categories"];
/** The actions by which a games replica shows it served writes, and reads. */
const WRITES = ["games.create", "games.update", "games.remove"];
const READS = ["games.list", "games.page", "games.get", "games.countBy"];

let nats: NatsServer;
let redis: RedisServer;
const brokers: ServiceBroker[] = [];
/** The base URLs of gateways A and B. */
let gateways: string[] = [];
/** The node without services, as `npm run repl` starts one. */
let reader: ServiceBroker;
let loads: ReadLoad[] = [];
/** What each of the two games replicas ran. */
const replicaRuns = [actionCounter(), actionCounter()];
let seed: number;

beforeAll(async () => {
	seed = fuzzSeed();
	process.stdout.write(
		`read-your-writes-model.test.ts: seed ${seed}, ${RUNS} sequences of up to ${MAX_COMMANDS} commands; ` +
			`replay with FUZZ_SEED=${seed} npx jest test/integration/read-your-writes-model.test.ts\n`,
	);
	[nats, redis] = await Promise.all([startNats(), startRedis()]);
	const namespace = `read-your-writes-model-${randomUUID()}`;
	const node = (name: string, middlewares: Middleware[] = []) => {
		const broker = new ServiceBroker({
			...brokerOptions,
			nodeID: `${name}-${process.pid}`,
			namespace,
			transporter: { type: "NATS", options: { url: nats.url } },
			cacher: cacherOptions({ mongoUri: null, redisUrl: redis.url, transporter: nats.url, cacheMaxBytes: config.cacheMaxBytes }),
			logger: false,
			middlewares,
		});
		brokers.push(broker);
		return broker;
	};
	const gatewayNodes = GATEWAYS.map(name => node(`gateway-${name.toLowerCase()}`));
	for (const gateway of gatewayNodes) gateway.createService(apiService());
	node("authors").createService(AuthorsService);
	node("categories").createService(CategoriesService);
	const games = node("games-1", [replicaRuns[0].middleware]);
	games.createService(GamesService);
	reader = node("reader");
	await Promise.all(brokers.map(broker => broker.start()));
	// The replica takes the first one's store, which exists once that one has started.
	const replica = node("games-2", [replicaRuns[1].middleware]);
	replica.createService(replicaOf(GamesService, games.getLocalService("games")));
	await replica.start();
	await Promise.all(brokers.map(broker => broker.waitForServices([...DATA_SERVICE_NAMES], START_TIMEOUT_MS)));
	await waitFor(
		"every node sees both games replicas",
		async () =>
			brokers.every(
				broker => broker.registry.getServiceList({ onlyAvailable: true }).filter(service => service.name === "games").length === 2,
			),
		[],
		START_TIMEOUT_MS,
	);
	gateways = gatewayNodes.map(gateway => gatewayApi(gateway).url);
	loads = gateways.map(url => new ReadLoad(url, "/game", LOAD_CONNECTIONS, 10 * TIME_LIMIT_MS));
}, 60_000);
afterAll(async () => {
	await Promise.all(loads.map(load => load.stop()));
	await Promise.all(brokers.map(broker => broker.stop()));
	await Promise.all([nats?.stop(), redis?.stop()]);
});

/** The catalogue as its clients must see it. */
interface Model {
	authors: Author[];
	categories: Category[];
	games: Game[];
	/** The authors and categories deleted in this sequence: reads still ask for them. */
	gone: { authors: string[]; categories: string[] };
	/** Writes answered in this sequence, by service: a cached answer's tag changes when, and only when, one of its services' count does. */
	writes: Record<DataServiceName, number>;
}

const emptyModel = (): Model => ({
	authors: [],
	categories: [],
	games: [],
	gone: { authors: [], categories: [] },
	writes: { authors: 0, categories: 0, games: 0 },
});

type Sort = { property?: string; direction?: string };

function describePage(kind: string, pageNumber: number, pageSize: number, sort: Sort | undefined, category?: number): string {
	const sorted = sort ? ` by ${JSON.stringify(sort)}` : "";
	return `${kind} page ${pageNumber} of ${pageSize}${sorted}${category === undefined ? "" : ` of category ${category}`}`;
}

/** `records` as a page sorted on `sort` lists them: on its property (`byDefault` when absent), then by id ascending. */
function inOrder<T extends object>(records: readonly T[], sort: Sort | undefined, byDefault: string): T[] {
	const property = sort?.property ?? byDefault;
	const keys: [string, number][] = [[property, sort?.direction === "desc" ? -1 : 1]];
	if (property !== "id") keys.push(["id", 1]);
	return [...records].sort((a, b) => {
		for (const [field, sign] of keys) {
			const [x, y] = [(a as Record<string, string | number>)[field], (b as Record<string, string | number>)[field]];
			if (x !== y) return x < y ? -sign : sign;
		}
		return 0;
	});
}

const byId = <T extends { id: string }>(records: readonly T[]) => inOrder(records, undefined, "id");

/** The games of `idCategory` (all without it) as GET /game lists them: by id, with their category and author records. */
const listedGames = (model: Model, idCategory?: string): ListedGame[] =>
	byId(model.games.filter(game => idCategory === undefined || game.category === idCategory)).map(game => ({
		...game,
		category: model.categories.find(category => category.id === game.category)!,
		author: model.authors.find(author => author.id === game.author)!,
	}));

/** The page envelope of `pageNumber` out of `records`, as the model expects it. */
function pageOf<T>(records: readonly T[], pageNumber: number, pageSize: number) {
	const size = pageSize || DEFAULT_PAGE_SIZE;
	return {
		content: records.slice(pageNumber * size, (pageNumber + 1) * size),
		pageable: { pageNumber, pageSize: size },
		totalElements: records.length,
	};
}

/** The `pick`-th of `records`, counting round: commands name records by position, since their ids exist only once created. */
const nth = <T>(records: readonly T[], pick: number): T => records[pick % records.length];

interface Expected {
	status: number;
	body: unknown;
}

/** What a read asks for and must answer: its GET path, the reader's call for a list, and the services its answer is made of. */
interface Read {
	path: string;
	call?: [action: string, params: Record<string, string>];
	from: DataServiceName[];
	expected: Expected;
}

const TARGETS = ["authors", "categories", "games", "games of a category", "author"] as const;
type Target = (typeof TARGETS)[number];

/** A target as a command names it: with the position of its author or category, if it has one. */
const describeTarget = (target: Target, pick: number) =>
	target === "author" || target === "games of a category" ? `${target} ${pick}` : target;

/** What a read names: a list, or the record of `id` (the games of a category, an author). */
interface Address {
	target: Target;
	id?: string;
}

/** The address of `target` in the model's present state; `pick` chooses a category or author, deleted ones included. */
function addressOf(model: Model, target: Target, pick: number): Address {
	const kind = target === "author" ? "authors" : target === "games of a category" ? "categories" : undefined;
	if (kind === undefined) return { target };
	const ids = [...model[kind].map(record => record.id), ...model.gone[kind]];
	return { target, id: ids.length > 0 ? nth(ids, pick) : UNKNOWN_ID };
}

/** The read of `address` and what it must answer in the model's present state. */
function readAt(model: Model, { target, id = UNKNOWN_ID }: Address): Read {
	switch (target) {
		case "authors":
			return { path: "/author", call: ["authors.list", {}], from: ["authors"], expected: { status: 200, body: byId(model.authors) } };
		case "categories":
			return {
				path: "/category",
				call: ["categories.list", {}],
				from: ["categories"],
				expected: { status: 200, body: byId(model.categories) },
			};
		case "games":
			return { path: "/game", call: ["games.list", {}], from: GAME_SOURCES, expected: { status: 200, body: listedGames(model) } };
		case "games of a category":
			return {
				path: `/game?idCategory=${encodeURIComponent(id)}`,
				call: ["games.list", { idCategory: id }],
				from: GAME_SOURCES,
				expected: { status: 200, body: listedGames(model, id) },
			};
		case "author": {
			const author = model.authors.find(each => each.id === id);
			const expected = author ? { status: 200, body: author } : { status: 400, body: { msg: texts.authorNotFound } };
			return { path: `/author/${encodeURIComponent(id)}`, from: ["authors"], expected };
		}
	}
}

/** The state of the services an answer is made of, as the model counts their writes. */
const stampOf = (model: Model, from: readonly DataServiceName[]) => from.map(service => `${service} ${model.writes[service]}`).join(", ");

interface Reply {
	status: number;
	etag?: string;
	body: unknown;
}

/** An ETag a gateway handed out with a 200: for which read, in which state, for which answer, at which step. */
interface HandedTag {
	address: Address;
	path: string;
	etag: string;
	stamp: string;
	body: unknown;
	step: number;
}

const cut = (text: string, limit = 300) => (text.length > limit ? `${text.slice(0, limit)}… (${text.length} characters)` : text);
const shown = (value: unknown) => cut(JSON.stringify(value) ?? "absent");

/** Where `got` first differs from `expected`: the path to the first differing value, and both values. */
function difference(expected: unknown, got: unknown, at = "the answer"): string {
	const objects = [expected, got].every(value => typeof value === "object" && value !== null);
	if (objects && Array.isArray(expected) === Array.isArray(got)) {
		const [want, have] = [expected, got] as Record<string, unknown>[];
		const key = [...new Set([...Object.keys(want), ...Object.keys(have)])].find(each => !isDeepStrictEqual(want[each], have[each]));
		if (key !== undefined) return difference(want[key], have[key], Array.isArray(expected) ? `${at}[${key}]` : `${at}.${key}`);
	}
	return `${at} is ${shown(got)}, expected ${shown(expected)}`;
}

/** Counts over every sequence, printed at the end. */
const totals = { sequences: 0, steps: 0, compared: 0, conditional: 0, notModified: 0, refused: 0 };

/** One sequence against the real catalogue: its steps as sent, the tags handed out, and every answer that disagreed with the model. */
class Sequence {
	readonly steps: string[] = [];
	readonly mismatches: string[] = [];
	/** The tags handed out in this sequence, one per path and state. */
	private readonly tags: HandedTag[] = [];

	async send(gateway: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
		const sent = rawRequest(gateways[gateway] + path, method, headers, body);
		const answer = await within(REQUEST_TIMEOUT_MS, sent, `no answer to ${method} ${path} from gateway ${GATEWAYS[gateway]}`);
		const text = answer.body.toString();
		return { status: answer.status, etag: answer.headers.etag, body: text === "" ? undefined : JSON.parse(text) };
	}

	/** Notes a step as sent and answered (`reply`, or the failure's text); its number. */
	step(by: string, request: string, reply: Reply | string): number {
		const outcome = typeof reply === "string" ? reply : `${reply.status}${reply.body === undefined ? "" : ` ${shown(reply.body)}`}`;
		this.steps.push(`${this.steps.length + 1}. ${by}: ${request} -> ${outcome}`);
		totals.steps++;
		return this.steps.length;
	}

	mismatch(step: number, problem: string): void {
		this.mismatches.push(`step ${step}: ${problem}`);
	}

	/** Whether `reply` is `expected` exactly; a mismatch if not. */
	check(step: number, reply: Reply, expected: Expected): boolean {
		totals.compared++;
		if (reply.status === expected.status && isDeepStrictEqual(reply.body, expected.body)) return true;
		this.mismatch(
			step,
			reply.status === expected.status
				? difference(expected.body, reply.body)
				: `answered ${reply.status} ${shown(reply.body)}, expected ${expected.status} ${shown(expected.body)}`,
		);
		return false;
	}

	/** A write through `gateway`, its answer checked; whether it was `expected`. */
	async write(gateway: number, method: string, path: string, body: unknown, expected: (reply: Reply) => Expected): Promise<boolean> {
		const reply = await this.send(gateway, method, path, body);
		const step = this.step(GATEWAYS[gateway], `${method} ${path}${body === undefined ? "" : ` ${JSON.stringify(body)}`}`, reply);
		const wanted = expected(reply);
		if (wanted.status !== 200) totals.refused++;
		return this.check(step, reply, wanted);
	}

	/** A search (POST) through `gateway`, which must answer the page `expected`. */
	async search(gateway: number, path: string, body: unknown, expected: unknown): Promise<void> {
		const reply = await this.send(gateway, "POST", path, body);
		this.check(this.step(GATEWAYS[gateway], `POST ${path} ${JSON.stringify(body)}`, reply), reply, { status: 200, body: expected });
	}

	/** The `held`-th tag handed out for `path` in this sequence (counting round), if any. */
	heldFor(path: string, held: number): HandedTag | undefined {
		const handed = this.tags.filter(tag => tag.path === path);
		return handed.length > 0 ? nth(handed, held) : undefined;
	}

	/** The `held`-th tag handed out in this sequence, for any path, if any. */
	anyHeld(held: number): HandedTag | undefined {
		return this.tags.length > 0 ? nth(this.tags, held) : undefined;
	}

	/** GET `address` through `gateway`, with `tag` in If-None-Match if given: a 304 exactly when none of its services has written since. */
	async get(model: Model, gateway: number, address: Address, tag: HandedTag | undefined): Promise<void> {
		const read = readAt(model, address);
		const reply = await this.send(gateway, "GET", read.path, undefined, tag ? { "If-None-Match": tag.etag } : {});
		const step = this.step(
			GATEWAYS[gateway],
			`GET ${read.path}${tag ? ` If-None-Match ${tag.etag} (of step ${tag.step})` : ""}`,
			reply,
		);
		const stamp = stampOf(model, read.from);
		if (tag) {
			totals.conditional++;
			if (reply.status === 304) totals.notModified++;
			if (tag.stamp === stamp) {
				if (reply.status !== 304)
					this.mismatch(step, `answered ${reply.status}, not 304, to the tag of step ${tag.step}: no write since (${stamp})`);
				return;
			}
			if (reply.status === 304) {
				const problem = isDeepStrictEqual(tag.body, read.expected.body)
					? "the answer happens to be the same, but its tag should have changed"
					: `a stale 304: ${difference(read.expected.body, tag.body, "the held answer")}`;
				this.mismatch(step, `answered 304 to the tag of step ${tag.step} (${tag.stamp}) after writes (${stamp}): ${problem}`);
				return;
			}
		}
		if (this.check(step, reply, read.expected) && reply.status === 200) this.keepTag(step, address, read, stamp, reply);
	}

	/** Keeps the tag of a 200 for later conditional reads: one tag per state, never the tag of another state. */
	private keepTag(step: number, address: Address, read: Read, stamp: string, reply: Reply): void {
		if (!reply.etag) return this.mismatch(step, "a 200 to a GET without an ETag");
		const handed = this.tags.filter(tag => tag.path === read.path);
		const same = handed.find(tag => tag.stamp === stamp);
		if (same && same.etag !== reply.etag)
			this.mismatch(step, `tagged ${reply.etag}, but step ${same.step} had ${same.etag} for the same state`);
		const reused = handed.find(tag => tag.stamp !== stamp && tag.etag === reply.etag);
		if (reused)
			this.mismatch(step, `tagged ${reply.etag}, as step ${reused.step} was before writes (${reused.stamp} then, ${stamp} now)`);
		if (!same) this.tags.push({ address, path: read.path, etag: reply.etag, stamp, body: read.expected.body, step });
	}

	/** The reader node calls a list action directly. */
	async call(read: Read): Promise<void> {
		const [action, params] = read.call!;
		const request = `${action} ${JSON.stringify(params)}`;
		let reply: Reply;
		try {
			reply = { status: 200, body: await within(REQUEST_TIMEOUT_MS, reader.call(action, params), `no answer to ${action}`) };
		} catch (err) {
			const failure = `failed: ${(err as Error).message}`;
			return this.mismatch(this.step("reader", request, failure), `the call ${failure}`);
		}
		this.check(this.step("reader", request, reply), reply, read.expected);
	}

	report(): string {
		const [first] = this.mismatches;
		return (
			`${this.mismatches.length} answer(s) disagreed with the model in ${this.steps.length} steps; the first, ${first}\n` +
			`steps:\n${this.steps.map(step => `  ${step}`).join("\n")}`
		);
	}
}

type Command = fc.AsyncCommand<Model, Sequence>;

const command = (
	name: string,
	applies: (model: Readonly<Model>) => boolean,
	run: (model: Model, real: Sequence) => Promise<void>,
): Command => ({
	check: applies,
	run,
	toString: () => name,
});

/** What commands are drawn from: few names, so that sorts meet ties; records by position (nth). */
const draw = {
	gateway: fc.constantFrom(0, 1),
	pick: fc.nat(99),
	authorName: fc.constantFrom("Reiner Knizia", "Uwe Rosenberg", "Vital Lacerda", "Stefan Feld"),
	nationality: fc.constantFrom("German", "Portuguese"),
	categoryName: fc.constantFrom("Strategy", "Family", "Party"),
	title: fc.constantFrom("Agricola", "Azul", "Brass", "Ra", "Tigris & Euphrates"),
	age: fc.integer({ min: 0, max: 99 }),
	pageNumber: fc.nat(3),
	pageSize: fc.constantFrom(0, 1, 2, 3),
	held: fc.option(fc.nat(), { nil: undefined, freq: 4 }),
};

/** Whether any game refers to the record: then deleting it is refused, and changes nothing. */
const referred = (model: Model, field: "author" | "category", id: string) => model.games.some(game => game[field] === id);

const createAuthor = fc
	.record({ gateway: draw.gateway, name: draw.authorName, nationality: draw.nationality })
	.map(({ gateway, name, nationality }) =>
		command(
			`${GATEWAYS[gateway]}: create author ${name}`,
			() => true,
			async (model, real) => {
				let author: Author | undefined;
				const created = await real.write(gateway, "PUT", "/author", { name, nationality }, reply => {
					const { id } = (reply.body as { author?: Partial<Author> } | undefined)?.author ?? {};
					author = {
						id: typeof id === "string" && !model.authors.some(each => each.id === id) ? id : "<a new id>",
						name,
						nationality,
					};
					return { status: 200, body: { author } };
				});
				if (!created) return;
				model.authors.push(author!);
				model.writes.authors++;
			},
		),
	);

const renameAuthor = fc
	.record({ gateway: draw.gateway, pick: draw.pick, name: draw.authorName, nationality: draw.nationality })
	.map(({ gateway, pick, name, nationality }) =>
		command(
			`${GATEWAYS[gateway]}: rename author ${pick} to ${name} (${nationality})`,
			model => model.authors.length > 0,
			async (model, real) => {
				const author = nth(model.authors, pick);
				if (!(await real.write(gateway, "PUT", `/author/${author.id}`, { name, nationality }, () => ({ status: 200, body: 1 }))))
					return;
				Object.assign(author, { name, nationality });
				model.writes.authors++;
			},
		),
	);

const createCategory = fc.record({ gateway: draw.gateway, name: draw.categoryName }).map(({ gateway, name }) =>
	command(
		`${GATEWAYS[gateway]}: create category ${name}`,
		() => true,
		async (model, real) => {
			let category: Category | undefined;
			const created = await real.write(gateway, "PUT", "/category", { name }, reply => {
				const { id } = (reply.body as { category?: Partial<Category> } | undefined)?.category ?? {};
				category = { id: typeof id === "string" && !model.categories.some(each => each.id === id) ? id : "<a new id>", name };
				return { status: 200, body: { category } };
			});
			if (!created) return;
			model.categories.push(category!);
			model.writes.categories++;
		},
	),
);

const renameCategory = fc.record({ gateway: draw.gateway, pick: draw.pick, name: draw.categoryName }).map(({ gateway, pick, name }) =>
	command(
		`${GATEWAYS[gateway]}: rename category ${pick} to ${name}`,
		model => model.categories.length > 0,
		async (model, real) => {
			const category = nth(model.categories, pick);
			if (!(await real.write(gateway, "PUT", `/category/${category.id}`, { name }, () => ({ status: 200, body: 1 })))) return;
			category.name = name;
			model.writes.categories++;
		},
	),
);

/** The records games refer to, as the model and the routes name them. */
const REFERENCED = {
	author: { records: "authors", hasGames: texts.authorHasGames },
	category: { records: "categories", hasGames: texts.categoryHasGames },
} as const;

/** Deletes an author or a category: refused, and nothing changed, while a game refers to it. */
const deleteReferenced = (kind: keyof typeof REFERENCED) =>
	fc.record({ gateway: draw.gateway, pick: draw.pick }).map(({ gateway, pick }) =>
		command(
			`${GATEWAYS[gateway]}: delete ${kind} ${pick}`,
			model => model[REFERENCED[kind].records].length > 0,
			async (model, real) => {
				const { records, hasGames } = REFERENCED[kind];
				const record = nth<Author | Category>(model[records], pick);
				const refused = referred(model, kind, record.id);
				const expected = refused ? { status: 400, body: { msg: hasGames } } : { status: 200, body: { [kind]: record } };
				if (!(await real.write(gateway, "DELETE", `/${kind}/${record.id}`, undefined, () => expected)) || refused) return;
				Object.assign(model, { [records]: model[records].filter(each => each !== record) });
				model.gone[records].push(record.id);
				model.writes[records]++;
			},
		),
	);

const gameFields = { title: draw.title, age: draw.age, category: draw.pick, author: draw.pick };
/** A game as a command draws it: its category and author by position. */
type GameFields = { title: string; age: number; category: number; author: number };
/** A game's body, its category and author picked among the model's. */
const gameBody = (model: Model, fields: GameFields) => ({
	title: fields.title,
	age: fields.age,
	category: { id: nth(model.categories, fields.category).id },
	author: { id: nth(model.authors, fields.author).id },
});
const describeGame = ({ title, age, category, author }: GameFields) => `${title} (${age}) of category ${category} by author ${author}`;
const canRefer = (model: Readonly<Model>) => model.categories.length > 0 && model.authors.length > 0;

const createGame = fc.record({ gateway: draw.gateway, ...gameFields }).map(({ gateway, ...fields }) =>
	command(`${GATEWAYS[gateway]}: create game ${describeGame(fields)}`, canRefer, async (model, real) => {
		const body = gameBody(model, fields);
		let game: Game | undefined;
		const created = await real.write(gateway, "PUT", "/game", body, reply => {
			const { id } = (reply.body as { game?: Partial<Game> } | undefined)?.game ?? {};
			const fresh = typeof id === "string" && !model.games.some(each => each.id === id);
			game = {
				id: fresh ? id : "<a new id>",
				title: body.title,
				age: body.age,
				category: body.category.id,
				author: body.author.id,
			};
			return { status: 200, body: { game } };
		});
		if (!created) return;
		model.games.push(game!);
		model.writes.games++;
	}),
);

const updateGame = fc.record({ gateway: draw.gateway, pick: draw.pick, ...gameFields }).map(({ gateway, pick, ...fields }) =>
	command(
		`${GATEWAYS[gateway]}: update game ${pick} to ${describeGame(fields)}`,
		model => model.games.length > 0 && canRefer(model),
		async (model, real) => {
			const game = nth(model.games, pick);
			const body = gameBody(model, fields);
			if (!(await real.write(gateway, "PUT", `/game/${game.id}`, body, () => ({ status: 200, body: 1 })))) return;
			Object.assign(game, { title: body.title, age: body.age, category: body.category.id, author: body.author.id });
			model.writes.games++;
		},
	),
);

const deleteGame = fc.record({ gateway: draw.gateway, pick: draw.pick }).map(({ gateway, pick }) =>
	command(
		`${GATEWAYS[gateway]}: delete game ${pick}`,
		model => model.games.length > 0,
		async (model, real) => {
			const game = nth(model.games, pick);
			if (!(await real.write(gateway, "DELETE", `/game/${game.id}`, undefined, () => ({ status: 200, body: { game: { ...game } } }))))
				return;
			model.games = model.games.filter(each => each !== game);
			model.writes.games++;
		},
	),
);

const getRead = fc
	.record({ gateway: draw.gateway, target: fc.constantFrom(...TARGETS), pick: draw.pick, held: draw.held })
	.map(({ gateway, target, pick, held }) =>
		command(
			`${GATEWAYS[gateway]}: GET ${describeTarget(target, pick)}${held === undefined ? "" : ` with tag ${held}`}`,
			() => true,
			(model, real) => {
				const address = addressOf(model, target, pick);
				return real.get(model, gateway, address, held === undefined ? undefined : real.heldFor(readAt(model, address).path, held));
			},
		),
	);

/** A URL read before in the sequence, read again through either gateway with one of the tags handed out for it. */
const revalidate = fc.record({ gateway: draw.gateway, held: fc.nat() }).map(({ gateway, held }) =>
	command(
		`${GATEWAYS[gateway]}: GET again with tag ${held}`,
		() => true,
		async (model, real) => {
			const tag = real.anyHeld(held);
			if (tag) await real.get(model, gateway, tag.address, tag);
		},
	),
);

const authorSort = fc.constantFrom<Sort | undefined>(
	undefined,
	{ property: "name", direction: "desc" },
	{ property: "nationality" },
	{ property: "id", direction: "desc" },
);

const authorPage = fc
	.record({ gateway: draw.gateway, pageNumber: draw.pageNumber, pageSize: draw.pageSize, sort: authorSort })
	.map(({ gateway, pageNumber, pageSize, sort }) =>
		command(
			`${GATEWAYS[gateway]}: ${describePage("author", pageNumber, pageSize, sort)}`,
			() => true,
			async (model, real) => {
				const body = { pageable: { pageNumber, pageSize, ...(sort && { sort }) } };
				await real.search(gateway, "/author", body, pageOf(inOrder(model.authors, sort, "name"), pageNumber, pageSize));
			},
		),
	);

const gameSort = fc.constantFrom<Sort | undefined>(undefined, { property: "title" }, { property: "age", direction: "desc" });

const gamePage = fc
	.record({
		gateway: draw.gateway,
		pageNumber: draw.pageNumber,
		pageSize: draw.pageSize,
		sort: gameSort,
		category: fc.option(draw.pick, { nil: undefined }),
	})
	.map(({ gateway, pageNumber, pageSize, sort, category }) =>
		command(
			`${GATEWAYS[gateway]}: ${describePage("game", pageNumber, pageSize, sort, category)}`,
			() => true,
			async (model, real) => {
				const idCategory = category === undefined || model.categories.length === 0 ? undefined : nth(model.categories, category).id;
				const body = { pageable: { pageNumber, pageSize, ...(sort && { sort }) }, ...(idCategory && { idCategory }) };
				const games = inOrder(listedGames(model, idCategory), sort, "id");
				await real.search(gateway, "/game", body, pageOf(games, pageNumber, pageSize));
			},
		),
	);

const readerCall = fc
	.record({ target: fc.constantFrom(...TARGETS.filter(target => target !== "author")), pick: draw.pick })
	.map(({ target, pick }) =>
		command(
			`reader: ${describeTarget(target, pick)}`,
			() => true,
			(model, real) => real.call(readAt(model, addressOf(model, target, pick))),
		),
	);

/** Every kind of command; creates and GETs listed twice, so that sequences have records to work on and read after most writes. */
const COMMANDS = [
	createAuthor,
	createAuthor,
	renameAuthor,
	deleteReferenced("author"),
	createCategory,
	createCategory,
	renameCategory,
	deleteReferenced("category"),
	createGame,
	createGame,
	updateGame,
	deleteGame,
	getRead,
	getRead,
	getRead,
	revalidate,
	revalidate,
	authorPage,
	gamePage,
	readerCall,
	readerCall,
];

/** The store of `service` on the node that runs it (the games replicas share one). */
function storeOf(service: DataServiceName) {
	const found = brokers.map(broker => broker.getLocalService(service)).find(Boolean);
	return found as unknown as { adapter: { removeMany(query: object): Promise<number> }; clearCache(): Promise<void> };
}

/**
 * Empties the stores, then moves every service's generation on as a write does, and drops the
 * cached answers: a sequence then passes or fails alone, so a shrunk counterexample replays.
 */
async function emptyCatalogue(): Promise<void> {
	for (const service of DATA_SERVICE_NAMES) {
		const store = storeOf(service);
		await store.adapter.removeMany({});
		await store.clearCache();
	}
	await reader.cacher!.clean();
}

/** One generated sequence on an empty catalogue; it fails when any answer disagreed with the model. */
async function runSequence(commands: Iterable<Command>): Promise<void> {
	await within(REQUEST_TIMEOUT_MS, emptyCatalogue(), "emptying the catalogue between sequences");
	const real = new Sequence();
	await fc.asyncModelRun(() => ({ model: emptyModel(), real }), commands);
	totals.sequences++;
	if (real.mismatches.length > 0) throw new Error(real.report());
}

test(
	"writes and reads in any order, through two gateways, two games replicas and a node without services: as the model says, no stale 304",
	async () => {
		let running: Promise<unknown> = Promise.resolve();
		const property = fc.asyncProperty(fc.commands(COMMANDS, { maxCommands: MAX_COMMANDS, size: "max" }), commands => {
			const run = runSequence(commands);
			running = run.catch(() => undefined);
			return run;
		});
		try {
			await fc.assert(property, {
				seed,
				numRuns: RUNS,
				plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_MS, { failOnInterrupt: false })],
			});
		} finally {
			// fast-check stops waiting for a sequence the time limit interrupts; the catalogue does not.
			await running;
			process.stdout.write(`read-your-writes-model.test.ts: ${JSON.stringify(totals)}; ${loads.map(String).join("; ")}\n`);
		}
		expect(totals.sequences).toBeGreaterThanOrEqual(MINIMUM_SEQUENCES);
		const ran = (calls: Map<string, number>, actions: string[]) => actions.reduce((sum, action) => sum + (calls.get(action) ?? 0), 0);
		const served = replicaRuns.map(({ calls }) => ({ writes: ran(calls, WRITES) > 0, reads: ran(calls, READS) > 0 }));
		expect(served).toEqual([
			{ writes: true, reads: true },
			{ writes: true, reads: true },
		]);
	},
	TIME_LIMIT_MS + 3 * REQUEST_TIMEOUT_MS,
);
