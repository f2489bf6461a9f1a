import type { ServiceName } from "../../lib/catalogue/services";
import { within } from "../support/catalogue";
import { startCluster, type Cluster } from "../support/cluster";
import { HANG_MS, Load, send, show, type Outcome, type Ref, type Write } from "../support/load";
import { waitFor } from "../support/process";
import { replIntegrity } from "../support/repl";

// Faults under load, on the catalogue as an operator runs it: four processes over a NATS server of
// the test's own, SQLite on disk. Writers send PUT /author and PUT /game through the gateway
// (half on fresh connections, half on keep-alive ones, as proxies do); every outcome is recorded,
// and every write that got a 200 must be stored afterwards.

const REQUEST_TIMEOUT_MS = 3000;
/** A failure must come within REQUEST_TIMEOUT plus this (the gateway's own work, a busy machine). */
const MARGIN_MS = 2000;
/** "At once": well under REQUEST_TIMEOUT. */
const FAST_MS = 1000;
/** A killed node is noticed within two heartbeat checks (heartbeatTimeout 4 s), plus margin. */
const NOTICE_MS = 12_000;
/** A node exits, or the cluster recovers, within this. */
const RECOVER_MS = 20_000;
// Nodes log at fatal only: a failed wait prints their output, which would be thousands of 504 stack traces.
const ENV = { REQUEST_TIMEOUT: String(REQUEST_TIMEOUT_MS / 1000), LOGLEVEL: "fatal" };
const UNAVAILABLE = "The service is temporarily unavailable";

/** 503 or 504 with the unavailable text (an outage is not the request's fault), within REQUEST_TIMEOUT plus margin. */
const cleanFailure = (o: Outcome) =>
	(o.status === 503 || o.status === 504) && o.body?.msg === UNAVAILABLE && o.ended - o.started <= REQUEST_TIMEOUT_MS + MARGIN_MS;
const unavailableAtOnce = (o: Outcome) => o.status === 503 && o.body?.msg === UNAVAILABLE && o.ended - o.started < FAST_MS;

/** A cluster of the describe's own, with file storage, a category and an author; `nodes(x)` are its nodes but x. */
function clusterPerDescribe(access: boolean, env: NodeJS.ProcessEnv = {}) {
	const ctx = {} as { cluster: Cluster; base: string; refs: { category: Ref; author: Ref }; load?: Load };
	beforeAll(async () => {
		ctx.cluster = await startCluster({ storage: "file", access, env: { ...ENV, ...env } });
		const { api } = ctx.cluster;
		ctx.base = api.url;
		ctx.refs = {
			category: await within(5000, api.category("Faults"), "a category"),
			author: await within(5000, api.author(), "an author"),
		};
	}, 40_000);
	afterAll(async () => {
		await ctx.load?.stop();
		await ctx.cluster?.stop();
	});
	const nodes = (...but: ServiceName[]) => [...ctx.cluster.nodes].filter(([name]) => !but.includes(name)).map(([, node]) => node);
	const load = (writers: number, pauseMs: number, writes: Write[]) => (ctx.load = new Load(ctx.base, ctx.refs, writers, pauseMs, writes));
	return { ctx, nodes, load };
}

/**
 * Fails unless every write that got a 200 is listed by GET /author or GET /game, and the operators'
 * REPL finds no game whose author or category is missing; returns the ids and names listed.
 */
async function expectNothingLost(cluster: Cluster, outcomes: Outcome[]): Promise<Set<string>> {
	const stored = new Set<string>();
	for (const path of ["/author", "/game"]) {
		const listed = (await within(5000, cluster.api.get(path), `GET ${path}`)).body as { id: string; name?: string; title?: string }[];
		listed.forEach(({ id, name, title }) => stored.add(id).add((name ?? title)!));
	}
	expect(outcomes.filter(o => o.status === 200 && !stored.has(o.body[o.write].id)).map(show)).toEqual([]);
	// The REPL as an operator starts it: with the access rules on, as its own kind.
	const { TRANSPORTER, NAMESPACE, NATS_ACCESS } = cluster.env("");
	const repl = NATS_ACCESS ? { TRANSPORTER: cluster.nats.urlAs("repl"), NATS_ACCESS } : { TRANSPORTER };
	expect(await replIntegrity({ ...repl, NAMESPACE })).toContain("Integrity check passed");
	return stored;
}

// Twice: as a cluster runs by default, and with the broker's access rules (NATS_ACCESS=on, docs/security.md "The broker"), where
// NATS balances the calls: a node that stops leaves its actions' subjects, and no call sent meanwhile may be lost with it.
describe.each([
	["without the broker's access rules", false],
	["with the broker's access rules (NATS_ACCESS=on)", true],
])("%s", (_rules, access) => {
	describe("broker fault: NATS stopped and restarted under load", () => {
		const { ctx, nodes, load: startLoad } = clusterPerDescribe(access);

		// Proves the nodes reconnect on their own, outage failures are clean and bounded, and no 200 write is lost.
		test("writes fail cleanly while NATS is down, succeed again without restarting a node, and every 200 is stored", async () => {
			const load = startLoad(4, 20, ["author", "game"]);
			await waitFor("writes succeed", async () => load.succeeded("game") >= 4, nodes(), 10_000);
			await ctx.cluster.nats.stop();
			const down = Date.now();
			await waitFor("every writer finished two writes during the outage", load.eachWriterFinished(down, 2), nodes(), 4 * HANG_MS);
			await ctx.cluster.nats.start();
			const up = Date.now();
			const recovered = async () =>
				(["author", "game"] as const).every(w => load.since(up).some(o => o.write === w && o.status === 200));
			await waitFor("authors and games are written again", recovered, nodes(), RECOVER_MS);
			const outcomes = await load.stop();

			expect(load.since(down, up).filter(o => o.status !== 200).length).toBeGreaterThan(0);
			expect(outcomes.filter(o => o.status !== 200 && !cleanFailure(o)).map(show)).toEqual([]);
			await expectNothingLost(ctx.cluster, outcomes);
		}, 90_000);
	});

	describe("node fault: the games node killed (SIGKILL) under load and started again", () => {
		const { ctx, nodes, load: startLoad } = clusterPerDescribe(access);

		// Proves a dead node is noticed, then refused at once with 503, authors unaffected, and its 200 writes kept.
		test("game writes answer 503 at once once the node is noticed gone, authors keep working, a restart restores games", async () => {
			const load = startLoad(4, 20, ["game", "author"]);
			await waitFor("writes succeed", async () => load.succeeded("game") >= 4, nodes(), 10_000);
			await ctx.cluster.nodes.get("games")!.kill();
			const killed = Date.now();
			const refused = () => load.since(killed).find(o => o.write === "game" && unavailableAtOnce(o));
			await waitFor("a game write is refused at once with 503", async () => refused() !== undefined, nodes("games"), NOTICE_MS);
			const noticed = refused()!.started;
			await waitFor("every writer finished two writes since", load.eachWriterFinished(noticed, 2), nodes("games"), 4 * HANG_MS);
			// Deleting a category asks games first: unable to, categories refuses as unavailable. The categories node notices the
			// dead node by its own heartbeat check, up to one check (4 s) after the gateway: until then its question times out
			// (a clean 504); from then on it refuses at once.
			const category = await within(5000, ctx.cluster.api.category("Doomed"), "a category");
			const deadline = Date.now() + NOTICE_MS;
			for (;;) {
				const started = Date.now();
				const answer = await send(ctx.base, "DELETE", `/category/${category.id}`);
				const took = Date.now() - started;
				if (took < FAST_MS) {
					expect(answer).toEqual({ status: 503, body: { msg: UNAVAILABLE } });
					break;
				}
				expect({ ...answer, inTime: took <= REQUEST_TIMEOUT_MS + MARGIN_MS }).toEqual({
					status: 504,
					body: { msg: UNAVAILABLE },
					inTime: true,
				});
				expect(Date.now()).toBeLessThan(deadline);
			}

			ctx.cluster.start("games");
			const restarted = Date.now();
			const resumed = async () => load.since(restarted).some(o => o.write === "game" && o.status === 200);
			await waitFor("game writes succeed again", resumed, nodes(), RECOVER_MS);
			const outcomes = await load.stop();

			expect(outcomes.filter(o => o.status !== 200 && !cleanFailure(o)).map(show)).toEqual([]);
			expect(outcomes.filter(o => o.write === "author" && o.status !== 200).map(show)).toEqual([]);
			expect(
				load
					.since(noticed, restarted)
					.filter(o => o.write === "game" && !unavailableAtOnce(o))
					.map(show),
			).toEqual([]);
			await expectNothingLost(ctx.cluster, outcomes);
		}, 90_000);
	});

	describe("graceful shutdown: SIGTERM to the gateway under load", () => {
		const { ctx, nodes, load: startLoad } = clusterPerDescribe(access);

		// Proves the gateway drains: it exits 0 under keep-alive load, answers what it read, and refuses the rest.
		test("every request is answered or refused before it is read, none read and dropped; exit code 0", async () => {
			const load = startLoad(12, 0, ["author", "game"]);
			await waitFor(
				"writes succeed, many in flight",
				async () => load.succeeded("game") >= 10 && load.inFlight >= 8,
				nodes(),
				10_000,
			);
			const sigterm = Date.now();
			const code = await within(2 * REQUEST_TIMEOUT_MS + MARGIN_MS, ctx.cluster.nodes.get("api")!.stop(), "the gateway exits");
			await waitFor("every writer has tried the stopped gateway", load.eachWriterFinished(Date.now(), 1), nodes("api"), 2 * HANG_MS);
			const outcomes = await load.stop();
			ctx.cluster.start("api");
			await ctx.cluster.ready(RECOVER_MS);
			const stored = await expectNothingLost(ctx.cluster, outcomes);

			expect(code).toBe(0);
			expect(outcomes.filter(o => o.started < sigterm && o.ended > sigterm && o.status === 200).length).toBeGreaterThan(0);
			// A reset is allowed only for a write that did nothing: the kernel resets connections still
			// queued on the listener when it closes, and a keep-alive client may race the close of its
			// idle connection; the gateway read neither request.
			const refused = (o: Outcome) => o.error === "ECONNREFUSED" || (o.error === "ECONNRESET" && !stored.has(o.name));
			expect(outcomes.filter(o => o.status !== 200 && !unavailableAtOnce(o) && !refused(o)).map(show)).toEqual([]);
		}, 90_000);
	});

	describe("graceful shutdown: SIGTERM to the games node under load", () => {
		// warn: moleculer's context tracking logs "Waiting for N running context(s)" while it holds a stop.
		const { ctx, nodes, load: startLoad } = clusterPerDescribe(access, { LOGLEVEL: "warn" });

		// Proves the games node finishes the writes it accepted before leaving, refuses later ones at once, and exits 0.
		test("writes it accepted complete with 200 and are stored, later ones answer 503 at once; exit code 0", async () => {
			const load = startLoad(8, 0, ["game"]);
			await waitFor("game writes succeed", async () => load.succeeded("game") >= 10, nodes(), 10_000);
			const games = ctx.cluster.nodes.get("games")!;
			const authors = ctx.cluster.nodes.get("authors")!.child;
			// Authors paused: a game write checks its author, so the games node holds its writes in flight.
			authors.kill("SIGSTOP");
			let sigterm = 0;
			let stopped: Promise<number | null>;
			let holding = 0;
			try {
				await waitFor("the games node holds writes", load.stalled(300), nodes("authors"), 5000);
				sigterm = Date.now();
				stopped = games.stop();
				const waiting = async () => /Waiting for \d+ running context/.test(games.output());
				await waitFor("the stopping games node waits for the writes it accepted", waiting, nodes(), 5000);
				holding = Date.now();
			} finally {
				authors.kill("SIGCONT");
			}
			expect(await within(2 * REQUEST_TIMEOUT_MS + MARGIN_MS, stopped, "the games node exits")).toBe(0);
			const exited = Date.now();
			await waitFor("every writer finished two writes since", load.eachWriterFinished(exited, 2), nodes("games"), 2 * HANG_MS);
			ctx.cluster.start("games");
			const restarted = Date.now();
			await waitFor("game writes succeed again", async () => load.since(restarted).some(o => o.status === 200), nodes(), RECOVER_MS);
			const outcomes = await load.stop();

			// Held by the node when it began to wait: accepted before SIGTERM. (A write sent just before
			// SIGTERM may reach the cluster after the node said it takes no more: a clean 503, checked next.)
			const accepted = outcomes.filter(o => o.started < sigterm && o.ended > holding);
			expect(accepted.length).toBeGreaterThan(0);
			expect(accepted.filter(o => o.status !== 200).map(show)).toEqual([]);
			expect(outcomes.filter(o => o.status !== 200 && !unavailableAtOnce(o)).map(show)).toEqual([]);
			expect(
				load
					.since(exited, restarted)
					.filter(o => o.status !== 503)
					.map(show),
			).toEqual([]);
			await expectNothingLost(ctx.cluster, outcomes);
		}, 90_000);
	});
});
