import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import isEqual from "lodash/isEqual";
import { Api, type Answer } from "../support/catalogue";
import { reachesEveryService } from "../support/cluster";
import { Load, show, type Outcome, type Ref } from "../support/load";
import { startNats, type NatsServer } from "../support/nats";
import { freePort, freePorts, startNode, waitFor, type Node } from "../support/process";
import { rawRequest, type RawAnswer } from "../support/raw-http";
import { startRedis, type RedisServer } from "../support/redis";
import { replIntegrity } from "../support/repl";
import type { Author } from "../../services/authors.types";
import type { Category } from "../../services/categories.types";
import type { Game, ListedGame } from "../../services/games.types";
import { inPool } from "../support/pool";
import { texts } from "../../lib/catalogue/errors";

// Replicas in separate processes on one SQLite file, without MongoDB (docs/storage.md, "One
// process or several"). With REDIS_URL every node holds DATA_DIR shared, so here the authors and
// categories nodes, two `games` processes and two gateways (A and B) run on one catalogue.sqlite
// over a NATS server and a Redis of the test's own. The integrity protocol keeps its claims in
// the records, so a game create racing its author's delete has one winner whichever replica
// serves it; the answers cache lives in Redis, so a rename through A is read at once through B;
// and a games replica killed with SIGKILL loses no acknowledged game while the other goes on, and
// a replacement on the same folder joins with the records as they were. Every node exposes its
// Prometheus metrics (METRICS_PORT): its registry says which services it sees (the layout is
// ready when every node sees every replica), and each games replica's call counters show that
// both served.

const START_MS = 60_000;
const TEST_MS = 120_000;
const RACE_ROUNDS = 150;
const RENAME_ROUNDS = 200;
/** Requests in flight at once: rounds of the race, clients of the kill test. */
const IN_FLIGHT = 6;
const ACKED_BEFORE_KILL = 300;
const ACKED_AFTER_KILL = 150;
/** Creates sent to check that the games replicas left answer. */
const CHECK_CREATES = 10;

/** One node of the layout: the services it runs (SERVICES) and where its metrics are read. */
interface Member {
	services: "api" | "authors" | "categories" | "games";
	node: Node;
	metrics: string;
}

/** One sample of a node's Prometheus metrics. */
interface Sample {
	name: string;
	labels: Record<string, string>;
	value: number;
}

/** What the node's Prometheus endpoint shows now. */
async function scrape(member: Member): Promise<Sample[]> {
	const text = await (await fetch(member.metrics)).text();
	return text.split("\n").flatMap(line => {
		const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
		if (!match) return [];
		const labels = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map(([, key, value]) => [key, value]));
		return [{ name: match[1], labels, value: Number(match[3]) }];
	});
}

/** The sum of the samples of `name` whose labels include `labels`. */
const total = (samples: Sample[], name: string, labels: Record<string, string>) =>
	samples
		.filter(sample => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
		.reduce((sum, sample) => sum + sample.value, 0);

/** How many calls of `action` from the gateways this node has handled. */
const served = async (member: Member, action: string) => total(await scrape(member), "moleculer_request_total", { action, caller: "api" });

let redis: RedisServer | undefined;
let nats: NatsServer | undefined;
let dataDir: string | undefined;
let namespace: string;
let a: Api;
let b: Api;
/** The nodes running now, in the order they were started. */
const members: Member[] = [];
/** Every node ever started, for cleaning up and for what they printed. */
const started: Node[] = [];
/** Records no round deletes: what the games refer to. */
let base: { author: Author; category: Category };

const nodeEnv = (services: string): NodeJS.ProcessEnv => ({
	SERVICES: services,
	TRANSPORTER: nats!.url,
	NAMESPACE: namespace,
	REDIS_URL: redis!.url,
	STORAGE: "file",
	DATA_DIR: dataDir,
	START_TIMEOUT: "30",
});

function start(services: Member["services"], metricsPort: number, port?: number): Member {
	const node = startNode({
		...nodeEnv(services),
		METRICS_PORT: String(metricsPort),
		...(port !== undefined && { PORT: String(port) }),
	});
	const member = { services, node, metrics: `http://127.0.0.1:${metricsPort}/metrics` };
	members.push(member);
	started.push(node);
	return member;
}

const replicas = () => members.filter(member => member.services === "games");
const running = () => members.map(member => member.node);

/**
 * Until both gateways answer a read of each service and every running node's registry holds as
 * many nodes of each service as run now: the gateways and the authors node see every games
 * replica, every games replica sees authors and categories, and the writers see both gateways.
 */
function layoutReady(): Promise<void> {
	const expected: Record<string, number> = {};
	for (const { services } of members) expected[services] = (expected[services] ?? 0) + 1;
	const what = `both gateways reach every service and every node sees ${JSON.stringify(expected)}`;
	return waitFor(
		what,
		async () => {
			const reached = await Promise.all([a, b].map(gateway => reachesEveryService(gateway)()));
			if (!reached.every(Boolean)) return false;
			const seen = await Promise.all(members.map(scrape));
			return seen.every(samples =>
				Object.entries(expected).every(
					([service, count]) => total(samples, "moleculer_registry_service_endpoints_total", { service }) === count,
				),
			);
		},
		running(),
		START_MS,
	);
}

beforeAll(async () => {
	redis = await startRedis();
	nats = await startNats();
	dataDir = await mkdtemp(path.join(tmpdir(), "catalogue-shared-file-"));
	namespace = `shared-file-${randomUUID()}`;
	const [portA, portB, ...metricsPorts] = await freePorts(8);
	a = new Api(`http://127.0.0.1:${portA}`);
	b = new Api(`http://127.0.0.1:${portB}`);
	start("authors", metricsPorts[0]);
	start("categories", metricsPorts[1]);
	start("games", metricsPorts[2]);
	start("games", metricsPorts[3]);
	start("api", metricsPorts[4], portA);
	start("api", metricsPorts[5], portB);
	await layoutReady();
	base = { author: await a.author("Base", "German"), category: await a.category("Shared file") };
}, START_MS + 20_000);

afterAll(async () => {
	await Promise.all(started.map(node => node.kill()));
	await nats?.stop();
	await redis?.stop();
	if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 20_000);

/** A status and its `msg`, for messages. */
function told({ status, body }: Answer<unknown>): string {
	const msg = (body as { msg?: string } | undefined)?.msg;
	return msg ? `${status} "${msg}"` : String(status);
}

/** The games listed through `gateway`, failing unless it answers 200. */
async function listedGames(gateway: Api): Promise<ListedGame[]> {
	const answer = await gateway.get<ListedGame[]>("/game");
	if (answer.status !== 200) throw new Error(`GET /game through ${gateway.url} answered ${told(answer)}`);
	return answer.body;
}

test(
	`${RACE_ROUNDS} races, ${IN_FLIGHT} at once: a game create naming a fresh author through A against that author's delete ` +
		"through B; each has one winner, the loser answers its 400, and no listed game names a missing author",
	async () => {
		const title = (n: number) => `Race ${n}`;
		const createsBefore = await Promise.all(replicas().map(replica => served(replica, "games.create")));
		const rounds = await inPool(
			Array.from({ length: RACE_ROUNDS }, (_, n) => n),
			IN_FLIGHT,
			async n => {
				const author = (await a.author(title(n), "Nowhere")) as Author;
				const body = { title: title(n), age: 10, category: { id: base.category.id }, author: { id: author.id } };
				const [create, remove] = await Promise.all([
					a.put<{ game?: Game; msg?: string }>("/game", body),
					b.delete<{ msg?: string }>(`/author/${author.id}`),
				]);
				return { n, author, create, remove };
			},
		);
		const [games, authors] = await Promise.all([listedGames(a), b.get<Author[]>("/author")]);
		const kept = new Set(authors.body.map(author => author.id));
		const violations = rounds.flatMap(({ n, author, create, remove }) => {
			const createWon = create.status === 200;
			if (createWon === (remove.status === 200))
				return [`round ${n}: the create answered ${told(create)} and the delete ${told(remove)}`];
			const [loser, text] = createWon ? [remove, texts.authorHasGames] : [create, texts.authorNotFound];
			const found: string[] = [];
			if (loser.status !== 400 || loser.body?.msg !== text) found.push(`the loser answered ${told(loser)}, not 400 "${text}"`);
			if (kept.has(author.id) !== createWon)
				found.push(`the author is ${createWon ? "gone though the create won" : "kept though its delete won"}`);
			const listed = games.filter(game => game.title === title(n));
			const expected = createWon ? [{ ...create.body.game, category: base.category, author }] : [];
			if (!isEqual(listed, expected)) found.push(`GET /game lists ${JSON.stringify(listed)}, not ${JSON.stringify(expected)}`);
			return found.map(problem => `round ${n}: ${problem}`);
		});
		const orphans = games.filter(game => !game.author || !kept.has(game.author.id));
		const createsWon = rounds.filter(round => round.create.status === 200).length;
		const createsAfter = await Promise.all(replicas().map(replica => served(replica, "games.create")));
		const byReplica = createsAfter.map((count, i) => count - createsBefore[i]);
		console.log(
			`${RACE_ROUNDS} races: the create won ${createsWon}, the delete ${RACE_ROUNDS - createsWon}; ` +
				`the replicas served ${byReplica.join(" and ")} creates`,
		);
		expect(violations).toEqual([]);
		expect(orphans).toEqual([]);
		expect(byReplica.reduce((sum, count) => sum + count, 0)).toBe(RACE_ROUNDS);
		expect(byReplica.every(count => count > 0)).toBe(true);
		// The operators' check, on the store itself rather than on the answers.
		expect(await replIntegrity({ TRANSPORTER: nats!.url, NAMESPACE: namespace })).toContain("Integrity check passed");
	},
	TEST_MS,
);

test(
	`${RENAME_ROUNDS} renames of a game through A, each read at once through B: B lists the new title and no longer ` +
		"answers its ETag from before the rename with 304; both games replicas served the renames",
	async () => {
		const game = (await a.game("Round 0", base.category, base.author)) as Game;
		const updatesBefore = await Promise.all(replicas().map(replica => served(replica, "games.update")));
		const parsed = (answer: RawAnswer) => JSON.parse(answer.body.toString("utf8")) as ListedGame[];
		const failures: string[] = [];
		let stale = 0;
		let stale304 = 0;
		for (let n = 1; n <= RENAME_ROUNDS; n++) {
			const before = await rawRequest(`${b.url}/game`);
			const body = { title: `Round ${n}`, age: 10, category: { id: base.category.id }, author: { id: base.author.id } };
			const rename = await rawRequest(`${a.url}/game/${game.id}`, "PUT", {}, body);
			const [list, conditional] = await Promise.all([
				rawRequest(`${b.url}/game`),
				rawRequest(`${b.url}/game`, "GET", { "If-None-Match": String(before.headers.etag) }),
			]);
			if (before.status !== 200 || before.headers.etag === undefined) failures.push(`round ${n}: B's list before had no ETag`);
			if (rename.status !== 200 || list.status !== 200 || ![200, 304].includes(conditional.status))
				failures.push(
					`round ${n}: the rename answered ${rename.status}, B's list ${list.status}, B's conditional list ${conditional.status}`,
				);
			else if (parsed(list).find(listed => listed.id === game.id)?.title !== body.title) stale++;
			if (conditional.status === 304) stale304++;
		}
		const updatesAfter = await Promise.all(replicas().map(replica => served(replica, "games.update")));
		const byReplica = updatesAfter.map((count, i) => count - updatesBefore[i]);
		console.log(
			`${RENAME_ROUNDS} renames: ${stale} stale lists, ${stale304} stale 304s; the replicas served ${byReplica.join(" and ")}`,
		);
		expect(failures).toEqual([]);
		expect({ stale, stale304 }).toEqual({ stale: 0, stale304: 0 });
		expect(byReplica.reduce((sum, count) => sum + count, 0)).toBe(RENAME_ROUNDS);
		expect(byReplica.every(count => count > 0)).toBe(true);
	},
	TEST_MS,
);

describe(`a games replica killed with SIGKILL while ${IN_FLIGHT} clients create games through A and B`, () => {
	const refs = (): { category: Ref; author: Ref } => ({ category: { id: base.category.id }, author: { id: base.author.id } });

	/** The games listed through A and through B, which must be the same. */
	async function listed(): Promise<ListedGame[]> {
		const [throughA, throughB] = await Promise.all([listedGames(a), listedGames(b)]);
		expect(throughB).toEqual(throughA);
		return throughA;
	}

	/** `count` creates, through A and B in turn; the answers. */
	const creates = (prefix: string, count: number) =>
		inPool(
			Array.from({ length: count }, (_, n) => n),
			2,
			n => (n % 2 === 0 ? a : b).put("/game", { title: `${prefix} ${n}`, age: 10, ...refs() }),
		);

	test(
		`after ${ACKED_BEFORE_KILL} creates acknowledged, one replica is killed; once ${ACKED_AFTER_KILL} more are, ` +
			"every acknowledged game is listed once through both gateways, and the other replica answers creates alone",
		async () => {
			const loads = [
				new Load(a.url, refs(), IN_FLIGHT / 2, 0, ["game"], "A "),
				new Load(b.url, refs(), IN_FLIGHT / 2, 0, ["game"], "B "),
			];
			const all = () => loads.flatMap(load => load.outcomes);
			const ackedNow = () => all().filter(outcome => outcome.status === 200).length;
			const [survivor, victim] = replicas();
			/** The writes of both gateways' clients, once they have stopped. */
			let outcomes: Outcome[];
			let victimServed: number;
			let afterKill: number;
			try {
				await waitFor(`${ACKED_BEFORE_KILL} creates acknowledged`, async () => ackedNow() >= ACKED_BEFORE_KILL, running(), 60_000);
				victimServed = await served(victim, "games.create");
				const ackedAtKill = ackedNow();
				await victim.node.kill();
				members.splice(members.indexOf(victim), 1);
				// A client's request that went to the killed replica waits until its gateway notices
				// the node gone (missing heartbeats, 4 to 8 s), then fails: the clients resume after that.
				await waitFor(
					`${ACKED_AFTER_KILL} creates acknowledged after the kill`,
					async () => ackedNow() - ackedAtKill >= ACKED_AFTER_KILL,
					running(),
					60_000,
				);
				afterKill = ackedNow() - ackedAtKill;
			} finally {
				outcomes = (await Promise.all(loads.map(load => load.stop()))).flat();
			}
			// Until every node has noticed the replica gone, a create below could still be sent to it.
			await layoutReady();
			const acked = outcomes.filter(outcome => outcome.status === 200);
			const failed = outcomes.filter(outcome => outcome.status !== 200);
			const games = await listed();
			const titles = new Set(games.map(game => game.title));
			const failures: Record<string, number> = {};
			for (const outcome of failed)
				failures[outcome.status ?? outcome.error!] = (failures[outcome.status ?? outcome.error!] ?? 0) + 1;
			console.log(
				`kill -9: ${acked.length} creates acknowledged, ${afterKill} of them after the kill (the killed replica had served ` +
					`${victimServed}); failed meanwhile: ${JSON.stringify(failures)}, of which ` +
					`${failed.filter(outcome => titles.has(outcome.name)).length} listed`,
			);
			expect(victimServed).toBeGreaterThan(0);
			// A replica lost mid-request costs 5xx answers; a 4xx would be a refusal of a valid write.
			expect(failed.filter(outcome => outcome.status !== undefined && outcome.status < 500).map(show)).toEqual([]);
			expect(acked.filter(outcome => !titles.has(outcome.name)).map(show)).toEqual([]);
			expect(new Set(games.map(game => game.id)).size).toBe(games.length);
			expect(titles.size).toBe(games.length);

			const servedBefore = await served(survivor, "games.create");
			const checks = await creates("Survivor", CHECK_CREATES);
			expect(checks.map(told)).toEqual(Array(CHECK_CREATES).fill("200"));
			expect((await served(survivor, "games.create")) - servedBefore).toBe(CHECK_CREATES);
		},
		TEST_MS,
	);

	test(
		"a replacement games process on the same DATA_DIR joins: the lists are unchanged, and it serves creates",
		async () => {
			const before = await listed();
			const replacement = start("games", await freePort());
			await layoutReady();
			expect(await listed()).toEqual(before);
			const checks = await creates("Replacement", CHECK_CREATES);
			expect(checks.map(told)).toEqual(Array(CHECK_CREATES).fill("200"));
			expect(await served(replacement, "games.create")).toBeGreaterThan(0);
			const after = await listed();
			expect(after.length).toBe(before.length + CHECK_CREATES);
			expect(after.filter(game => game.title.startsWith("Replacement ")).length).toBe(CHECK_CREATES);
		},
		TEST_MS,
	);
});
