// First: reads .env, then the configuration (a bad setting is one line).
import "../lib/config/load";
import type { Author, AuthorBody } from "../services/authors.types";
import type { Category } from "../services/categories.types";
import type { GameBody, ListedGame } from "../services/games.types";
import { sampleCatalogue } from "./sample-catalogue";
import { missingAuthors, missingCategories, missingGames, SeedError, seedTarget, summary, type SeedTarget, type Tally } from "./seed-plan";

/** Longer than the service's own REQUEST_TIMEOUT (10 s), so its 504 arrives before the seed gives up. */
const REQUEST_TIMEOUT_MS = 15_000;

/** What a failure says about why fetch itself failed: fetch says "fetch failed", its cause says why. */
const reason = (err: unknown) => (err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err));

/** The `msg` of a JSON failure body, or the start of whatever else came back. */
function message(text: string): string {
	try {
		const body: unknown = JSON.parse(text);
		if (typeof body === "object" && body !== null && "msg" in body && typeof body.msg === "string") return body.msg;
	} catch {
		// Not JSON: the text itself says more than a parse error would.
	}
	return text.slice(0, 200) || "(empty body)";
}

/**
 * Sends one request to the catalogue and returns its JSON answer. Throws a SeedError on no answer
 * (unreachable, or none within REQUEST_TIMEOUT_MS), on a status other than 2xx (with its `msg`)
 * and on an answer that is not JSON.
 */
async function request<T>(target: SeedTarget, method: "GET" | "PUT", path: string, body?: unknown): Promise<T> {
	const headers: Record<string, string> = body === undefined ? {} : { "Content-Type": "application/json" };
	if (method !== "GET" && target.token !== null) headers.Authorization = `Bearer ${target.token}`;
	let status: number;
	let text: string;
	try {
		const response = await fetch(target.url + path, {
			method,
			headers,
			body: body === undefined ? undefined : JSON.stringify(body),
			signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
		});
		status = response.status;
		text = await response.text();
	} catch (err) {
		if (err instanceof DOMException && err.name === "TimeoutError")
			throw new SeedError(`${method} ${path}: the catalogue at ${target.url} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`);
		throw new SeedError(
			`Cannot reach the catalogue at ${target.url} (${reason(err)}). Is it running? Start it with \`npm start\` in another terminal, or set CATALOGUE_URL to where it runs.`,
		);
	}
	if (status < 200 || status > 299) throw new SeedError(`${method} ${path} answered ${status}: ${message(text)}`);
	try {
		return JSON.parse(text) as T;
	} catch {
		throw new SeedError(`${method} ${path} answered ${status} with something other than JSON: is ${target.url} the game catalogue?`);
	}
}

/**
 * Creates, one after the other (so the catalogue's id order is the sample's order), the sample's
 * records the catalogue lacks, and returns how many it created and found of each kind.
 */
async function seed(target: SeedTarget): Promise<Tally[]> {
	const categories = await request<Category[]>(target, "GET", "/category");
	const authors = await request<Author[]>(target, "GET", "/author");
	const games = await request<ListedGame[]>(target, "GET", "/game");
	for (const [path, list] of [
		["/category", categories],
		["/author", authors],
		["/game", games],
	] as const)
		if (!Array.isArray(list))
			throw new SeedError(`GET ${path} answered something other than a list: is ${target.url} the game catalogue?`);

	const newCategories = missingCategories(sampleCatalogue, categories);
	for (const name of newCategories)
		categories.push((await request<{ category: Category }>(target, "PUT", "/category", { name })).category);
	const newAuthors = missingAuthors(sampleCatalogue, authors);
	for (const author of newAuthors)
		authors.push((await request<{ author: Author }>(target, "PUT", "/author", author satisfies AuthorBody)).author);
	const newGames = missingGames(sampleCatalogue, { categories, authors, games });
	for (const game of newGames) await request(target, "PUT", "/game", game satisfies GameBody);

	const tally = (kind: Tally["kind"], created: number): Tally => ({ kind, created, present: sampleCatalogue[kind].length - created });
	return [tally("categories", newCategories.length), tally("authors", newAuthors.length), tally("games", newGames.length)];
}

/** `npm run seed`: fills the running catalogue with the sample; exits with 1, saying why, when it cannot. */
async function main(): Promise<void> {
	try {
		const target = seedTarget(process.env);
		console.log(`Seeding the catalogue at ${target.url}`);
		console.log(summary(await seed(target)));
	} catch (err) {
		console.error(err instanceof SeedError ? err.message : `Seeding failed: ${(err as Error).message}`);
		process.exitCode = 1;
	}
}

void main();
