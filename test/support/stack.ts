import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { root } from "./process";

// The project's docker-compose.yml on this machine's own Docker engine, as
// deploy/local-docker/stack.sh runs it (deploy/local-docker/README.md). Every docker and
// docker-compose command gets the same small environment (stackCommandEnvironment): the variables
// compose interpolates come from the stack's environment file alone, never from the shell that
// runs the tests.

const STACK = path.join(root, "deploy/local-docker/stack.sh");
const ENGINE = path.join(root, "deploy/local-docker/engine.sh");

/** The catalogue's own containers; nats, redis and mongo are their dependencies. */
export const NODES = ["api", "authors", "categories", "games"] as const;
export const DEPENDENCIES = ["mongo", "nats", "redis"] as const;

/** What a command of .env.example prints, as an operator's shell runs it. */
export const madeBy = (command: string) => execFileSync("bash", ["-c", command], { encoding: "utf8" }).trim();

/**
 * The environment file an operator makes by following .env.example: every uncommented line as it
 * is, every credential it lists set (the users to the names it suggests, the passwords to what the
 * command it names prints), and the gateway's port on 127.0.0.1.
 */
export function stackEnvironment(apiPort: number): Record<string, string> {
	const env: Record<string, string> = {};
	for (const line of readFileSync(path.join(root, ".env.example"), "utf8").split("\n")) {
		const set = /^(\w+)=(.*)$/.exec(line);
		if (set) env[set[1]] = set[2];
		const credential = /^# (\w+_(?:USER|PASSWORD))=(.*)$/.exec(line);
		if (credential) env[credential[1]] = /^<(.*)>$/.test(credential[2]) ? madeBy(credential[2].slice(1, -1)) : credential[2];
	}
	return { ...env, API_PORT: String(apiPort) };
}

export function writeEnvironment(file: string, env: Record<string, string>): void {
	writeFileSync(
		file,
		Object.entries(env)
			.map(([name, value]) => `${name}=${value}\n`)
			.join(""),
	);
}

/**
 * What the stand-in build needs of the machine to reach the npm registry and Debian's mirror: its
 * trust (a TLS proxy's CA named by NODE_EXTRA_CA_CERTS), its proxies, a registry or mirror of its
 * own, and where the engine keeps its data. docker-compose.yml interpolates none of these
 * (test/deploy/compose.test.ts), so compose still takes its variables from the file alone.
 */
export const MACHINE_SETTINGS =
	/^(NODE_EXTRA_CA_CERTS|NODE_USE_SYSTEM_CA|SSL_CERT_(FILE|DIR)|(HTTPS?|NO|ALL)_PROXY|npm_config_(userconfig|globalconfig|cache|cafile|ca|cert|key|registry|proxy|https_proxy|noproxy|strict_ssl)|DEBIAN_MIRROR|CATALOGUE_DOCKER_ROOT)$/i;

/** The environment of every command the stack runs: PATH, HOME, the environment file, and the machine's settings above. */
export function stackCommandEnvironment(envFile: string, machine: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
	const env: NodeJS.ProcessEnv = { PATH: machine.PATH, HOME: machine.HOME, STACK_ENV_FILE: envFile };
	for (const [name, value] of Object.entries(machine)) if (MACHINE_SETTINGS.test(name)) env[name] = value;
	return env;
}

export interface DockerEvent {
	Action: string;
	timeNano: number;
	Actor: { ID: string; Attributes: Record<string, string> };
}

export interface Run {
	code: number | null;
	output: string;
}

/** Runs a command from the repository's root to its end, with exactly `env`; its output, stdout and stderr together. */
export function runCommand(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
	return new Promise(resolve => {
		const child = execFile(command, args, { cwd: root, env, timeout: timeoutMs, maxBuffer: 256 * 1024 * 1024 }, error => {
			resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, output });
		});
		let output = "";
		child.stdout?.on("data", chunk => (output += chunk));
		child.stderr?.on("data", chunk => (output += chunk));
	});
}

export class Stack {
	readonly env: NodeJS.ProcessEnv;

	constructor(envFile: string) {
		this.env = stackCommandEnvironment(envFile);
	}

	/** The engine's DOCKER_HOST, which docker commands need. */
	private host?: string;

	/** Runs a command to its end; its output, stdout and stderr together. */
	run(command: string, args: string[], timeoutMs = 120_000): Promise<Run> {
		return runCommand(command, args, this.host ? { ...this.env, DOCKER_HOST: this.host } : this.env, timeoutMs);
	}

	/** Runs a command, failing with its output unless it exits 0; its output. */
	async must(command: string, args: string[], timeoutMs?: number): Promise<string> {
		const { code, output } = await this.run(command, args, timeoutMs);
		if (code !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${code}:\n${output.slice(-8000)}`);
		return output;
	}

	/**
	 * stack.sh up, watched: `prepare` (the engine, the stand-in images, the image from the Dockerfile), then the engine's events
	 * recorded from before `up -d` to `events()`. Recorded as they come, as the engine replays only its latest few hundred to a
	 * later `docker events --since`, and the containers' health checks add three every few seconds.
	 */
	async up(timeoutMs: number): Promise<string> {
		this.host = (await this.must("bash", [ENGINE, "host"])).trim();
		const output = await this.must("bash", [STACK, "prepare"], timeoutMs);
		// From this second on: what comes before `docker events` has subscribed is replayed (a few events, well within what the
		// engine keeps), so `up -d` cannot start a container unseen.
		const since = String(Math.floor(Date.now() / 1000));
		this.watcher = spawn("docker", ["events", "--since", since, "--format", "{{json .}}", "--filter", "type=container"], {
			env: { ...this.env, DOCKER_HOST: this.host },
			stdio: ["ignore", "pipe", "ignore"],
		});
		this.watcher.stdout!.setEncoding("utf8").on("data", (chunk: string) => (this.watched += chunk));
		try {
			return output + (await this.compose("up", "-d"));
		} catch (error) {
			// compose names the unhealthy dependency by its container's id only: which service it is, and why.
			const states = await Promise.all(
				DEPENDENCIES.map(async service => ({ service, status: (await this.inspect(service)).State.Health?.Status })),
			);
			const unhealthy = states.filter(({ status }) => status !== "healthy").map(({ service }) => service);
			throw new Error(
				`${(error as Error).message}\n${states.map(({ service, status }) => `${service}: ${status}`).join(", ")}\n${await this.why(unhealthy)}`,
				{ cause: error },
			);
		}
	}

	private watcher?: ChildProcess;
	private watched = "";

	/** The engine's container events since `up -d`, as `docker events` gives them. */
	events(): DockerEvent[] {
		return this.watched
			.split("\n")
			.filter(Boolean)
			.map(line => JSON.parse(line) as DockerEvent);
	}

	/** stack.sh down: the stack and its volumes removed, the engine stopped by its PID. */
	down(): Promise<Run> {
		this.watcher?.kill();
		return this.run("bash", [STACK, "down"]);
	}

	/** What is mounted under the engine's folder (CATALOGUE_DOCKER_ROOT): nothing, once it is stopped. */
	async mountsLeft(): Promise<string[]> {
		const folder = path.dirname((await this.must("bash", [ENGINE, "host"])).trim().replace(/^unix:\/\//, ""));
		return readFileSync("/proc/self/mounts", "utf8")
			.split("\n")
			.map(line => line.split(" ")[1])
			.filter(mount => mount?.startsWith(`${folder}/`));
	}

	compose = (...args: string[]) => this.must("bash", [STACK, "compose", ...args]);
	docker = (...args: string[]) => this.must("docker", args);

	/** docker-compose with its standard input open, for the REPL. */
	spawnCompose(...args: string[]): ChildProcess {
		return spawn("bash", [STACK, "compose", ...args], { cwd: root, env: { ...this.env, DOCKER_HOST: this.host } });
	}

	/** The id of the running (or last) container of a compose service. */
	async container(service: string): Promise<string> {
		const ids = (await this.compose("ps", "-q", service)).trim().split("\n").filter(Boolean);
		if (ids.length !== 1) throw new Error(`expected one container of ${service}, found ${ids.length}`);
		return ids[0];
	}

	async inspect<T = any>(service: string): Promise<T> {
		return JSON.parse(await this.docker("inspect", await this.container(service)))[0] as T;
	}

	/** Until every one of `services` reports healthy by its own health check, or `timeoutMs`. */
	async healthy(services: readonly string[], timeoutMs: number): Promise<void> {
		const deadline = Date.now() + timeoutMs;
		let states: string[] = [];
		while (Date.now() < deadline) {
			states = await Promise.all(services.map(async service => `${service}: ${(await this.inspect(service)).State.Health?.Status}`));
			if (states.every(state => state.endsWith(": healthy"))) return;
			await new Promise(resolve => setTimeout(resolve, 1000));
		}
		const unhealthy = services.filter((_, index) => !states[index].endsWith(": healthy"));
		throw new Error(`not healthy within ${timeoutMs} ms: ${states.join(", ")}\n${await this.why(unhealthy)}`);
	}

	/** Why `services` are not healthy: each one's last checks (a node's check prints what it waits for), then its own log. */
	private async why(services: readonly string[]): Promise<string> {
		const checks = await Promise.all(
			services.map(async service => {
				const log: { ExitCode: number; Output: string }[] = (await this.inspect(service)).State.Health?.Log ?? [];
				return `${service}: ${log.map(check => `[${check.ExitCode}] ${check.Output.trim()}`).join(" | ")}`;
			}),
		);
		const logs = await this.run("bash", [STACK, "compose", "logs", "--no-color", "--tail=20", ...services]);
		return `${checks.join("\n")}\n${logs.output.slice(-6000)}`;
	}
}
