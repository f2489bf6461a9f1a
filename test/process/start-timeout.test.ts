import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, startNode, type Node } from "../support/process";
import { runTool } from "../support/transfer";

const nodes: Node[] = [];
afterAll(() => Promise.all(nodes.map(node => node.kill())));

interface Ended {
	code: number | null;
	output: string;
	/** From the spawn to the exit. */
	elapsedMs: number;
}

/** Starts a node as an operator would and waits, at most `limitMs`, for it to exit. */
async function runUntilExit(env: NodeJS.ProcessEnv, limitMs: number): Promise<Ended> {
	const spawned = Date.now();
	const node = startNode(env);
	nodes.push(node);
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<"running">(resolve => (timer = setTimeout(() => resolve("running"), limitMs)));
	const code = await Promise.race([node.exited, late]).finally(() => clearTimeout(timer));
	if (code === "running") {
		await node.kill();
		throw new Error(`the node was still running after ${limitMs} ms:\n${node.output()}`);
	}
	return { code, output: node.output(), elapsedMs: Date.now() - spawned };
}

describe("a node that cannot reach what it needs gives up with exit code 1 after START_TIMEOUT", () => {
	test("an unreachable NATS server: the message names the transporter URL", async () => {
		const url = `nats://127.0.0.1:${await freePort()}`;
		const ended = await runUntilExit({ TRANSPORTER: url, START_TIMEOUT: "2" }, 10_000);
		expect(ended.code).toBe(1);
		expect(ended.output).toContain(`Could not connect to the transporter at ${url} within 2 s; giving up.`);
		expect(ended.elapsedMs).toBeGreaterThanOrEqual(2000);
	});

	test("an unreachable MongoDB: the message names the service waiting and the storage", async () => {
		const uri = `mongodb://127.0.0.1:${await freePort()}/catalogue`;
		const ended = await runUntilExit({ MONGO_URI: uri, SERVICES: "games", START_TIMEOUT: "2" }, 10_000);
		expect(ended.code).toBe(1);
		expect(ended.output).toContain(`Could not start within 2 s: games could not reach the storage (MongoDB at ${uri}); giving up.`);
		expect(ended.elapsedMs).toBeGreaterThanOrEqual(2000);
	});
});

describe("npm run import on MONGO_URI, without a cluster to join", () => {
	test("names the MongoDB it opens, and ends within START_TIMEOUT when none answers", async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "import-mongo-"));
		try {
			const file = path.join(dir, "catalogue.jsonl");
			writeFileSync(file, "{}\n");
			const uri = `mongodb://127.0.0.1:${await freePort()}/catalogue`;
			const alone = await runTool("import", [file], { env: { MONGO_URI: uri, START_TIMEOUT: "1" }, timeoutMs: 10_000 });
			expect(alone.output).toContain(`Importing ${file} into the catalogue of MongoDB at ${uri} (opened here)`);
			expect(alone.code).toBe(1);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});

describe("passwords in the connection URIs appear nowhere in a failing node's output, even in debug logs", () => {
	test("MONGO_URI: hidden in the message, absent from the driver's own failure", async () => {
		const port = await freePort();
		// Longer than the driver's 5 s server selection, so its connection failure is logged too.
		const ended = await runUntilExit(
			{
				MONGO_URI: `mongodb://catalogue:Pa55-w0rd@127.0.0.1:${port}/catalogue`,
				SERVICES: "games",
				START_TIMEOUT: "6",
				LOGLEVEL: "debug",
			},
			14_000,
		);
		expect(ended.code).toBe(1);
		expect(ended.output).toContain(`ECONNREFUSED 127.0.0.1:${port}`);
		expect(ended.output).toContain(`(MongoDB at mongodb://catalogue:***@127.0.0.1:${port}/catalogue); giving up.`);
		expect(ended.output).not.toContain("Pa55-w0rd");
	}, 20_000);

	test("REDIS_URL: a node that cannot read the cache generations waits for Redis, then says so and exits with 1, the password nowhere", async () => {
		const port = await freePort();
		const ended = await runUntilExit(
			{ REDIS_URL: `redis://:Pa55-w0rd@127.0.0.1:${port}`, SERVICES: "games", START_TIMEOUT: "3", LOGLEVEL: "debug" },
			10_000,
		);
		expect(ended.code).toBe(1);
		expect(ended.output).toContain(`Could not reach the Redis of REDIS_URL redis://:***@127.0.0.1:${port} within 3 s; giving up.`);
		expect(ended.output).not.toContain("Pa55-w0rd");
	});

	test("TRANSPORTER: hidden in the message and in moleculer's logs", async () => {
		const port = await freePort();
		const ended = await runUntilExit(
			{ TRANSPORTER: `nats://catalogue:Pa55-w0rd@127.0.0.1:${port}`, START_TIMEOUT: "2", LOGLEVEL: "debug" },
			10_000,
		);
		expect(ended.code).toBe(1);
		expect(ended.output).toContain(`Could not connect to the transporter at nats://catalogue:***@127.0.0.1:${port} within 2 s`);
		expect(ended.output).not.toContain("Pa55-w0rd");
	});
});

test("a bad setting ends the node at once with exit code 1 and the ConfigError's text", async () => {
	// Well within the default START_TIMEOUT of 30 s: a bad setting is not waited on.
	const ended = await runUntilExit({ SERVICES: "gmes" }, 10_000);
	expect(ended.code).toBe(1);
	expect(ended.output).toContain('FATAL CONFIG: SERVICES must be one of api, authors, categories, games; got "gmes"');
});

describe("SIGTERM during a start ends the node at once, whatever it waits for", () => {
	/** Starts a node on `env`, sends SIGTERM once `ready` says the start is at the stage tested, and times the exit. */
	async function terminatedWhile(env: NodeJS.ProcessEnv, ready: (output: string) => boolean): Promise<Ended> {
		const node = startNode({ START_TIMEOUT: "30", ...env });
		nodes.push(node);
		const deadline = Date.now() + 10_000;
		while (!ready(node.output()) && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20));
		const signalled = Date.now();
		node.child.kill("SIGTERM");
		let timer: NodeJS.Timeout | undefined;
		const late = new Promise<"running">(resolve => (timer = setTimeout(() => resolve("running"), 5_000)));
		const code = await Promise.race([node.exited, late]).finally(() => clearTimeout(timer));
		if (code === "running") {
			await node.kill();
			throw new Error(`the node ignored SIGTERM for 5 s:\n${node.output()}`);
		}
		return { code, output: node.output(), elapsedMs: Date.now() - signalled };
	}

	test("while it waits for an unreachable NATS server", async () => {
		const url = `nats://127.0.0.1:${await freePort()}`;
		const ended = await terminatedWhile({ TRANSPORTER: url, LOGLEVEL: "info" }, output => /Transporter|NATS|connect/i.test(output));
		expect(ended.elapsedMs).toBeLessThan(5_000);
	});

	test("while it waits for an unreachable Redis", async () => {
		const url = `redis://127.0.0.1:${await freePort()}`;
		const ended = await terminatedWhile({ REDIS_URL: url, SERVICES: "games", LOGLEVEL: "info" }, output =>
			/does not answer/.test(output),
		);
		expect(ended.elapsedMs).toBeLessThan(5_000);
	});

	test("while it waits for an unreachable MongoDB", async () => {
		const uri = `mongodb://127.0.0.1:${await freePort()}/catalogue`;
		const ended = await terminatedWhile({ MONGO_URI: uri, SERVICES: "games", LOGLEVEL: "info" }, output => /games/i.test(output));
		expect(ended.elapsedMs).toBeLessThan(5_000);
	});
});
