import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { SERVICE_NAMES } from "../lib/catalogue/services";
import { NODE_KINDS, passwordVariable, type NodeKind } from "../lib/config/broker-access";
import { NODE_FLAGS } from "../lib/config/node-flags";
import { send } from "./http";
import type { Pinning } from "./machine";
import { accepts, freePort, startChild, waitUntil, type Child } from "./processes";
import type { LoopDelay } from "./loop-delay";
import type { Route } from "./scenarios";

export const ROOT = path.resolve(__dirname, "../..");
const RUNNER = path.join(ROOT, "node_modules/moleculer/bin/moleculer-runner.js");
/** Debian's package installs it here; elsewhere it must be on PATH. */
const NATS_SERVER = existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server";
const START_MS = 30_000;

/** What is measured: its address, and every process it runs (for their memory). */
export interface Target {
	name: "ceiling" | "embedded" | "distributed";
	base: string;
	processes: Child[];
	/** nats-server's monitoring endpoint, for its message counts, and its URL (the distributed target). */
	natsMonitor?: string;
	natsUrl?: string;
	/** The embedded target only: stopped (SIGTERM) and started again on its data; the ms from the start until it answers. */
	restart?(): Promise<number>;
	stop(): Promise<void>;
}

/** A catalogue node the benchmark started, which reports its event loop's delays (bench/loop-delay.ts). */
interface Node extends Child {
	loopFile: string;
}

const isNode = (child: Child): child is Node => "loopFile" in child;

/** How long a node may take to write its loop's delays once signalled. */
const LOOP_REPORT_MS = 2000;

/** Asks one node for its loop's delays since it was last asked; null when it did not answer. */
async function askLoop(node: Node): Promise<LoopDelay | null> {
	rmSync(node.loopFile, { force: true });
	if (!node.running()) return null;
	node.process.kill("SIGUSR2");
	const deadline = Date.now() + LOOP_REPORT_MS;
	while (Date.now() < deadline) {
		try {
			return JSON.parse(readFileSync(node.loopFile, "utf8")) as LoopDelay;
		} catch {
			await new Promise(resolve => setTimeout(resolve, 20));
		}
	}
	return null;
}

/**
 * The longest event-loop delay of the target's catalogue processes since the last call (the
 * first call starts the count), and which process it was; undefined for the ceiling.
 */
export async function loopDelay(target: Target): Promise<{ maxMs: number; process: string } | undefined> {
	const nodes = target.processes.filter(isNode);
	if (nodes.length === 0) return undefined;
	const reports = await Promise.all(nodes.map(async node => ({ process: node.name, delay: await askLoop(node) })));
	const longest = reports.reduce((a, b) => ((b.delay?.max ?? -1) > (a.delay?.max ?? -1) ? b : a));
	return longest.delay ? { maxMs: longest.delay.max, process: longest.process } : undefined;
}

const answers200 = (base: string, paths: string[]) => async () =>
	(await Promise.all(paths.map(async route => (await send(base, "GET", route, undefined, 2000)).status === 200))).every(Boolean);

async function started(target: Target, paths: string[]): Promise<Target> {
	try {
		await waitUntil(`the ${target.name} service answers`, answers200(target.base, paths), target.processes, START_MS);
	} catch (err) {
		await target.stop();
		throw err;
	}
	return target;
}

/**
 * The catalogue's settings that the shell running the benchmark may hold and that would change
 * what is measured (a token refusing the updates, a rate limit, MongoDB, one health port for four
 * nodes, memory storage or a quieter log): every node runs without them, as the default does,
 * unless `startNode` sets them.
 */
const CLEARED = [
	...[
		"SERVICES",
		"TRANSPORTER",
		"REDIS_URL",
		"MONGO_URI",
		"DATA_DIR",
		"API_TOKEN",
		"RATE_LIMIT",
		"RATE_LIMIT_WINDOW",
		"CORS_ORIGINS",
		"HEALTH_PORT",
	],
	...["BODY_LIMIT", "REQUEST_TIMEOUT", "STORAGE", "LOGLEVEL", "LOG_FORMAT", "CACHE_MAX_MB", "CHANGE_FEED", "NATS_ACCESS"],
];

/**
 * A catalogue node started as `npm start` starts one: its records in the SQLite database of a
 * fresh folder (or of `env.DATA_DIR`, which is then left in place), its access log on, its output
 * read as a terminal would; with `profileDir`, it writes a CPU profile there when it stops (BENCH_PROFILE).
 */
function startNode(name: string, pinning: Pinning, profileDir: string | undefined, env: NodeJS.ProcessEnv): Node {
	if (!existsSync(path.join(ROOT, "dist/moleculer.config.js"))) throw new Error("dist/ is missing: run `npm run build` first");
	const cleared = Object.fromEntries(CLEARED.map(variable => [variable, undefined]));
	const profile = profileDir ? ["--cpu-prof", "--cpu-prof-dir", path.join(profileDir, name)] : [];
	const folder = mkdtempSync(path.join(tmpdir(), `catalogue-bench-${name}-`));
	const loopFile = path.join(folder, "loop-delay.json");
	const child = startChild(
		name,
		pinning,
		process.execPath,
		[
			...NODE_FLAGS,
			...profile,
			"--require",
			path.join(__dirname, "loop-delay.js"),
			RUNNER,
			"--config",
			path.join(ROOT, "dist/moleculer.config.js"),
		],
		{
			...cleared,
			SERVICEDIR: path.join(ROOT, "dist/services"),
			DATA_DIR: folder,
			START_TIMEOUT: "30",
			BENCH_LOOP_FILE: loopFile,
			...env,
		},
		folder,
	);
	return Object.assign(child, { loopFile });
}

/** How often a restart polls for the first answer: finer than waitUntil's, to time it. */
const RESTART_POLL_MS = 10;

/** Every service in one process, no transporter: the default as `npm start` runs it, with `more` set (`CHANGE_FEED=off`). */
export async function startEmbedded(pinning: Pinning, profileDir?: string, more: NodeJS.ProcessEnv = {}): Promise<Target> {
	const port = await freePort();
	const env = { ...more, PORT: String(port), NAMESPACE: `bench-${randomUUID()}` };
	const dataDir = mkdtempSync(path.join(tmpdir(), "catalogue-bench-data-"));
	let node = startNode("embedded", pinning, profileDir, { ...env, DATA_DIR: dataDir });
	const base = `http://127.0.0.1:${port}`;
	const target: Target = {
		name: "embedded",
		base,
		processes: [node],
		async restart() {
			node.process.kill("SIGTERM");
			await new Promise(resolve => node.process.once("close", resolve));
			await node.kill();
			const at = performance.now();
			node = startNode("embedded", pinning, profileDir, { ...env, DATA_DIR: dataDir });
			target.processes[0] = node;
			const answers = answers200(base, ["/category"]);
			while (!(await answers().catch(() => false))) {
				if (!node.running()) throw new Error(`the restarted embedded node exited:\n${node.output()}`);
				if (performance.now() - at > START_MS) throw new Error("the restarted embedded node did not answer within 30 s");
				await new Promise(resolve => setTimeout(resolve, RESTART_POLL_MS));
			}
			return performance.now() - at;
		},
		async stop() {
			await node.kill();
			rmSync(dataDir, { recursive: true, force: true });
		},
	};
	return started(target, ["/category", "/author", "/game"]);
}

/**
 * A nats-server of the benchmark's own on a free loopback port, configured as a cluster's
 * (nats.conf: the largest game lists cross NATS in one message, over its default limit of 1 MB); with
 * `access`, nats-access.conf's rules, each kind's password made for the run, and `urlAs` each kind's URL.
 */
async function startNats(
	pinning: Pinning,
	access: boolean,
): Promise<{ url: string; urlAs(kind: NodeKind): string; monitor: string; server: Child }> {
	const port = await freePort();
	const monitorPort = await freePort();
	// A letter first: nats-server reads the variable's value as a configuration value, and `5e3...` as a number (docs/security.md).
	const passwords = Object.fromEntries(NODE_KINDS.map(kind => [passwordVariable(kind), `p${randomBytes(12).toString("hex")}`]));
	const storeDir = mkdtempSync(path.join(tmpdir(), "bench-jetstream-"));
	const server = startChild(
		"nats-server",
		pinning,
		NATS_SERVER,
		[
			"-c",
			path.join(ROOT, access ? "nats-access.conf" : "nats.conf"),
			"-a",
			"127.0.0.1",
			"-p",
			String(port),
			"-m",
			String(monitorPort),
			"--store_dir",
			storeDir,
		],
		passwords,
		// The stream's folder goes with the server: a benchmark starts one for every distributed start.
		storeDir,
	);
	try {
		await waitUntil("nats-server listens", () => accepts(port), [server], 10_000);
	} catch (err) {
		await server.kill();
		throw err;
	}
	const url = `nats://127.0.0.1:${port}`;
	const urlAs = (kind: NodeKind) => (access ? `nats://${kind}:${passwords[passwordVariable(kind)]}@127.0.0.1:${port}` : url);
	return { url, urlAs, monitor: `http://127.0.0.1:${monitorPort}`, server };
}

/**
 * A node per catalogue service (api, authors, categories, games) over NATS, in a fresh namespace; `redisUrl` for the cache, and
 * `more` set on every node. With `access`, NATS runs nats-access.conf's rules and each node logs in as its kind, with
 * `NATS_ACCESS=on` (docs/security.md, "The broker").
 */
export async function startDistributed(
	pinning: Pinning,
	redisUrl: string | undefined,
	profileDir?: string,
	more: NodeJS.ProcessEnv = {},
	access = false,
): Promise<Target> {
	const nats = await startNats(pinning, access);
	const port = await freePort();
	const shared = {
		...more,
		NAMESPACE: `bench-${randomUUID()}`,
		...(redisUrl && { REDIS_URL: redisUrl }),
		...(access && { NATS_ACCESS: "on" }),
	};
	const nodes = SERVICE_NAMES.map(service =>
		startNode(service, pinning, profileDir, {
			...shared,
			SERVICES: service,
			TRANSPORTER: nats.urlAs(service),
			...(service === "api" && { PORT: String(port) }),
		}),
	);
	const processes = [...nodes, nats.server];
	const stop = async () => {
		await Promise.all(processes.map(child => child.kill()));
	};
	const base = `http://127.0.0.1:${port}`;
	return started({ name: "distributed", base, processes, natsMonitor: nats.monitor, natsUrl: nats.url, stop }, [
		"/category",
		"/author",
		"/game",
	]);
}

/** The bare node:http server of ceiling.ts, answering `routes` as the catalogue did. */
export async function startCeiling(pinning: Pinning, routes: Route[]): Promise<Target> {
	const port = await freePort();
	const server = startChild("ceiling", pinning, process.execPath, [path.join(__dirname, "ceiling.js"), String(port)]);
	const wire = routes.map(({ method, path: route, answer }) => ({
		method,
		path: route,
		answer: { ...answer, body: answer.body.toString("base64") },
	}));
	server.process.stdin?.end(JSON.stringify(wire));
	const target: Target = { name: "ceiling", base: `http://127.0.0.1:${port}`, processes: [server], stop: () => server.kill() };
	try {
		await waitUntil("the ceiling listens", () => accepts(port), [server], START_MS);
	} catch (err) {
		await target.stop();
		throw err;
	}
	return target;
}
