import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { freePort, listening, root } from "./process";

/** Debian's package installs it here; elsewhere it must be on PATH (see test/README.md). */
const NATS_SERVER = existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server";

export interface NatsServer {
	url: string;
	port: number;
	/** Stops the server; `start` brings it back on the same port. */
	stop(): Promise<void>;
	start(): Promise<void>;
}

/**
 * A nats-server of the test's own, configured as a cluster's (nats.conf) or with `config`, on a
 * free loopback port, ready when this resolves.
 */
export async function startNats(timeoutMs = 10_000, config = path.join(root, "nats.conf")): Promise<NatsServer> {
	const port = await freePort();
	let child: ChildProcess | undefined;
	let output = "";

	async function start() {
		output = "";
		child = spawn(NATS_SERVER, ["-c", config, "-a", "127.0.0.1", "-p", String(port)], { stdio: ["ignore", "pipe", "pipe"] });
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
	return { url: `nats://127.0.0.1:${port}`, port, stop, start };
}
