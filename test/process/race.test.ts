import isEqual from "lodash/isEqual";
import type { Answer, Api } from "../support/catalogue";
import { startCluster, type Cluster } from "../support/cluster";
import { replIntegrity } from "../support/repl";
import type { Author } from "../../services/authors.types";
import type { Category } from "../../services/categories.types";
import type { Game, ListedGame } from "../../services/games.types";
import { inPool } from "../support/pool";

// Issue 4: a game only references an existing category and author, and a category or author with
// games cannot be deleted. Checked by looking first and writing after, a game write and a delete
// that race can both succeed and leave an orphan. Each round here fires one of each at the same
// moment across four processes over NATS: exactly one may win, and what is left is the winner's.
// An update of a game already on the record (`keep`) must always win: a delete counts that game.

type Target = "author" | "category";
/** `keep`: an update of a game that already refers to the record, to its own values (the update's way without a claim). */
type Write = "create" | "update" | "keep";
type Referenced = Author | Category;
type Reply = Answer<Partial<{ msg: string; game: Game }>>;

const KINDS: [Write, Target][] = [
	["create", "author"],
	["create", "category"],
	["update", "author"],
	["update", "category"],
	["keep", "author"],
	["keep", "category"],
];
// 128 rounds of each kind.
const ROUNDS = 768;
// Rounds racing at once: enough to keep every process busy, so the two requests of a round
// interleave inside the services, and few enough for two cores to stay well within the timeouts.
const IN_FLIGHT = 8;

/** What the loser answers: the write when the delete won, the delete when the write won. */
const LOST = {
	author: { write: "There is no author with that Id", remove: "There are games related to this author" },
	category: { write: "There is no category with that Id", remove: "There are games related to this category" },
} as const;

interface Round {
	n: number;
	write: Write;
	target: Target;
	/** Fresh for this round: the record the write names and the delete removes. */
	record: Referenced;
	/** For an update: the game to move onto `record`, referring to the base records until then; for `keep`, a game on `record`. */
	game?: Game;
}

interface Race {
	write: Reply;
	remove: Reply;
}

let cluster: Cluster;
let api: Api;
/** An author and a category no round deletes: what the rest of each game refers to. */
let base: { author: Author; category: Category };
let rounds: Round[];

const title = (n: number) => `Race ${n}`;

/** Fires the round's game write and its delete at the same moment; both answers. */
async function race({ n, target, record, game }: Round): Promise<Race> {
	const body = {
		title: title(n),
		age: 10,
		author: { id: base.author.id },
		category: { id: base.category.id },
		[target]: { id: record.id },
	};
	const [write, remove] = await Promise.all([
		game ? api.put(`/game/${game.id}`, body) : api.put("/game", body),
		api.delete(`/${target}/${record.id}`),
	]);
	return { write, remove };
}

/** What is wrong with one round, given the catalogue's games and kept record ids after all rounds. */
function problems(round: Round, { write, remove }: Race, games: ListedGame[], kept: Set<string>): string[] {
	const told = (reply: Reply) => `${reply.status}${reply.body?.msg ? ` "${reply.body.msg}"` : ""}`;
	if ((write.status === 200) === (remove.status === 200)) return [`the write answered ${told(write)} and the delete ${told(remove)}`];
	const writeWon = write.status === 200;
	const found: string[] = [];
	// The game already refers to the record: every delete of it counts the game.
	if (round.write === "keep" && !writeWon) found.push("the delete won against a game referring to its record");
	const loser = writeWon ? remove : write;
	const text = LOST[round.target][writeWon ? "remove" : "write"];
	if (loser.status !== 400 || loser.body?.msg !== text) found.push(`the loser answered ${told(loser)}, not 400 "${text}"`);
	if (kept.has(round.record.id) !== writeWon)
		found.push(`the ${round.target} is ${writeWon ? "gone though the write won" : "kept though its delete won"}`);
	// The game on the fresh record if the write won; else an update left it on the base records
	// and a create left no game at all.
	const refs = writeWon ? { ...base, [round.target]: round.record } : base;
	const game = round.game ?? (writeWon ? write.body.game : undefined);
	const expected = game && { ...game, author: refs.author, category: refs.category };
	const listed = games.find(each => (round.game ? each.id === round.game.id : each.title === title(round.n)));
	if (!isEqual(listed, expected)) found.push(`GET /game lists ${JSON.stringify(listed)}, not ${JSON.stringify(expected)}`);
	return found;
}

beforeAll(async () => {
	cluster = await startCluster({ storage: "memory" });
	api = cluster.api;
	base = { author: await api.author("Base", "German"), category: await api.category("Base") };
	// Fresh records for every round, made beforehand, so that no round depends on another.
	const numbers = Array.from({ length: ROUNDS }, (_, n) => n);
	rounds = await inPool(numbers, IN_FLIGHT, async n => {
		const [write, target] = KINDS[n % KINDS.length];
		const record = target === "author" ? await api.author(title(n), "Nowhere") : await api.category(title(n));
		const on = { ...base, ...(write === "keep" ? { [target]: record } : {}) };
		const game = write === "create" ? undefined : await api.game(title(n), on.category, on.author, 10);
		return { n, write, target, record, game };
	});
}, 60_000);

afterAll(() => cluster?.stop());

describe(`${ROUNDS} races, each a game create, move or update in place against a delete of the author or category it names`, () => {
	test("each race has one winner, the loser answers its documented 400, and the catalogue is left as the winner made it", async () => {
		const races = await inPool(rounds, IN_FLIGHT, race);
		// The state read once after every round: reads between rounds would slow the races apart.
		const [games, authors, categories] = await Promise.all([
			api.get<ListedGame[]>("/game"),
			api.get<Author[]>("/author"),
			api.get<Category[]>("/category"),
		]);
		const kept = new Set([...authors.body, ...categories.body].map(record => record.id));
		const violations = rounds.flatMap((round, i) =>
			problems(round, races[i], games.body, kept).map(
				problem => `round ${round.n} (${round.write} game, delete ${round.target}): ${problem}`,
			),
		);
		expect(violations).toEqual([]);
	}, 60_000);

	test("afterwards the operators' integrity check finds no orphan game", async () => {
		const { TRANSPORTER, NAMESPACE } = cluster.env("");
		expect(await replIntegrity({ TRANSPORTER, NAMESPACE })).toContain("Integrity check passed");
	}, 30_000);
});
