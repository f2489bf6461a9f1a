import { describeError, send, sendJson, type Method } from "./http";
import { measure, type Measurement } from "./measure";
import { residentBytes } from "./processes";
import { besideListsScenario, createScenario, updateScenario } from "./scenarios";
import { addGames, seed, type Author, type Category, type Game, type Seeded } from "./seed";
import { loopDelay, type Target } from "./servers";
import type { GrowthResult } from "./table";

export interface GrowthOptions {
	categories: number;
	authors: number;
	steps: number[];
	/** Seconds of timed `GET /game` requests at each step, and of each write run. */
	seconds: number;
	concurrency: number;
	/** Connections of the create and update runs, as in the main table. */
	connections: number;
}

/** The timed requests of one step: at least this many, and at most that many, one at a time. */
const MIN_REQUESTS = 3;
const MAX_REQUESTS = 100;
/** A list of 100,000 games takes seconds; a request still running after this is a finding. */
const REQUEST_TIMEOUT_MS = 120_000;

/** The size of one answer; any other status than 200 is an error. */
async function answerSize(base: string, method: Method, path: string, body?: string): Promise<number> {
	const answer = await send(base, method, path, body, REQUEST_TIMEOUT_MS);
	if (answer.status !== 200) throw new Error(`${method} ${path} answered ${answer.status} ${answer.body.toString().slice(0, 200)}`);
	return answer.body.length;
}

/** The size of one `GET /game` answer. */
const list = (base: string) => answerSize(base, "GET", "/game");

/** `request` one at a time for `seconds`, each after `before` (untimed): the timings; answers the last one's size. */
async function timeRequests(
	seconds: number,
	timings: number[],
	before: () => Promise<void>,
	request: () => Promise<number>,
): Promise<number> {
	let answerBytes = 0;
	const started = performance.now();
	while (timings.length < MIN_REQUESTS || (performance.now() - started < seconds * 1000 && timings.length < MAX_REQUESTS)) {
		await before();
		const sent = performance.now();
		answerBytes = await request();
		timings.push(performance.now() - sent);
	}
	return answerBytes;
}

/** `GET /game` one request at a time for `seconds`, each after `before` (untimed): the timings. */
const timeLists = (base: string, seconds: number, timings: number[], before: () => Promise<void>) =>
	timeRequests(seconds, timings, before, () => list(base));

/** A page of 20 records by `property`, no filter: the issues that asked for pages timed the 100th of games. */
const page = (pageNumber: number, property: string) => ({ pageable: { pageNumber, pageSize: 20, sort: [{ property, direction: "asc" }] } });

/** The size of one `POST /game` page, the 100th unless `pageNumber` says which. */
const gamePage = (base: string, pageNumber = 99) => answerSize(base, "POST", "/game", JSON.stringify(page(pageNumber, "title")));

/** The size of the first `POST /author` page. */
const authorPage = (base: string) => answerSize(base, "POST", "/author", JSON.stringify(page(0, "name")));

/** Renames `category` to its own name: every cached game list and page becomes unreachable. */
const renamer = (base: string, category: Category) => async () => {
	const answer = await send(base, "PUT", `/category/${category.id}`, JSON.stringify({ name: category.name }), REQUEST_TIMEOUT_MS);
	if (answer.status !== 200) throw new Error(`PUT /category/{id} answered ${answer.status}`);
};

const mean = (timings: number[]) => timings.reduce((sum, ms) => sum + ms, 0) / timings.length;

/**
 * `GET /game` answered from the cache, and computed afresh: before each of those, the first
 * category is written with its own name, which makes every cached game list unreachable. The
 * longest event-loop delay while the lists computed afresh were made and sent.
 */
async function timeList(
	target: Target,
	seconds: number,
	category: Category,
): Promise<Pick<GrowthResult, "answerBytes" | "requests" | "meanMs" | "coldMs" | "listLoopMs" | "error"> & { loopSeenMs?: number }> {
	const { base } = target;
	const cached: number[] = [];
	const cold: number[] = [];
	const rename = renamer(base, category);
	let answerBytes: number | undefined;
	let earlier: Awaited<ReturnType<typeof loopDelay>>;
	try {
		// The first list at a new size warms the code paths up; it is not timed.
		answerBytes = await list(base);
		await timeLists(base, seconds, cached, async () => undefined);
		earlier = await loopDelay(target);
		answerBytes = await timeLists(base, seconds, cold, rename);
	} catch (err) {
		return { answerBytes, requests: cached.length + cold.length, error: describeError(err) };
	}
	const listLoopMs = (await loopDelay(target))?.maxMs;
	const loopSeenMs = Math.max(earlier?.maxMs ?? 0, listLoopMs ?? 0);
	return { answerBytes, requests: cached.length + cold.length, meanMs: mean(cached), coldMs: mean(cold), listLoopMs, loopSeenMs };
}

/** Renames `author` to its own name: every cached author page becomes unreachable. */
const authorRenamer = (base: string, author: Author) => async () => {
	const body = JSON.stringify({ name: author.name, nationality: author.nationality });
	const answer = await send(base, "PUT", `/author/${author.id}`, body, REQUEST_TIMEOUT_MS);
	if (answer.status !== 200) throw new Error(`PUT /author/{id} answered ${answer.status}`);
};

type Pages = Pick<GrowthResult, "pageMs" | "lastPageMs" | "authorPageMs" | "error">;

/**
 * The mean times of pages computed afresh: the 100th and the last game page (after a rename of
 * the first category each time) and the first author page (after a rename of the first author).
 */
async function timePages(base: string, seconds: number, seeded: Seeded, games: number): Promise<Pages> {
	const [hundredth, last, authors]: number[][] = [[], [], []];
	const lastPage = Math.max(0, Math.ceil(games / 20) - 1);
	try {
		await gamePage(base);
		await timeRequests(seconds, hundredth, renamer(base, seeded.categories[0]), () => gamePage(base));
		await timeRequests(seconds, last, renamer(base, seeded.categories[0]), () => gamePage(base, lastPage));
		await timeRequests(seconds, authors, authorRenamer(base, seeded.authors[0]), () => authorPage(base));
	} catch (err) {
		return { error: `pages: ${describeError(err)}` };
	}
	return { pageMs: mean(hundredth), lastPageMs: mean(last), authorPageMs: mean(authors) };
}

/** Small reads while clients list every game (scenarios.ts besideListsScenario): their latency, or why none. */
async function timeBesideLists(base: string, seeded: Seeded, games: number, { seconds, connections }: GrowthOptions) {
	const measured = await measure(base, besideListsScenario(games, seeded.authors.length), {
		durationS: seconds,
		warmupS: 1,
		connections,
	});
	const { error } = rate(measured);
	return error
		? { error: `small reads beside lists: ${error}` }
		: { beside: { rps: measured.rps, p50: measured.p50, p99: measured.p99 } };
}

/** A write run's rate, or why it has none: any answer other than a 2xx makes it a finding. */
const rate = ({ rps, failures }: Measurement) =>
	failures ? { error: `${failures.non2xx} non-2xx, ${failures.errors} socket errors` } : { rps };

type Writes = Pick<GrowthResult, "createRps" | "updateRps" | "error">;

/**
 * Creates a catalogue of `games` adds to before the next step: half as many again (at least
 * MIN_CREATES), so that the next step starts at no more games than it is named for.
 */
const createsAt = (games: number) => Math.max(MIN_CREATES, Math.round(games / 2));
const MIN_CREATES = 2000;

/** Creates (a number of them, without warm-up: each adds a game), then updates of the games `updated`, as the main table runs them: rps. */
async function timeWrites(
	base: string,
	seeded: Seeded,
	updated: Game[],
	games: number,
	{ seconds, connections }: GrowthOptions,
): Promise<Writes> {
	const run = { durationS: seconds, warmupS: 1, connections };
	const create = rate(await measure(base, createScenario(seeded, connections), { ...run, warmupS: 0, amount: createsAt(games) }));
	const update = rate(await measure(base, updateScenario(updated), run));
	return { createRps: create.rps, updateRps: update.rps, error: create.error ?? update.error };
}

/** How many games the catalogue holds (the creates of a write run add some). */
async function countGames(base: string): Promise<number> {
	const first = await sendJson<{ totalElements: number }>(base, "POST", "/game", { pageable: { pageNumber: 0, pageSize: 1 } });
	return first.totalElements;
}

/**
 * Grows a fresh catalogue to each step's number of games through the HTTP API, timing `GET /game`,
 * creates and updates, and reading every process's memory at each step. Failures are findings: recorded, then on to
 * the next step (or, when seeding failed, to the next target).
 */
export async function grow(target: Target, options: GrowthOptions, log: (line: string) => void): Promise<GrowthResult[]> {
	const results: GrowthResult[] = [];
	const memory = () => target.processes.map(child => ({ name: child.name, bytes: residentBytes(child) }));
	const seeded = await seed(target.base, { categories: options.categories, authors: options.authors, games: 0 }, options.concurrency);
	const updated: Game[] = [];
	let games = 0;
	// What a start costs with no games, to tell it from what the data costs at each step.
	const emptyRestartMs = await target.restart?.();
	for (const step of options.steps) {
		const started = performance.now();
		let last = { at: started, done: games };
		// The rate since the last line shows whether a create costs more as the catalogue grows.
		const progress = (done: number) => {
			const now = performance.now();
			const gamesPerSecond = ((done - last.done) / (now - last.at)) * 1000;
			last = { at: now, done };
			log(
				`  ${target.name}: ${done.toLocaleString("en-US")} / ${step.toLocaleString("en-US")} games (${((now - started) / 1000).toFixed(0)} s, now ${gamesPerSecond.toFixed(0)} games/s)`,
			);
		};
		try {
			const keep = (game: Game, i: number) => (i < options.connections ? (updated[i] = game) : undefined);
			await addGames(target.base, seeded, games, step, options.concurrency, keep, progress);
		} catch (err) {
			results.push({ target: target.name, games: step, memory: memory(), error: `seeding failed: ${describeError(err)}` });
			log(`  ${target.name}: seeding ${step.toLocaleString("en-US")} games FAILED: ${describeError(err)}`);
			break;
		}
		await loopDelay(target);
		const { loopSeenMs, ...timed } = await timeList(target, options.seconds, seeded.categories[0]);
		const pages = await timePages(target.base, options.seconds, seeded, step);
		const beside = await timeBesideLists(target.base, seeded, step, options).catch(err => ({
			error: describeError(err),
			beside: undefined,
		}));
		const writes = await timeWrites(target.base, seeded, updated, step, options).catch((err): Writes => ({
			error: describeError(err),
		}));
		const loop = await loopDelay(target);
		// Last: the new process's memory is not the one that served the step.
		const rss = memory();
		const restartMs = await target.restart?.().catch(() => undefined);
		const result: GrowthResult = {
			target: target.name,
			games: step,
			...timed,
			...pages,
			...beside,
			...writes,
			loopMs: loop === undefined ? loopSeenMs : Math.max(loopSeenMs ?? 0, loop.maxMs),
			restartMs,
			emptyRestartMs,
			error: timed.error ?? pages.error ?? beside.error ?? writes.error,
			memory: rss,
		};
		results.push(result);
		const summary = timed.error
			? `FAILED: ${timed.error}`
			: `${timed.requests} lists of ${timed.answerBytes} bytes, mean ${timed.meanMs?.toFixed(0)} ms cached, ${timed.coldMs?.toFixed(0)} ms computed`;
		const written = writes.error
			? `writes FAILED: ${writes.error}`
			: `${writes.createRps?.toFixed(0)} creates/s, ${writes.updateRps?.toFixed(0)} updates/s`;
		log(`  ${target.name}: ${step.toLocaleString("en-US")} games: ${summary}; ${written}`);
		games = await countGames(target.base);
	}
	return results;
}
