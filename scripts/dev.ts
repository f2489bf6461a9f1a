import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, statSync, watch, type FSWatcher } from "node:fs";
import path from "node:path";

// `npm run dev`: the inner loop. The services run as `npm start` runs them, in this terminal with
// moleculer's REPL and hot reload (`--hot`: a service whose built file or local dependency
// changes is reloaded, the broker restarted when moleculer.config.js changes); every change of a
// source file rebuilds dist/ (tsc, incremental), which is what the hot reload sees.
//
// Not `tsc --watch`: TypeScript 7.0.2's watch mode did not notice a changed file in 50 s here.
// Not concurrently, nodemon or tsc-watch: they pipe the children's input (the REPL needs this
// terminal) or restart the whole process after each build, losing the REPL and the hot reload.

const root = process.cwd();
const BUILD_CONFIG = "tsconfig.build.json";
const tsc = path.join(root, "node_modules/typescript/bin/tsc");
const runner = path.join(root, "node_modules/moleculer/bin/moleculer-runner.js");
/** Changes closer together than this are one rebuild (an editor's save, a git checkout). */
const SETTLE_MS = 150;

const say = (line: string) => console.log(`[dev] ${line}`);

/** The folders and files tsconfig.build.json compiles, as written in its `include`. */
function sources(): string[] {
	const { include } = JSON.parse(readFileSync(path.join(root, BUILD_CONFIG), "utf8")) as { include: string[] };
	return include;
}

/** Calls `changed` with the relative path of every TypeScript file changed under the sources. */
function watchSources(changed: (file: string) => void): FSWatcher[] {
	const files = new Set<string>();
	const watchers: FSWatcher[] = [];
	const typescript = (file: string) => file.endsWith(".ts") && changed(file);
	for (const entry of sources()) {
		if (statSync(path.join(root, entry)).isDirectory())
			watchers.push(watch(path.join(root, entry), { recursive: true }, (_event, name) => name && typescript(path.join(entry, name))));
		else files.add(entry);
	}
	// The files named in `include` (moleculer.config.ts) and the compiler's options, beside them.
	watchers.push(
		watch(root, (_event, name) => name && (files.has(name) ? changed(name) : /^tsconfig.*\.json$/.test(name) && changed(name))),
	);
	return watchers;
}

/** Rebuilds dist/ after each settled burst of changes, one build at a time; one line each. */
function rebuilder() {
	const pending = new Set<string>();
	let timer: NodeJS.Timeout | undefined;
	let building: ChildProcess | undefined;

	function build() {
		if (building) return;
		const files = [...pending];
		pending.clear();
		const started = performance.now();
		let output = "";
		building = spawn(process.execPath, [tsc, "-p", BUILD_CONFIG], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
		building.stdout!.on("data", chunk => (output += chunk));
		building.stderr!.on("data", chunk => (output += chunk));
		building.once("close", code => {
			building = undefined;
			const what = `${files.join(", ")} changed: rebuilt in ${Math.round(performance.now() - started)} ms`;
			// tsc emits even with type errors, as `npm run build` does: the services run what it wrote.
			if (code === 0) say(what);
			else say(`${what}, with errors:\n${output.trimEnd()}`);
			if (pending.size > 0) build();
		});
	}

	return {
		changed: (file: string) => {
			pending.add(file);
			clearTimeout(timer);
			timer = setTimeout(build, SETTLE_MS);
		},
		stop() {
			clearTimeout(timer);
			building?.kill();
		},
	};
}

function main() {
	const rebuild = rebuilder();
	const watchers = watchSources(rebuild.changed);
	// As `npm start`, with the REPL on this terminal (its input, output and Ctrl-C) and the hot reload.
	const services = spawn(
		process.execPath,
		[runner, "--config", "dist/moleculer.config.js", "--hot", "--repl", ...process.argv.slice(2)],
		{
			cwd: root,
			stdio: "inherit",
			env: { ...process.env, SERVICEDIR: "dist/services", LOG_FORMAT: process.env.LOG_FORMAT || "text" },
		},
	);
	say(`watching ${sources().join(", ")}; quit the REPL (or Ctrl-C) to stop`);
	// Ctrl-C reaches the runner too (one process group): it stops, and this process follows it.
	process.on("SIGINT", () => undefined);
	process.on("SIGTERM", () => services.kill("SIGTERM"));
	services.once("exit", (code, signal) => {
		for (const watcher of watchers) watcher.close();
		rebuild.stop();
		process.exit(code ?? (signal ? 1 : 0));
	});
}

main();
