import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Socket } from "node:net";
import path from "node:path";
import { sampleCatalogue } from "../../scripts/sample-catalogue";
import type { Api } from "../support/catalogue";
import { freePort, root, startProcess, type RunningCatalogue } from "../support/process";

const script = path.join(root, "dist/scripts/seed.js");
const TOKEN = "seed-test-token-0123456789abcdef";

/** What one run of the built seed printed, and how it exited. */
interface SeedRun {
	code: number | null;
	output: string;
}

/** Runs `node dist/scripts/seed.js` (what `npm run seed` runs after building) with `env`, for 30 s at most. */
function runSeed(env: NodeJS.ProcessEnv): Promise<SeedRun> {
	if (!existsSync(script)) throw new Error("dist/scripts/seed.js is missing: run `npm run build` (npm test does it first)");
	const { CATALOGUE_URL: _url, API_TOKEN: _token, ...inherited } = process.env;
	return new Promise((resolve, reject) => {
		execFile(process.execPath, [script], { cwd: root, env: { ...inherited, ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
			if (err?.killed) reject(new Error(`the seed did not end within 30 s:\n${stdout}${stderr}`));
			else resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, output: stdout + stderr });
		});
	});
}

const urlOf = (running: RunningCatalogue) => ({ CATALOGUE_URL: running.api.url });

/** Everything the catalogue holds, read through its lists. */
async function contents(api: Api) {
	const [categories, authors, games] = await Promise.all(["/category", "/author", "/game"].map(route => api.get(route)));
	return { categories: categories.body, authors: authors.body, games: games.body };
}

/** The catalogue's records as the sample writes them: names instead of ids, the game's category and author from the list. */
async function asSample(api: Api) {
	const { categories, authors, games } = await contents(api);
	return {
		categories: categories.map((category: { name: string }) => category.name),
		authors: authors.map(({ name, nationality }: { name: string; nationality: string }) => ({ name, nationality })),
		games: games.map((game: { title: string; age: number; category?: { name: string }; author?: { name: string } }) => ({
			title: game.title,
			age: game.age,
			category: game.category?.name,
			author: game.author?.name,
		})),
	};
}

const started: RunningCatalogue[] = [];
/** A catalogue process of the test's own, with memory storage; stopped after the test. */
async function catalogue(env: NodeJS.ProcessEnv = {}): Promise<RunningCatalogue> {
	const running = await startProcess({ STORAGE: "memory", ...env });
	started.push(running);
	return running;
}
afterEach(async () => {
	await Promise.all(started.splice(0).map(running => running.kill()));
});

test("a first run creates exactly the sample catalogue; a second run creates nothing and says so", async () => {
	const running = await catalogue();
	const { api } = running;

	const first = await runSeed(urlOf(running));
	expect(first).toEqual({ code: 0, output: expect.stringContaining("Created 28 records") });
	expect(first.output).toContain("games: 15 created, 0 already there");
	expect(await asSample(api)).toEqual(sampleCatalogue);
	// Every game's category and author is one of the sample's records, by id.
	const seeded = await contents(api);
	for (const game of seeded.games) {
		expect(seeded.categories).toContainEqual(game.category);
		expect(seeded.authors).toContainEqual(game.author);
	}

	const second = await runSeed(urlOf(running));
	expect(second).toEqual({ code: 0, output: expect.stringContaining("Nothing created") });
	expect(second.output).toContain("categories: 0 created, 5 already there");
	expect(await contents(api)).toEqual(seeded);
});

test("records already there are kept and the seed creates only the rest, without duplicates", async () => {
	const running = await catalogue();
	const { api } = running;
	const category = await api.category("Cooperative");
	const author = await api.author("Matt Leacock", "American");
	// Same title and author as the sample's Pandemic: the same game, whatever its age says.
	const game = await api.game("Pandemic", category, author, 10);
	// Same name, other nationality: not the sample's author.
	const namesake = await api.author("Reiner Knizia", "British");

	const run = await runSeed(urlOf(running));
	expect(run.code).toBe(0);
	expect(run.output).toContain("categories: 4 created, 1 already there");
	expect(run.output).toContain("authors: 7 created, 1 already there");
	expect(run.output).toContain("games: 14 created, 1 already there");

	const { categories, authors, games } = await contents(api);
	expect(categories.filter((found: { name: string }) => found.name === "Cooperative")).toEqual([category]);
	expect(categories).toHaveLength(sampleCatalogue.categories.length);
	expect(authors.filter((found: { name: string }) => found.name === "Matt Leacock")).toEqual([author]);
	expect(authors.filter((found: { name: string }) => found.name === "Reiner Knizia")).toEqual([
		namesake,
		expect.objectContaining({ nationality: "German" }),
	]);
	expect(authors).toHaveLength(sampleCatalogue.authors.length + 1);
	expect(games.filter((found: { title: string }) => found.title === "Pandemic")).toEqual([{ ...game, category, author }]);
	expect(games).toHaveLength(sampleCatalogue.games.length);
	// The sample's games go to the sample's German Knizia, not the namesake.
	const knizia = games.filter((found: { author: { name: string } }) => found.author.name === "Reiner Knizia");
	expect(knizia.map((found: { author: { nationality: string } }) => found.author.nationality)).toEqual(["German", "German"]);
});

test("against a service with API_TOKEN the seed writes with the token, and without it stops at the 401", async () => {
	const running = await catalogue({ API_TOKEN: TOKEN });

	const refused = await runSeed(urlOf(running));
	expect(refused.code).toBe(1);
	expect(refused.output).toContain("PUT /category answered 401: Changing the catalogue needs the API token");
	expect(await contents(running.api)).toEqual({ categories: [], authors: [], games: [] });

	const allowed = await runSeed({ ...urlOf(running), API_TOKEN: TOKEN });
	expect(allowed).toEqual({ code: 0, output: expect.stringContaining("Created 28 records") });
	expect(await asSample(running.api)).toEqual(sampleCatalogue);
});

test("with nothing listening at the address it fails with 1, naming the address and how to start the service", async () => {
	const port = await freePort();

	// Without CATALOGUE_URL the seed goes to PORT on this machine, where `npm start` listens.
	const run = await runSeed({ PORT: String(port) });
	expect(run.code).toBe(1);
	expect(run.output).toContain(`Cannot reach the catalogue at http://127.0.0.1:${port}`);
	expect(run.output).toContain("npm start");
});

test("a server that answers JSON other than the catalogue's lists fails the seed with 1 and one line, no stack", async () => {
	const other = createHttpServer((_req, res) => res.setHeader("Content-Type", "application/json").end("{}"));
	await new Promise<void>(resolve => other.listen(0, "127.0.0.1", resolve));
	const { port } = other.address() as { port: number };
	try {
		const run = await runSeed({ CATALOGUE_URL: `http://127.0.0.1:${port}` });
		expect(run.code).toBe(1);
		expect(run.output).toContain(`GET /category answered something other than a list: is http://127.0.0.1:${port} the game catalogue?`);
		expect(run.output).not.toMatch(/\n\s+at /);
	} finally {
		await new Promise(resolve => other.close(resolve));
	}
});

test("a server that takes the request and never answers fails the seed with 1 once its time bound (15 s) is over", async () => {
	const sockets: Socket[] = [];
	const silent = createServer(socket => sockets.push(socket));
	await new Promise<void>(resolve => silent.listen(0, "127.0.0.1", resolve));
	const { port } = silent.address() as { port: number };
	try {
		const run = await runSeed({ CATALOGUE_URL: `http://127.0.0.1:${port}` });
		expect(run.code).toBe(1);
		expect(run.output).toContain(`GET /category: the catalogue at http://127.0.0.1:${port} did not answer within 15 s`);
		expect(sockets.length).toBeGreaterThan(0);
	} finally {
		for (const socket of sockets) socket.destroy();
		await new Promise(resolve => silent.close(resolve));
	}
}, 40_000);
