import { randomUUID } from "node:crypto";
import { Api } from "../support/catalogue";
import { ReadLoad } from "../support/load";
import { startNats, startNatsCluster } from "../support/nats";
import { reachesEveryService } from "../support/cluster";
import { freePorts, startNode, waitFor, type Node } from "../support/process";
import { rawRequest, type RawAnswer } from "../support/raw-http";
import { startRedis, type RedisServer } from "../support/redis";
import type { Author } from "../../services/authors.types";
import type { Game, ListedGame } from "../../services/games.types";

// The cache's promise (docs/caching.md): once a write is answered, every later read through any
// gateway answers with it. Here the catalogue runs as an operator runs it with two gateways: a
// process per service and two `SERVICES=api` processes, A and B, sharing one Redis. Both gateways
// are kept busy with reads, and each round renames an author through A, then reads through B at
// once: the author list, the game list (which embeds the author), and the author list again with
// the ETag B gave just before the rename, which must no longer be answered 304. Only HTTP and the
// processes' environment are used, so the test holds whatever the cache does inside.

const ROUNDS = 2000;
/** Fewer rounds than this within ROUNDS_MS, and the test says so rather than pass on too few. */
const MIN_ROUNDS = 500;
/** Connections of the read load on each gateway: with two cores, the CPUs are busy all along. */
const LOAD_CONNECTIONS = 16;
/** The rounds stop after this even if fewer than ROUNDS have run; so does the load. */
const ROUNDS_MS = 50_000;
const START_MS = 40_000;
/** How many stale rounds a failure shows. */
const EXAMPLES = 5;
const NATIONALITY = "German";

/** The NATS server each node connects to, and how to stop them all. */
interface NatsLayout {
	gatewayA: string;
	gatewayB: string;
	services: string;
	stop(): Promise<void>;
}

interface Catalogue {
	/** The base URLs of gateways A and B. */
	a: string;
	b: string;
	nodes: Node[];
	/** Kills every node. */
	stop(): Promise<void>;
}

/**
 * A node per service and the two gateways, sharing `redis`, each on the NATS server `nats` names;
 * resolves once both gateways reach every service.
 */
async function startCatalogue(nats: NatsLayout, redis: RedisServer): Promise<Catalogue> {
	const namespace = `read-your-writes-${randomUUID()}`;
	const env = (services: string, transporter: string, port?: number): NodeJS.ProcessEnv => ({
		SERVICES: services,
		TRANSPORTER: transporter,
		NAMESPACE: namespace,
		STORAGE: "memory",
		REDIS_URL: redis.url,
		START_TIMEOUT: "20",
		...(port !== undefined && { PORT: String(port) }),
	});
	const [portA, portB] = await freePorts(2);
	const nodes = [
		startNode(env("authors", nats.services)),
		startNode(env("categories", nats.services)),
		startNode(env("games", nats.services)),
		startNode(env("api", nats.gatewayA, portA)),
		startNode(env("api", nats.gatewayB, portB)),
	];
	const catalogue: Catalogue = {
		a: `http://127.0.0.1:${portA}`,
		b: `http://127.0.0.1:${portB}`,
		nodes,
		stop: async () => void (await Promise.all(nodes.map(node => node.kill()))),
	};
	try {
		for (const gateway of [catalogue.a, catalogue.b])
			await waitFor(
				`the gateway at ${gateway} reaches authors, categories and games`,
				reachesEveryService(new Api(gateway)),
				nodes,
				START_MS,
			);
	} catch (err) {
		await catalogue.stop();
		throw err;
	}
	return catalogue;
}

/** What each round reads: an author, and a game of theirs. */
interface Records {
	author: Author;
	game: Game;
}

/**
 * The records, created through A, once B hears of A's writes. A node tells the others of its
 * services up to a second after it has started (moleculer debounces that message), and a gateway
 * answers before then: until the writers know it listens, it hears of no write at all. Waiting for
 * that here keeps the rounds about the race that lasts.
 */
async function seed(catalogue: Catalogue): Promise<Records> {
	const a = new Api(catalogue.a);
	const b = new Api(catalogue.b);
	const author = (await a.author("Author r0", NATIONALITY)) as Author;
	const category = await a.category("Read your writes");
	const body = { title: "Read your writes", age: 10, category: { id: category.id }, author: { id: author.id } };
	let game: Game | undefined;
	// The games node may not see authors and categories yet, though both gateways do.
	await waitFor(
		"a game can be created through gateway A",
		async () => {
			const answer = await a.put("/game", body);
			if (answer.status === 200) game = answer.body.game;
			return answer.status === 200;
		},
		catalogue.nodes,
	);
	let attempt = 0;
	await waitFor(
		"gateway B lists a rename made through gateway A",
		async () => {
			const name = `Author s${++attempt}`;
			await a.put(`/author/${author.id}`, { name, nationality: NATIONALITY });
			const [authors, games] = await Promise.all([b.get<Author[]>("/author"), b.get<ListedGame[]>("/game")]);
			return authors.body.some(each => each.name === name) && games.body.some(each => each.author?.name === name);
		},
		catalogue.nodes,
	);
	return { author, game: game! };
}

/** What B answered right after a round's rename was answered. */
interface Round {
	n: number;
	/** The name the round gave the author. */
	name: string;
	/** The author's name in B's author list, and in B's game list. */
	authorListed?: string;
	gameListed?: string;
	/** The status of B's author list asked with the tag B gave just before the rename. */
	conditional?: number;
	/** Requests that were not answered as they should be: the rename, or a read. */
	failures: string[];
}

const parsed = <T>(answer: RawAnswer): T => JSON.parse(answer.body.toString("utf8")) as T;
const failure = (what: string, answer: RawAnswer) => `${what} answered ${answer.status}: ${answer.body.toString("utf8").slice(0, 200)}`;

/** Reads through B, the rename through A, then three reads through B at once. */
async function round(catalogue: Catalogue, { author, game }: Records, n: number): Promise<Round> {
	const [before] = await Promise.all([rawRequest(`${catalogue.b}/author`), rawRequest(`${catalogue.b}/game`)]);
	const name = `Author r${n}`;
	const rename = await rawRequest(`${catalogue.a}/author/${author.id}`, "PUT", {}, { name, nationality: NATIONALITY });
	if (rename.status !== 200) return { n, name, failures: [failure("PUT /author/{id} through A", rename)] };
	const [authors, games, conditional] = await Promise.all([
		rawRequest(`${catalogue.b}/author`),
		rawRequest(`${catalogue.b}/game`),
		rawRequest(`${catalogue.b}/author`, "GET", { "If-None-Match": String(before.headers.etag) }),
	]);
	return {
		n,
		name,
		authorListed: authors.status === 200 ? parsed<Author[]>(authors).find(each => each.id === author.id)?.name : undefined,
		gameListed: games.status === 200 ? parsed<ListedGame[]>(games).find(each => each.id === game.id)?.author?.name : undefined,
		conditional: conditional.status,
		failures: [
			...(authors.status === 200 ? [] : [failure("GET /author through B", authors)]),
			...(games.status === 200 ? [] : [failure("GET /game through B", games)]),
			...([200, 304].includes(conditional.status) ? [] : [failure("GET /author through B with If-None-Match", conditional)]),
		],
	};
}

const staleAuthorList = (r: Round) => r.authorListed !== undefined && r.authorListed !== r.name;
const staleGameList = (r: Round) => r.gameListed !== undefined && r.gameListed !== r.name;
const stale304 = (r: Round) => r.conditional === 304;

function describeRound(r: Round): string {
	const shown = (name: string | undefined) => (name === r.name ? "the new name" : JSON.stringify(name ?? null));
	return (
		`round ${r.n}, renamed "${r.name}" through A; then B's author list showed ${shown(r.authorListed)}, its game list ` +
		`${shown(r.gameListed)}, and B answered the tag from before the rename with ${r.conditional}`
	);
}

/** The rounds, with read load on both gateways, and what they found. */
async function renameUnderLoad(catalogue: Catalogue, scenario: string) {
	const records = await seed(catalogue);
	const loads = [
		new ReadLoad(catalogue.b, "/game", LOAD_CONNECTIONS, ROUNDS_MS),
		new ReadLoad(catalogue.a, "/author", LOAD_CONNECTIONS, ROUNDS_MS),
	];
	const started = Date.now();
	const rounds: Round[] = [];
	try {
		for (let n = 1; n <= ROUNDS && Date.now() - started < ROUNDS_MS; n++) rounds.push(await round(catalogue, records, n));
	} finally {
		await Promise.all(loads.map(load => load.stop()));
	}
	const found = {
		rounds: rounds.length,
		staleAuthorLists: rounds.filter(staleAuthorList).length,
		staleGameLists: rounds.filter(staleGameList).length,
		stale304s: rounds.filter(stale304).length,
		examples: rounds
			.filter(r => staleAuthorList(r) || staleGameList(r) || stale304(r))
			.slice(0, EXAMPLES)
			.map(describeRound),
	};
	console.log(
		`${scenario}: ${found.rounds} rounds in ${((Date.now() - started) / 1000).toFixed(1)} s, stale: ${found.staleAuthorLists} author ` +
			`lists, ${found.staleGameLists} game lists, ${found.stale304s} 304s; load: ${loads.join("; ")}`,
	);
	return { found, failures: rounds.flatMap(r => r.failures.map(text => `round ${r.n}: ${text}`)), loads };
}

/** The test of one layout of the NATS servers, which `startNatsLayout` starts. */
function describeLayout(name: string, startNatsLayout: () => Promise<NatsLayout>) {
	describe(name, () => {
		let redis: RedisServer | undefined;
		let nats: NatsLayout | undefined;
		let catalogue: Catalogue | undefined;

		beforeAll(async () => {
			redis = await startRedis();
			nats = await startNatsLayout();
			catalogue = await startCatalogue(nats, redis);
		}, START_MS + 20_000);

		afterAll(async () => {
			await catalogue?.stop();
			await nats?.stop();
			await redis?.stop();
		}, 20_000);

		test(
			`up to ${ROUNDS} rounds in ${ROUNDS_MS / 1000} s: once a rename is answered through gateway A, gateway B at once lists ` +
				"the new name among the authors and in the games, and answers its tag from before the rename with 200",
			async () => {
				const { found, failures, loads } = await renameUnderLoad(catalogue!, name);
				expect(found).toEqual({ rounds: found.rounds, staleAuthorLists: 0, staleGameLists: 0, stale304s: 0, examples: [] });
				expect(found.rounds).toBeGreaterThanOrEqual(MIN_ROUNDS);
				expect(failures).toEqual([]);
				// The race seldom shows without the load: a load that failed would leave the test blind.
				expect(loads.filter(load => load.failed > 0 || load.answered === 0).map(String)).toEqual([]);
			},
			ROUNDS_MS + 30_000,
		);
	});
}

// With one server on two busy cores, the scheduler favours nats-server, which sleeps most of the
// time: it hands B the news before the client's next request nearly always (0 to 1 stale round in
// 1,000 here). A server with a smaller share of the CPUs than its neighbours, as a container with
// a small CPU request or limit has, hands it later: at the lowest priority it shows the race as
// often as it showed outside the tests, about once in 100 rounds.
describeLayout("one nats-server (at the lowest CPU priority) for the two gateways and the three services, under read load", async () => {
	const nats = await startNats(10_000, undefined, { niceness: 19 });
	return { gatewayA: nats.url, gatewayB: nats.url, services: nats.url, stop: nats.stop };
});

describeLayout(
	"gateway A, gateway B and the three services each on their own server of a three-server NATS cluster, under read load",
	async () => {
		const cluster = await startNatsCluster(3);
		const [a, b, services] = cluster.servers.map(server => server.url);
		return { gatewayA: a, gatewayB: b, services, stop: cluster.stop };
	},
);
