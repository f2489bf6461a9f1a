import { spawn, type ChildProcess } from "node:child_process";
import { freePort, listening } from "./process";

/** A redis-server of the test's own, keeping nothing on disk, so it can be stopped and restarted. */
export interface RedisServer {
	url: string;
	/** Stops the server; what it held is gone. */
	stop(): Promise<void>;
	/** Starts it again, empty, on the same port. */
	start(): Promise<void>;
}

/** Debian's redis-server (apt-get install redis-server) on a free loopback port, with `options` of redis-server's command line. */
export async function startRedis(timeoutMs = 10_000, options: string[] = []): Promise<RedisServer> {
	const port = await freePort();
	let child: ChildProcess | undefined;

	async function start() {
		child = spawn("redis-server", [...options, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
			stdio: "ignore",
		});
		const failed = new Promise<never>((_, reject) =>
			child!.once("error", err => reject(new Error(`cannot run redis-server: ${err.message}`))),
		);
		await listening(port, failed, timeoutMs, () => `redis-server did not listen on ${port} within ${timeoutMs} ms`);
	}

	const stop = () =>
		new Promise<void>(resolve => {
			if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
			child.once("exit", () => resolve());
			child.kill("SIGKILL");
		});

	await start();
	return { url: `redis://127.0.0.1:${port}`, stop, start };
}
