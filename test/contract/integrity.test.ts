import type { Middleware, Service } from "moleculer";
import { localService, startCatalogue, stillPending, type Api, type Catalogue } from "../support/catalogue";

// The integrity protocol (docs/integrity.md) step by step: a gate holds one
// action of the protocol part-way, the racing request is sent, then the gate opens. Each case is
// one interleaving that naive check-then-write code gets wrong.

type Ref = { id: string };
type Adapter = {
	insert(record: object): Promise<unknown>;
	updateMany(query: object, update: object): Promise<number>;
	removeMany(query: object): Promise<number>;
	findById(id: string): Promise<unknown>;
};

/** Holds the next call of one action, before or after its handler, until released. */
class Gate {
	private held?: { action: string; when: "before" | "after"; reached: () => void; opened: Promise<void> };

	/** Resolves with the release once the call is held. */
	hold(action: string, when: "before" | "after"): Promise<() => void> {
		let release!: () => void;
		const opened = new Promise<void>(resolve => (release = resolve));
		return new Promise(reached => (this.held = { action, when, reached: () => reached(release), opened }));
	}

	readonly middleware: Middleware = {
		localAction: (next, action) => {
			// The handler below runs with the service as `this`; the gate is reached through this name.
			// eslint-disable-next-line @typescript-eslint/no-this-alias
			const gate = this;
			return async function (this: Service, ctx) {
				const held = gate.held?.action === action.name ? gate.held : undefined;
				if (held) gate.held = undefined;
				if (held?.when === "before") await (held.reached(), held.opened);
				const result = await next.call(this, ctx);
				if (held?.when === "after") await (held.reached(), held.opened);
				return result;
			};
		},
	};
}

const gate = new Gate();
let catalogue: Catalogue;
let api: Api;

beforeAll(async () => {
	catalogue = await startCatalogue({ middlewares: [gate.middleware] });
	api = catalogue.api;
});
afterAll(() => catalogue.stop());

const adapter = (service: string) => localService<{ adapter: Adapter }>(catalogue, service).adapter;
const body = (title: string, category: Ref, author: Ref) => ({ title, age: 10, category: { id: category.id }, author: { id: author.id } });
const gameIds = async () => (await api.get<Ref[]>("/game")).body.map(game => game.id);
/** The game as GET /game lists it. */
const listedGame = async (id: string) => (await api.get("/game")).body.find((each: Ref) => each.id === id);

describe.each([
	{ record: "author", a: "an", path: "/author", service: "authors" },
	{ record: "category", a: "a", path: "/category", service: "categories" },
] as const)("a game and a delete of its $record at the same moment", ({ record, a, path, service }) => {
	let category: Ref;
	let author: Ref;
	let target: () => Ref;
	let other: () => Ref;
	beforeEach(async () => {
		category = await api.category("Race");
		author = await api.author("Racer", "Dutch");
		target = () => (record === "author" ? author : category);
		other = () => (record === "author" ? category : author);
	});
	const refs = (moved: Ref): [Ref, Ref] => (record === "author" ? [category, moved] : [moved, author]);
	const created = (title: string) => api.put("/game", body(title, ...refs(target())));
	/** A record of this kind no game refers to yet. */
	const freshRecord = () => (record === "author" ? api.author("Fresh", "Dutch") : api.category("Fresh"));

	test(`a delete that counted no games wins: the create waits for it, then answers 400 'There is no ${record} with that Id'`, async () => {
		const counted = gate.hold("games.countBy", "after");
		const deleting = api.delete(`${path}/${target().id}`);
		const release = await counted;
		const creating = created("Too late");
		expect(await stillPending(creating)).toBe(true);
		release();
		expect(await deleting).toMatchObject({ status: 200 });
		expect(await creating).toMatchObject({ status: 400, body: { msg: `There is no ${record} with that Id` } });
		expect((await api.get("/game")).body.filter((game: { title: string }) => game.title === "Too late")).toEqual([]);
	});

	test(`a create whose game is written wins: the delete answers 400 'There are games related to this ${record}', the game is hidden until checked`, async () => {
		const checking = gate.hold(`${service}.referable`, "before");
		const before = await gameIds();
		const creating = created("First");
		const release = await checking;
		expect(await api.delete(`${path}/${target().id}`)).toMatchObject({
			status: 400,
			body: { msg: `There are games related to this ${record}` },
		});
		expect(await gameIds()).toEqual(before);
		release();
		const { status, body: answer } = await creating;
		expect(status).toBe(200);
		expect(await gameIds()).toEqual([...before, answer.game.id]);
		expect((await api.get(`${path}/${target().id}`)).status).toBe(200);
	});

	test(`an update moving a game to ${a} ${record} whose delete counted no games waits, then answers 400 and keeps the game as it was`, async () => {
		const game = await api.game("Mover", category, author);
		const fresh = await freshRecord();
		const counted = gate.hold("games.countBy", "after");
		const deleting = api.delete(`${path}/${fresh.id}`);
		const release = await counted;
		const updating = api.put(`/game/${game.id}`, body("Moved", ...refs(fresh)));
		expect(await stillPending(updating)).toBe(true);
		release();
		expect(await deleting).toMatchObject({ status: 200 });
		expect(await updating).toMatchObject({ status: 400, body: { msg: `There is no ${record} with that Id` } });
		const listed = await listedGame(game.id);
		expect(listed).toMatchObject({ title: "Mover", [record]: { id: target().id } });
	});

	test(`a delete racing an update that has recorded its new ${record} answers 400 'There are games related to this ${record}'`, async () => {
		const game = await api.game("Mover", category, author);
		const fresh = await freshRecord();
		const checking = gate.hold(`${service}.referable`, "before");
		const updating = api.put(`/game/${game.id}`, body("Moved", ...refs(fresh)));
		const release = await checking;
		expect(await api.delete(`${path}/${fresh.id}`)).toMatchObject({
			status: 400,
			body: { msg: `There are games related to this ${record}` },
		});
		release();
		expect(await updating).toMatchObject({ status: 200, body: 1 });
		const listed = await listedGame(game.id);
		expect(listed).toMatchObject({
			title: "Moved",
			[record]: { id: fresh.id },
			[record === "author" ? "category" : "author"]: { id: other().id },
		});
	});

	test(`an update to ${a} ${record} whose last write lands between the delete's two counts (another replica's write) is counted: 400`, async () => {
		const game = await api.game("Mover", category, author);
		const fresh = await freshRecord();
		const checked = gate.hold(`${service}.referable`, "after");
		const updating = api.put(`/game/${game.id}`, body("Moved", ...refs(fresh)));
		const release = await checked;
		// The games' store as a replica beside another sees it: between the count's two statements, the update commits.
		const games = localService<{ adapter: { count(params: object): Promise<number> } }>(catalogue, "games").adapter;
		const { count } = games;
		games.count = async function (this: unknown, params: object) {
			games.count = count;
			const counted = await count.call(this, params);
			release();
			expect(await updating).toMatchObject({ status: 200 });
			return counted;
		};
		try {
			expect(await api.delete(`${path}/${fresh.id}`)).toMatchObject({
				status: 400,
				body: { msg: `There are games related to this ${record}` },
			});
		} finally {
			games.count = count;
		}
		const listed = await listedGame(game.id);
		expect(listed).toMatchObject({ title: "Moved", [record]: { id: fresh.id } });
		expect((await api.get(`${path}/${fresh.id}`)).status).toBe(200);
	});

	test(`an update keeping its game's ${record} takes no claim: a delete of the ${record} while it is checked answers 400, the update 200`, async () => {
		const game = await api.game("Kept", category, author);
		const checking = gate.hold(`${service}.referable`, "before");
		const updating = api.put(`/game/${game.id}`, body("Renamed", category, author));
		const release = await checking;
		expect(await adapter("games").findById(game.id)).not.toHaveProperty("change");
		expect(await api.delete(`${path}/${target().id}`)).toMatchObject({
			status: 400,
			body: { msg: `There are games related to this ${record}` },
		});
		release();
		expect(await updating).toMatchObject({ status: 200, body: 1 });
		const listed = await listedGame(game.id);
		expect(listed).toMatchObject({ title: "Renamed", [record]: { id: target().id } });
	});

	test(`an update keeping its game's ${record}, whose game moved away and whose ${record} was deleted after its check, answers 400 and writes nothing`, async () => {
		const game = await api.game("Kept", category, author);
		const fresh = await freshRecord();
		const checked = gate.hold(`${service}.referable`, "after");
		const keeping = api.put(`/game/${game.id}`, body("Kept again", category, author));
		const release = await checked;
		expect(await api.put(`/game/${game.id}`, body("Moved", ...refs(fresh)))).toMatchObject({ status: 200 });
		expect(await api.delete(`${path}/${target().id}`)).toMatchObject({ status: 200 });
		release();
		expect(await keeping).toMatchObject({ status: 400, body: { msg: `There is no ${record} with that Id` } });
		const listed = await listedGame(game.id);
		expect(listed).toMatchObject({ title: "Moved", [record]: { id: fresh.id } });
	});

	test(`an update keeping its game's ${record} waits for an update of the game in progress, then writes last`, async () => {
		const game = await api.game("Kept", category, author);
		const fresh = await freshRecord();
		const checking = gate.hold(`${service}.referable`, "before");
		const moving = api.put(`/game/${game.id}`, body("Moved", ...refs(fresh)));
		const release = await checking;
		const keeping = api.put(`/game/${game.id}`, body("Kept again", category, author));
		expect(await stillPending(keeping)).toBe(true);
		release();
		expect(await moving).toMatchObject({ status: 200 });
		expect(await keeping).toMatchObject({ status: 200 });
		const listed = await listedGame(game.id);
		expect(listed).toMatchObject({ title: "Kept again", [record]: { id: target().id } });
	});

	test(`an update keeping its game's ${record}, checked before a move of the game took its claim, waits for the move, then writes last`, async () => {
		const game = await api.game("Kept", category, author);
		const fresh = await freshRecord();
		const checked = gate.hold(`${service}.referable`, "after");
		const keeping = api.put(`/game/${game.id}`, body("Kept again", category, author));
		const releaseKeeping = await checked;
		// The move claims the game and is held at its check: the game still refers to the kept records.
		const claimed = gate.hold(`${service}.referable`, "before");
		const moving = api.put(`/game/${game.id}`, body("Moved", ...refs(fresh)));
		const releaseMove = await claimed;
		releaseKeeping();
		expect(await stillPending(keeping)).toBe(true);
		releaseMove();
		expect(await moving).toMatchObject({ status: 200 });
		expect(await keeping).toMatchObject({ status: 200 });
		const listed = await listedGame(game.id);
		expect(listed).toMatchObject({ title: "Kept again", [record]: { id: target().id } });
	});

	test(`an update keeping its game's ${record} answers 400 when that ${record} is gone (removed around the protocol)`, async () => {
		const game = await api.game("Orphan", category, author);
		await adapter(service).removeMany({ _id: target().id });
		expect(await api.put(`/game/${game.id}`, body("Orphan", category, author))).toMatchObject({
			status: 400,
			body: { msg: `There is no ${record} with that Id` },
		});
		expect(await api.delete(`/game/${game.id}`)).toMatchObject({ status: 200 });
	});

	test(`a delete abandoned by a node that died (older than the lease) does not block a create`, async () => {
		await adapter(service).updateMany({ _id: target().id }, { $set: { deleting: { token: "dead", at: 0 } } });
		expect(await created("After the crash")).toMatchObject({ status: 200 });
	});

	test(`a game draft abandoned by a node that died does not block the delete, and is cleared by it`, async () => {
		const [draftCategory, draftAuthor] = refs(target());
		await adapter("games").insert({
			_id: `draft-${record}`,
			title: "Lost",
			age: 1,
			category: draftCategory.id,
			author: draftAuthor.id,
			draft: 0,
		});
		expect(await gameIds()).not.toContain(`draft-${record}`);
		expect(await api.delete(`${path}/${target().id}`)).toMatchObject({ status: 200 });
		expect(await adapter("games").findById(`draft-${record}`)).toBeFalsy();
	});

	test(`a game change abandoned by a node that died does not block the delete of the ${record} it was moving to`, async () => {
		const game = await api.game("Stays", category, author);
		const fresh = await freshRecord();
		await adapter("games").updateMany({ _id: game.id }, { $set: { change: { [record]: fresh.id, token: "dead", at: 0 } } });
		expect(await api.delete(`${path}/${fresh.id}`)).toMatchObject({ status: 200 });
		expect(await api.put(`/game/${game.id}`, body("Stays", category, author))).toMatchObject({ status: 200 });
	});
});
