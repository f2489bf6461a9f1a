import { send, type Answer, type Method } from "./http";
import { gameBody, type Game, type Seeded } from "./seed";

interface ScenarioRequest {
	/** The scenario's method unless set. */
	method?: Method;
	path: string;
	body?: string;
}

/** One kind of request the benchmark fires for a whole run. */
export interface Scenario {
	name: string;
	method: Method;
	/** Connection `i` sends `requests[i % length]` (one request, or several in turn) again and again. */
	requests: (ScenarioRequest | ScenarioRequest[])[];
	/** Other clients sending other requests for as long: only the scenario's own are measured. */
	background?: { connections: number; requests: ScenarioRequest[]; method: Method };
	/** The share of the ceiling's requests per second the embedded service is to reach. */
	embeddedTarget: number;
	/** The share of the embedded service's requests per second the distributed one is to reach; DISTRIBUTED_TARGET when unset. */
	distributedTarget?: number;
	/** What the request is about, for the header above the table. */
	detail: string;
}

/** A scenario's distributed run is to reach this share of the embedded one's requests per second, unless it says otherwise. */
export const DISTRIBUTED_TARGET = 0.5;

const PAGE = JSON.stringify({ pageable: { pageNumber: 0, pageSize: 10, sort: [{ property: "name", direction: "desc" }] } });
const GAME_PAGE = JSON.stringify({ pageable: { pageNumber: 1, pageSize: 20, sort: [{ property: "title", direction: "desc" }] } });

/** The body that writes a game exactly as it is stored, so the update changes nothing anyone reads. */
export const unchanged = (game: Game) =>
	JSON.stringify({ title: game.title, age: game.age, category: { id: game.category }, author: { id: game.author } });

/**
 * Each connection updates a game of its own: updates of one game wait for each other (the
 * integrity protocol's claim), and the benchmark measures the update, not that queue.
 */
export function updateScenario(games: Game[]): Scenario {
	return {
		name: "PUT /game/{id}",
		method: "PUT",
		requests: games.map(game => ({ path: `/game/${game.id}`, body: unchanged(game) })),
		embeddedTarget: 0.15,
		detail: `full update of ${games.length} games, one per connection, to their own values`,
	};
}

/** Each connection creates games of its own title, category and author: the catalogue grows during the run. */
export function createScenario(seeded: Pick<Seeded, "categories" | "authors">, connections: number): Scenario {
	return {
		name: "PUT /game",
		method: "PUT",
		requests: Array.from({ length: connections }, (_, i) => ({ path: "/game", body: JSON.stringify(gameBody(i, seeded)) })),
		embeddedTarget: 0.1,
		detail: "a new game per request, over the seeded categories and authors",
	};
}

/** Clients listing every game while others read small answers: the small reads' latency is what is measured. */
const LISTING_CLIENTS = 4;

/**
 * 90% reads of lists and pages, 10% writes: each connection sends the nine reads, then an update
 * of a game of its own (to its own values, as the update scenario), and again.
 */
function mixedScenario(seeded: Seeded, updated: Game[], filtered: string): Scenario {
	const reads: ScenarioRequest[] = [
		{ method: "GET", path: "/game" },
		{ method: "POST", path: "/game", body: GAME_PAGE },
		{ method: "GET", path: "/author" },
		{ method: "POST", path: "/author", body: PAGE },
		{ method: "GET", path: filtered },
		{ method: "GET", path: "/category" },
		{ method: "POST", path: "/game", body: GAME_PAGE },
		{ method: "GET", path: "/author" },
		{ method: "POST", path: "/author", body: PAGE },
	];
	return {
		name: "Mixed: 90% reads, 10% updates",
		method: "GET",
		requests: updated.map(game => [...reads, { method: "PUT", path: `/game/${game.id}`, body: unchanged(game) }]),
		embeddedTarget: 0.15,
		detail: `per connection: GET /game, the game page, GET /author, the author page, the filtered list, GET /category, the two pages again, then an update of its own game; ${seeded.games.length} games`,
	};
}

/** Small reads (`GET /author`) while LISTING_CLIENTS other clients list every game, again and again. */
export function besideListsScenario(games: number, authors: number): Scenario {
	return {
		name: `GET /author beside ${LISTING_CLIENTS} listing`,
		method: "GET",
		requests: [{ path: "/author" }],
		background: { connections: LISTING_CLIENTS, method: "GET", requests: [{ path: "/game" }] },
		embeddedTarget: 0.1,
		detail: `all ${authors} authors, while ${LISTING_CLIENTS} other clients list all ${games} games`,
	};
}

/**
 * The nine scenarios over a seeded catalogue. The filtered list searches for a word of the first
 * game's title within that game's category, so it always finds some games. The create comes last:
 * the games it adds would change the answers of the others.
 */
export function scenarios(seeded: Seeded, connections: number): Scenario[] {
	const [first] = seeded.games;
	const word = first.title.split(" ")[1].toLowerCase();
	const found = seeded.games.filter(game => game.category === first.category && game.title.toLowerCase().includes(word)).length;
	const updated = seeded.games.slice(0, Math.min(connections, seeded.games.length));
	const filtered = `/game?title=${word}&idCategory=${first.category}`;
	return [
		{
			name: "GET /game",
			method: "GET",
			requests: [{ path: "/game" }],
			// A hit is the kept JSON written to the socket, in both layouts (docs/caching.md).
			embeddedTarget: 0.35,
			distributedTarget: 0.75,
			detail: `all ${seeded.games.length} games, populated`,
		},
		{
			name: "GET /game?title&idCategory",
			method: "GET",
			requests: [{ path: filtered }],
			embeddedTarget: 0.2,
			detail: `title "${word}" in one category: ${found} games`,
		},
		{ name: "POST /author (page)", method: "POST", requests: [{ path: "/author", body: PAGE }], embeddedTarget: 0.2, detail: PAGE },
		{
			name: "POST /game (page)",
			method: "POST",
			requests: [{ path: "/game", body: GAME_PAGE }],
			embeddedTarget: 0.2,
			detail: `${GAME_PAGE}, populated`,
		},
		updateScenario(updated),
		{
			name: "GET /author",
			method: "GET",
			requests: [{ path: "/author" }],
			embeddedTarget: 0.2,
			detail: `all ${seeded.authors.length} authors`,
		},
		besideListsScenario(seeded.games.length, seeded.authors.length),
		mixedScenario(seeded, updated, filtered),
		createScenario(seeded, connections),
	];
}

/** What the ceiling answers to one request, as the catalogue answered it. */
export interface Route {
	method: Method;
	path: string;
	answer: Answer;
}

/**
 * Sends each method and path of every scenario once (the create's bodies all go to one path, so it
 * adds one game); each must be a 200, or the benchmark stops here.
 */
export async function capture(base: string, all: Scenario[]): Promise<Route[]> {
	const routes: Route[] = [];
	for (const scenario of all)
		for (const { method = scenario.method, path, body } of [...scenario.requests.flat(), ...(scenario.background?.requests ?? [])]) {
			if (routes.some(route => route.method === method && route.path === path)) continue;
			const answer = await send(base, method, path, body);
			if (answer.status !== 200)
				throw new Error(`${scenario.name}: ${method} ${path} answered ${answer.status} ${answer.body.toString().slice(0, 300)}`);
			routes.push({ method, path, answer });
		}
	return routes;
}
