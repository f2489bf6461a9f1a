import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { ServiceBroker } from "moleculer";
import brokerOptions from "../../moleculer.config";
import ApiService from "../../services/api.service";
import AuthorsService from "../../services/authors.service";
import CategoriesService from "../../services/categories.service";
import GamesService from "../../services/games.service";
import { Api } from "../support/catalogue";
import { startNats, type NatsServer } from "../support/nats";
import { freePort, root } from "../support/process";

const runner = path.join(root, "node_modules/moleculer/bin/moleculer-runner.js");
const PROMPT = "catalogue $";
const PROMPT_SHOWN = /catalogue \$/;

/** A REPL node in its own process, driven through its standard input as an operator types. */
class ReplSession {
	private output = "";
	private readonly exited: Promise<number | null>;
	readonly child: ChildProcess;

	constructor(args: string[], env: NodeJS.ProcessEnv) {
		this.child = spawn(process.execPath, [runner, "--config", "dist/moleculer.config.js", ...args, "--repl"], {
			cwd: root,
			env: { ...process.env, LOGLEVEL: "warn", ...env },
			stdio: ["pipe", "pipe", "pipe"],
		});
		this.child.stdout!.on("data", chunk => (this.output += chunk));
		this.child.stderr!.on("data", chunk => (this.output += chunk));
		this.exited = new Promise(resolve => this.child.once("exit", code => resolve(code)));
	}

	/** Waits until the output since `from` matches, and returns that part of the output. */
	async waitFor(pattern: RegExp, from = 0, timeoutMs = 15_000): Promise<string> {
		const deadline = Date.now() + timeoutMs;
		while (!pattern.test(this.output.slice(from))) {
			if (this.child.exitCode !== null) throw new Error(`the REPL exited with ${this.child.exitCode}:\n${this.output}`);
			if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms in:\n${this.output.slice(from)}`);
			await new Promise(resolve => setTimeout(resolve, 50));
		}
		return this.output.slice(from);
	}

	/** Types a command and returns what it printed up to the next prompt. */
	async type(command: string): Promise<string> {
		const from = this.output.length;
		this.child.stdin!.write(`${command}\n`);
		const printed = await this.waitFor(/\ncatalogue \$/, from);
		return printed.slice(0, printed.lastIndexOf(PROMPT));
	}

	/** `quit`, and the exit code. */
	quit(): Promise<number | null> {
		this.child.stdin!.write("quit\n");
		return this.exited;
	}

	kill() {
		if (this.child.exitCode === null) this.child.kill("SIGKILL");
	}
}

describe("npm run repl: a REPL node that joins a running cluster over NATS", () => {
	const namespace = `repl-${process.pid}`;
	let nats: NatsServer;
	let broker: ServiceBroker;
	let repl: ReplSession | undefined;
	let orphan: { id: string; author: string };

	beforeAll(async () => {
		nats = await startNats();
		broker = new ServiceBroker({
			...brokerOptions,
			transporter: { type: "NATS", options: { url: nats.url } },
			namespace,
			nodeID: "cluster",
			logger: false,
		});
		for (const schema of [AuthorsService, CategoriesService, GamesService, ApiService]) broker.createService(schema);
		await broker.start();
		const { port } = (broker.getLocalService("api") as unknown as { server: { address(): AddressInfo } }).server.address();
		const api = new Api(`http://127.0.0.1:${port}`);
		const category = await api.category("Euro");
		const kept = await api.author("Kept", "German");
		const gone = await api.author("Gone", "French");
		await api.game("Sound", category, kept);
		orphan = await api.game("Orphaned", category, gone);
		// An author removed behind the catalogue's back (as a direct edit of the store would):
		// the one way a game can lose its author, since the service refuses it.
		const authors = broker.getLocalService("authors") as unknown as { adapter: { removeById(id: string): Promise<unknown> } };
		await authors.adapter.removeById(gone.id);
	});

	afterAll(async () => {
		repl?.kill();
		await broker?.stop();
		await nats?.stop();
	});

	test("counts, integrity and the built-in nodes command, then quit", async () => {
		repl = new ReplSession([], { SERVICES: "", TRANSPORTER: nats.url, NAMESPACE: namespace });
		await repl.waitFor(PROMPT_SHOWN);

		const counts = await repl.type("counts");
		expect(counts).toMatch(/authors\s+1\b/);
		expect(counts).toMatch(/categories\s+1\b/);
		expect(counts).toMatch(/games\s+2\b/);

		const integrity = await repl.type("integrity");
		expect(integrity).toContain("1 game(s) refer to a missing category or author:");
		expect(integrity).toContain(`${orphan.id}  "Orphaned"  missing author ${orphan.author}`);
		expect(integrity).not.toContain('"Sound"');
		expect(await repl.type("orphans")).toContain(`missing author ${orphan.author}`);

		expect(await repl.type("nodes")).toContain("cluster");
		expect(await repl.quit()).toBe(0);
	});
});

describe("npm start -- --repl: a node that runs the services with the REPL attached", () => {
	let repl: ReplSession | undefined;
	afterAll(() => repl?.kill());

	test("counts what was written through its own gateway; integrity finds nothing wrong", async () => {
		const port = await freePort();
		repl = new ReplSession([], { SERVICEDIR: "dist/services", STORAGE: "memory", PORT: String(port), TRANSPORTER: "" });
		await repl.waitFor(PROMPT_SHOWN);
		const api = new Api(`http://127.0.0.1:${port}`);
		const category = await api.category("Family");
		await api.game("Carcassonne", category, await api.author());

		const counts = await repl.type("counts");
		expect(counts).toMatch(/authors\s+1\b/);
		expect(counts).toMatch(/categories\s+1\b/);
		expect(counts).toMatch(/games\s+1\b/);
		expect(await repl.type("integrity")).toContain("Integrity check passed");
		expect(await repl.quit()).toBe(0);
	});
});
