/**
 * The first import of every entry point (moleculer.config.ts, the scripts): reads `.env` from the working directory, then the
 * configuration. Not pure, unlike the rest of lib/: it must run before anything reads the environment, and a bad setting must
 * end the process with one line before moleculer-runner prints it with its stack.
 */
import { existsSync } from "node:fs";
import { lineBeforeLogger, badSetting } from "./start-failures";

/** The working directory's environment file; a variable already set, even empty, is not replaced by it (docs/configuration.md). */
const ENV_FILE = ".env";

if (existsSync(ENV_FILE)) process.loadEnvFile(ENV_FILE);

/** `read()`'s value; a ConfigError it throws ends the process with one line and exit code 1 (the stack only under LOGLEVEL=debug). */
export function orExit<T>(read: () => T): T {
	try {
		return read();
	} catch (err) {
		if ((err as Error).name !== "ConfigError") throw err;
		const debug = ["debug", "trace"].includes(process.env.LOGLEVEL ?? "");
		process.stderr.write(`${lineBeforeLogger(badSetting((err as Error).message), process.env)}\n`);
		if (debug) process.stderr.write(`${(err as Error).stack}\n`);
		process.exit(1);
	}
}

// config.ts reads the environment as it loads: required here, after .env, so that its ConfigError is caught above.
// eslint-disable-next-line @typescript-eslint/no-require-imports
orExit(() => require("./config") as unknown);
