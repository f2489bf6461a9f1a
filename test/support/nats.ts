import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { natsAuthorization, NODE_KINDS, passwordVariable, type NodeKind } from "../../lib/config/broker-access";
import { aliases } from "../../services/api.routes";
import { freePort, freePorts, listening, root, waitFor } from "./process";

/** Debian's package installs it here; elsewhere it must be on PATH (see test/README.md). */
const NATS_SERVER = existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server";

export interface NatsServer {
	/** Without credentials: for a server without access rules. */
	url: string;
	/** The URL with the credentials of a kind of node, or of `anyone`: a user the access rules do not know, allowed everything. */
	urlAs(user: NodeKind | "anyone"): string;
	port: number;
	/** Stops the server; `start` brings it back on the same port. */
	stop(): Promise<void>;
	start(): Promise<void>;
}

export interface NatsOptions {
	/** The client port; a free one by default. */
	port?: number;
	/** Started under `nice -n <niceness>`: a server with less CPU than its neighbours when the CPUs are busy. */
	niceness?: number;
	/**
	 * nats-access.conf's rules (docs/security.md, "The broker"): each client must log in as its kind of node (`urlAs`), or as
	 * `anyone`. Without them (the default), every client is let in without logging in, allowed everything.
	 */
	access?: boolean;
	/** More of the server's environment: each kind's password, say, in place of the test's own. */
	env?: NodeJS.ProcessEnv;
}

/** The password of each kind of node on a test's nats-server: nats-access.conf reads them from its environment. */
const passwords = Object.fromEntries(NODE_KINDS.map(kind => [passwordVariable(kind), `test-${kind}-password`]));

/** A user the rules do not know, allowed everything: for a test's own clients. */
const ANYONE = "{ user: anyone, password: anyone }";

/**
 * A configuration of the test's own: nats.conf, with nats-access.conf's users and `anyone` (`access`), whom every client must log in
 * as; and `more`.
 */
async function testConfig(folder: string, access: boolean, more: string[] = []): Promise<string> {
	const authorization = access ? natsAuthorization(Object.values(aliases)).replace(/\n {2}\]\n\}\n$/, `,\n    ${ANYONE}\n  ]\n}\n`) : "";
	const file = path.join(folder, "nats.conf");
	await writeFile(file, [`include "${path.relative(folder, path.join(root, "nats.conf"))}"`, authorization, ...more].join("\n"));
	return file;
}

/**
 * A nats-server of the test's own, configured as a cluster's (nats.conf, with or without its access
 * rules: `access`) or with `chosenConfig`, on a free loopback port, ready when this resolves.
 */
export async function startNats(
	timeoutMs = 10_000,
	chosenConfig?: string,
	{ port: chosenPort, niceness, access = false, env }: NatsOptions = {},
): Promise<NatsServer> {
	const port = chosenPort ?? (await freePort());
	// JetStream's folder, kept across a restart of this server (the change feed's stream survives it), removed with the run's
	// temporary folder (support/tmp-setup.ts).
	const storeDir = await mkdtemp(path.join(tmpdir(), "nats-jetstream-"));
	const config = chosenConfig ?? (await testConfig(storeDir, access));
	const command = [NATS_SERVER, "-c", config, "-a", "127.0.0.1", "-p", String(port), "--store_dir", storeDir];
	let child: ChildProcess | undefined;
	let output = "";

	async function start() {
		output = "";
		const [file, ...args] = niceness === undefined ? command : ["nice", "-n", String(niceness), ...command];
		child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...passwords, ...env } });
		child.stdout!.on("data", chunk => (output += chunk));
		child.stderr!.on("data", chunk => (output += chunk));
		const failed = new Promise<never>((_, reject) => {
			child!.once("error", err => reject(new Error(`cannot run ${NATS_SERVER}: ${err.message} (see test/README.md)`)));
			child!.once("exit", code => reject(new Error(`nats-server exited with ${code}:\n${output}`)));
		});
		await listening(port, failed, timeoutMs, () => `nats-server did not listen on ${port} within ${timeoutMs} ms:\n${output}`);
	}

	function stop() {
		return new Promise<void>(resolve => {
			if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
			child.removeAllListeners("exit");
			child.once("exit", () => resolve());
			child.kill("SIGTERM");
		});
	}

	await start();
	const urlAs = (user: NodeKind | "anyone") =>
		`nats://${user}:${user === "anyone" ? user : passwords[passwordVariable(user)]}@127.0.0.1:${port}`;
	return { url: `nats://127.0.0.1:${port}`, urlAs, port, stop, start };
}

/** nats-servers joined by routes into one NATS cluster: a client of any of them reaches the clients of all. */
export interface NatsCluster {
	/** The servers, each with a client port of its own. */
	servers: NatsServer[];
	/** Stops every server and removes their configuration files. */
	stop(): Promise<void>;
}

/** How many routes a server of a cluster has up, as its monitoring endpoint lists them. */
async function routesUp(monitorPort: number): Promise<number> {
	const response = await fetch(`http://127.0.0.1:${monitorPort}/routez`);
	return ((await response.json()) as { num_routes: number }).num_routes;
}

/**
 * `size` nats-servers on free loopback ports, each configured as `startNats` does plus a `cluster {}`
 * block with a route to every other one and a monitoring port; ready once every route is up.
 */
export async function startNatsCluster(size = 3, timeoutMs = 10_000, options: Omit<NatsOptions, "port"> = {}): Promise<NatsCluster> {
	const folder = await mkdtemp(path.join(tmpdir(), "nats-cluster-"));
	const servers: NatsServer[] = [];
	const stop = async () => {
		await Promise.all(servers.map(server => server.stop()));
		await rm(folder, { recursive: true, force: true });
	};
	try {
		const ports = await freePorts(3 * size);
		const [clientPorts, routePorts, monitorPorts] = [0, 1, 2].map(kind => ports.slice(kind * size, (kind + 1) * size));
		for (let i = 0; i < size; i++) {
			const routes = routePorts.filter((_, other) => other !== i).map(port => `"nats://127.0.0.1:${port}"`);
			const cluster = [
				`http: "127.0.0.1:${monitorPorts[i]}"`,
				`server_name: catalogue-test-${i}`,
				"cluster {",
				"\tname: catalogue-test",
				`\tlisten: "127.0.0.1:${routePorts[i]}"`,
				`\troutes: [${routes.join(", ")}]`,
				"}",
			];
			const own = path.join(folder, String(i));
			await mkdir(own);
			const config = await testConfig(own, options.access ?? false, cluster);
			servers.push(await startNats(timeoutMs, config, { ...options, port: clientPorts[i] }));
		}
		await waitFor(
			`each of the ${size} nats-servers has a route to every other`,
			async () => (await Promise.all(monitorPorts.map(routesUp))).every(routes => routes === size - 1),
			[],
			timeoutMs,
		);
	} catch (err) {
		await stop();
		throw err;
	}
	return { servers, stop };
}
