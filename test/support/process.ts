import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { Api } from "./catalogue";

export const root = path.resolve(__dirname, "../..");
const runner = path.join(root, "node_modules/moleculer/bin/moleculer-runner.js");

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer().listen(0, "127.0.0.1", () => {
			const { port } = server.address() as { port: number };
			server.close(() => resolve(port));
		});
		server.on("error", reject);
	});
}

export interface RunningCatalogue {
	child: ChildProcess;
	api: Api;
	output: () => string;
	/** SIGTERM, and the exit code once the process has ended. */
	stop(): Promise<number | null>;
}

/** Starts the built service the way `npm start` does, and waits until the gateway answers. */
export async function startProcess(env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<RunningCatalogue> {
	if (!existsSync(path.join(root, "dist/moleculer.config.js")))
		throw new Error("dist/ is missing: run `npm run build` (npm test does it first)");
	const port = await freePort();
	const child = spawn(process.execPath, [runner, "--config", "dist/moleculer.config.js", "dist/services"], {
		cwd: root,
		env: { ...process.env, LOGLEVEL: "warn", ...env, PORT: String(port) },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let output = "";
	child.stdout!.on("data", chunk => (output += chunk));
	child.stderr!.on("data", chunk => (output += chunk));
	const exited = new Promise<number | null>(resolve => child.once("exit", code => resolve(code)));
	const api = new Api(`http://127.0.0.1:${port}`);
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}:\n${output}`);
		const ready = await api.get("/category").then(answer => answer.status === 200, () => false);
		if (ready) break;
		if (Date.now() > deadline) {
			child.kill("SIGKILL");
			throw new Error(`the service did not answer within ${timeoutMs} ms:\n${output}`);
		}
		await new Promise(resolve => setTimeout(resolve, 100));
	}
	return {
		child,
		api,
		output: () => output,
		stop() {
			child.kill("SIGTERM");
			return exited;
		},
	};
}
