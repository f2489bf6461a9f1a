import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { NODE_FLAGS } from "../lib/config/node-flags";

// `npm run dev`: the inner loop. The services run as `npm start` runs them, in this terminal with
// moleculer's REPL and hot reload (`--hot`: a service whose built file or local dependency
// changes is reloaded, the broker restarted when moleculer.config.js changes); `tsc --watch`
// rebuilds dist/ on every change of a source, which is what the hot reload sees.
//
// Not concurrently, nodemon or tsc-watch: they pipe the children's input (the REPL needs this
// terminal) or restart the whole process after each build, losing the REPL and the hot reload.

const root = process.cwd();
const tsc = path.join(root, "node_modules/typescript/bin/tsc");
const runner = path.join(root, "node_modules/moleculer/bin/moleculer-runner.js");

const say = (line: string) => console.log(`[dev] ${line}`);

/**
 * `tsc --watch` on the build's configuration, its report cut to one line per rebuild (the files
 * it wrote, how long it took) and the errors, if any, below it. tsc writes the files even with
 * type errors, as `npm run build` does: the services run what it wrote.
 */
function watchSources() {
	const options = ["--watch", "--preserveWatchOutput", "--pretty", "false", "--listEmittedFiles"];
	const compiler = spawn(process.execPath, [tsc, "-p", "tsconfig.build.json", ...options], {
		cwd: root,
		stdio: ["ignore", "pipe", "inherit"],
	});
	let first = true;
	let started = performance.now();
	let written: string[] = [];
	let errors: string[] = [];
	createInterface({ input: compiler.stdout }).on("line", line => {
		const file = /^TSFILE: (.+\.js)$/.exec(line)?.[1];
		const found = /Found (\d+) errors?\. Watching for file changes/.exec(line);
		if (/Starting (incremental )?compilation/.test(line)) [started, written, errors] = [performance.now(), [], []];
		else if (file) written.push(path.relative(root, file));
		else if (found) {
			const took = `in ${Math.round(performance.now() - started)} ms`;
			const files = written.join(", ") || "nothing";
			// The first pass writes what changed since `npm run build`: usually nothing.
			const what = first ? `built ${files} ${took}; watching the sources of tsconfig.build.json` : `rebuilt ${files} ${took}`;
			say(found[1] === "0" ? what : `${what}, with errors:\n${errors.join("\n")}`);
			first = false;
		} else if (line.trim() !== "" && !line.startsWith("TSFILE: ")) errors.push(line);
	});
	return compiler;
}

function main() {
	const compiler = watchSources();
	// As `npm start`, with the REPL on this terminal (its input, output and Ctrl-C) and the hot reload.
	const services = spawn(
		process.execPath,
		[...NODE_FLAGS, runner, "--config", "dist/moleculer.config.js", "--hot", "--repl", ...process.argv.slice(2)],
		{
			cwd: root,
			stdio: "inherit",
			env: { ...process.env, SERVICEDIR: "dist/services", LOG_FORMAT: process.env.LOG_FORMAT || "text" },
		},
	);
	say("quit the REPL (or Ctrl-C) to stop");
	// Ctrl-C reaches the runner and tsc too (one process group): the runner stops, and this process follows it.
	process.on("SIGINT", () => undefined);
	process.on("SIGTERM", () => services.kill("SIGTERM"));
	services.once("exit", (code, signal) => {
		compiler.kill();
		process.exit(code ?? (signal ? 1 : 0));
	});
}

main();
