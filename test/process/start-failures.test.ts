import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Api } from "../support/catalogue";
import { freePort, startNode, waitFor, type Node } from "../support/process";
import { startRedis } from "../support/redis";

// Every way a start can fail ends the process with exit code 1 and one line saying which variable, its value (credentials
// hidden) and what to do: the whole output of a node at LOGLEVEL=warn (startNode's) is that line, without a stack.

const folder = mkdtempSync(path.join(tmpdir(), "catalogue-start-failures-"));
const nodes: Node[] = [];
afterAll(async () => {
	await Promise.all(nodes.map(node => node.kill()));
	rmSync(folder, { recursive: true, force: true });
});

/** Starts a node on `env` (START_TIMEOUT 3 s unless it says) and waits, at most 15 s, for it to exit. */
async function failedStart(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
	const node = startNode({ START_TIMEOUT: "3", ...env });
	nodes.push(node);
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<"running">(resolve => (timer = setTimeout(() => resolve("running"), 15_000)));
	const code = await Promise.race([node.exited, late]).finally(() => clearTimeout(timer));
	if (code === "running") {
		await node.kill();
		throw new Error(`the node was still running after 15 s:\n${node.output()}`);
	}
	return { code, output: node.output() };
}

/** A port something else listens on, for as long as the test holds it. */
async function portInUse(): Promise<{ port: number; server: Server }> {
	const server = createServer();
	await new Promise<void>(resolve => server.listen(0, resolve));
	return { port: (server.address() as { port: number }).port, server };
}

const notAFolder = path.join(folder, "a-file");
writeFileSync(notAFolder, "");

/** Each case: its name, its environment (given a port something else listens on), the line expected (given that port). */
const cases: [string, (heldPort: number) => Promise<NodeJS.ProcessEnv>, (heldPort: number) => RegExp][] = [
	[
		"a bad variable",
		async () => ({ PORT: "abc" }),
		() =>
			/FATAL CONFIG: PORT must be a whole number from 0 to 65535; got "abc"\. Correct it in the environment or in \.env, then start again\.$/,
	],
	[
		"an unreadable NATS file",
		async () => ({ TRANSPORTER: `nats://127.0.0.1:${await freePort()}`, NATS_CA: path.join(folder, "missing-ca.pem") }),
		() => /FATAL CONFIG: NATS_CA names .*missing-ca\.pem, which cannot be read: ENOENT.*Correct it in the environment or in \.env/,
	],
	[
		"an unreachable NATS",
		async () => ({ TRANSPORTER: `nats://catalogue:Pa55-w0rd@127.0.0.1:${await freePort()}` }),
		() =>
			/FATAL .*BROKER: Could not connect to the transporter at nats:\/\/catalogue:\*\*\*@127\.0\.0\.1:\d+ within 3 s; giving up\. Start NATS there, or correct TRANSPORTER\.$/,
	],
	[
		"an unreachable MongoDB",
		async () => ({ MONGO_URI: `mongodb://catalogue:Pa55-w0rd@127.0.0.1:${await freePort()}/catalogue`, SERVICES: "games" }),
		() =>
			/FATAL .*BROKER: Could not start within 3 s: games could not reach the storage \(MongoDB at mongodb:\/\/catalogue:\*\*\*@127\.0\.0\.1:\d+\/catalogue\); giving up\. Start MongoDB there, or correct MONGO_URI\.$/,
	],
	[
		// Past the driver's 5 s wait for a server, so that moleculer-db's retries (an error and a warning each) come before the line.
		"an unreachable MongoDB, waited for past the driver's own wait",
		async () => ({
			MONGO_URI: `mongodb://catalogue:Pa55-w0rd@127.0.0.1:${await freePort()}/catalogue`,
			SERVICES: "games",
			START_TIMEOUT: "8",
		}),
		() =>
			/FATAL .*BROKER: Could not start within 8 s: games could not reach the storage \(MongoDB at mongodb:\/\/catalogue:\*\*\*@127\.0\.0\.1:\d+\/catalogue\); giving up\./,
	],
	[
		"an unreachable Redis",
		async () => ({ REDIS_URL: `redis://:Pa55-w0rd@127.0.0.1:${await freePort()}`, SERVICES: "games" }),
		() =>
			/FATAL .*BROKER: Could not reach the Redis of REDIS_URL redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ within 3 s; giving up\. Start Redis there, correct REDIS_URL, or unset it\.$/,
	],
	[
		"a port in use",
		async heldPort => ({ PORT: String(heldPort) }),
		port =>
			new RegExp(`FATAL .*API: PORT ${port} is already in use by another process: stop that process, or set PORT to a free port\\.$`),
	],
	[
		"a HEALTH_PORT in use",
		async heldPort => ({ HEALTH_PORT: String(heldPort) }),
		port =>
			new RegExp(
				`FATAL .*BROKER: HEALTH_PORT ${port} is already in use by another process: stop that process, or set HEALTH_PORT to a free port\\.$`,
			),
	],
	[
		"a METRICS_PORT in use",
		async heldPort => ({ METRICS_PORT: String(heldPort) }),
		port =>
			new RegExp(
				`FATAL .*METRICS: METRICS_PORT ${port} is already in use by another process: stop that process, or set METRICS_PORT to a free port\\.$`,
			),
	],
	[
		"a node logged in as another kind's NATS user (NATS_ACCESS=on)",
		async () => ({ NATS_ACCESS: "on", SERVICES: "games", TRANSPORTER: `nats://api:Pa55-w0rd@127.0.0.1:${await freePort()}` }),
		() =>
			/^\S+ FATAL CONFIG: NATS_ACCESS=on: a games node logs in as the NATS user games, not api: correct TRANSPORTER's user\. Correct it/,
	],
	[
		"a node of several services (NATS_ACCESS=on)",
		async () => ({ NATS_ACCESS: "on", TRANSPORTER: `nats://api:Pa55-w0rd@127.0.0.1:${await freePort()}` }),
		() =>
			/^\S+ FATAL CONFIG: NATS_ACCESS=on gives each kind of node a NATS user of its own, and none runs api, authors, categories, games together/,
	],
	[
		"a DATA_DIR that is not a folder",
		async () => ({ STORAGE: "file", DATA_DIR: path.join(notAFolder, "data"), SERVICES: "games" }),
		() => /FATAL .*GAMES: DATA_DIR .*a-file\/data cannot be used: ENOTDIR/,
	],
];

describe("a start that fails prints exactly one line, at FATAL, naming the variable, and exits with 1", () => {
	test.each(cases)(
		"%s",
		async (_name, environment, expected) => {
			const held = await portInUse();
			try {
				const { code, output } = await failedStart({ PORT: "0", ...(await environment(held.port)) });
				expect(code).toBe(1);
				const lines = output.split("\n").filter(line => line.trim() !== "");
				expect(lines).toHaveLength(1);
				expect(lines[0]).toMatch(expected(held.port));
				expect(output).not.toMatch(/^\s+at /m);
				expect(output).not.toContain("Pa55-w0rd");
			} finally {
				held.server.close();
			}
		},
		20_000,
	);
});

test("with LOGLEVEL=debug, a bad variable's line is followed by its stack", async () => {
	const { code, output } = await failedStart({ PORT: "abc", LOGLEVEL: "debug" });
	expect(code).toBe(1);
	expect(output).toMatch(/FATAL CONFIG: PORT must be a whole number/);
	expect(output).toMatch(/^\s+at /m);
});

test("at LOGLEVEL=info, an unreachable Redis is said once before the start timeout, not at every attempt", async () => {
	const { code, output } = await failedStart({ REDIS_URL: `redis://127.0.0.1:${await freePort()}`, SERVICES: "games", LOGLEVEL: "info" });
	expect(code).toBe(1);
	expect(output.match(/does not answer \(ECONNREFUSED\); trying again until it does\./g)).toHaveLength(1);
	expect(output).toContain("Could not reach the Redis of REDIS_URL");
	expect(output).not.toMatch(/^\s+at /m);
});

test("a Redis that answers but refuses the cache's epoch (a read-only replica): said once, then the start timeout's line", async () => {
	const replica = await startRedis(10_000, ["--replicaof", "127.0.0.1", String(await freePort())]);
	try {
		const { code, output } = await failedStart({ REDIS_URL: replica.url, SERVICES: "games", LOGLEVEL: "info" });
		expect(code).toBe(1);
		expect(output.match(/answers but refuses the cache's epoch \(READONLY/g)).toHaveLength(1);
		// And nothing else at WARN or above but the start timeout's line.
		expect(output.split("\n").filter(line => /^\S+ (WARN|ERROR|FATAL) /.test(line))).toEqual([
			expect.stringMatching(/WARN .*answers but refuses the cache's epoch/),
			expect.stringMatching(/FATAL .*did not take the cache's epoch/),
		]);
		expect(output).toMatch(
			/FATAL .*BROKER: The Redis of REDIS_URL redis:\/\/127\.0\.0\.1:\d+ did not take the cache's epoch within 3 s; giving up\./,
		);
		expect(output).not.toMatch(/^\s+at /m);
	} finally {
		await replica.stop();
	}
});

describe("a .env file in the working directory", () => {
	/** A folder holding a .env with `lines`, where a node runs. */
	function withEnvFile(lines: string[]): string {
		const cwd = mkdtempSync(path.join(folder, "cwd-"));
		writeFileSync(path.join(cwd, ".env"), `${lines.join("\n")}\n`);
		return cwd;
	}

	test("is read by npm start: the gateway listens on its PORT", async () => {
		const port = await freePort();
		const node = startNode({ PORT: undefined, STORAGE: "memory" }, { cwd: withEnvFile([`PORT=${port}`, "STORAGE=file"]) });
		nodes.push(node);
		const api = new Api(`http://127.0.0.1:${port}`);
		await waitFor("the gateway answers on .env's PORT", () => api.get("/health/ready").then(answer => answer.status === 200), [node]);
		expect(await node.stop()).toBe(0);
	});

	test("never wins over a variable of the environment, even an empty one", async () => {
		const [filePort, envPort] = [await freePort(), await freePort()];
		// .env's SERVICES would leave out the gateway; the environment's empty SERVICES runs every service.
		const cwd = withEnvFile([`PORT=${filePort}`, "SERVICES=games", "STORAGE=memory"]);
		const node = startNode({ PORT: String(envPort), SERVICES: "" }, { cwd });
		nodes.push(node);
		const api = new Api(`http://127.0.0.1:${envPort}`);
		await waitFor(
			"the gateway answers on the environment's PORT",
			() => api.get("/health/ready").then(answer => answer.status === 200),
			[node],
		);
		expect(await node.stop()).toBe(0);
	});

	test("a bad value in it is one line, like one in the environment", async () => {
		const node = startNode({ PORT: undefined }, { cwd: withEnvFile(["PORT=abc"]) });
		nodes.push(node);
		expect(await node.exited).toBe(1);
		expect(node.output().trim()).toMatch(/^\S+ FATAL CONFIG: PORT must be a whole number from 0 to 65535; got "abc"\./);
	});
});
