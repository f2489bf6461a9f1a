/**
 * What a node says when it cannot start, and the line that ends a start that worked: one line each, naming the variable to
 * look at, its value (credentials already hidden by the caller) and what to do (docs/operations.md, "When a node does not start").
 */

/** A ConfigError's text, said before the logger exists. */
export const badSetting = (message: string) => `${message}. Correct it in the environment or in .env, then start again.`;

/** Why `variable` (PORT, HEALTH_PORT or METRICS_PORT) could not be listened on, from the listen's `err`. */
export function portRefused(variable: string, port: number, err: NodeJS.ErrnoException): string {
	if (err.code === "EADDRINUSE")
		return `${variable} ${port} is already in use by another process: stop that process, or set ${variable} to a free port.`;
	if (err.code === "EACCES")
		return `${variable} ${port} may not be opened by this user (ports below 1024 need privileges): set ${variable} to 1024 or above.`;
	return `${variable} ${port} cannot be listened on (${err.code ?? err.message}): set ${variable} to another port.`;
}

export const transporterUnreachable = (url: string, seconds: number) =>
	`Could not connect to the transporter at ${url} within ${seconds} s; giving up. Start NATS there, or correct TRANSPORTER.`;

export const redisUnreachable = (url: string, seconds: number) =>
	`Could not reach the Redis of REDIS_URL ${url} within ${seconds} s; giving up. Start Redis there, correct REDIS_URL, or unset it.`;

/** `storage` as lib/storage/location.ts describeStorage says it. */
export function storageUnreachable(services: string, storage: string, seconds: number): string {
	const advice = storage.startsWith("MongoDB") ? " Start MongoDB there, or correct MONGO_URI." : "";
	return `Could not start within ${seconds} s: ${services} could not reach the storage (${storage}); giving up.${advice}`;
}

/** Said once when Redis stops answering (or does not answer at start); nothing more until it answers again. */
export const redisNotAnswering = (url: string, reason: string) =>
	`The Redis of REDIS_URL ${url} does not answer (${reason}); trying again until it does.`;

export const redisRefused = (url: string, seconds: number) =>
	`The Redis of REDIS_URL ${url} did not take the cache's epoch within ${seconds} s; giving up. Give it a writable primary, correct REDIS_URL, or unset it.`;

/** Redis answers but will not keep the cache's epoch: the node waits, trying again, until START_TIMEOUT. */
export const redisRefusesEpoch = (url: string, reason: string) =>
	`The Redis of REDIS_URL ${url} answers but refuses the cache's epoch (${reason}); trying again until it takes it.`;

export const redisAnswersAgain = (url: string) => `The Redis of REDIS_URL ${url} answers.`;

/**
 * `npm run repl` without TRANSPORTER: a REPL with no services of its own and no cluster to ask. Said at its start and as the
 * answer of every catalogue command.
 */
export const NO_CLUSTER =
	"This REPL has no cluster to join: TRANSPORTER is not set. Join a running cluster with TRANSPORTER=nats://... npm run repl, " +
	"or run the catalogue in this process with its REPL: npm start -- --repl.";

/** What ends a node's start-up log: where its API and docs are (on the gateway), else its services; and where its data is. */
export function readyLine({ port, services, storage }: { port: number | null; services: string[]; storage: string }): string {
	const data = services.some(name => name !== "api") ? `, data in ${storage}` : "";
	if (port === null) return `Catalogue node ready: ${services.join(", ")}${data}`;
	const url = `http://localhost:${port}`;
	return `Catalogue ready: ${url} (docs: ${url}/docs)${data}`;
}

/**
 * A line for a failure said before moleculer's logger exists, in the form the logger would give it: JSON when LOG_FORMAT
 * (or NODE_ENV=production without it) asks for JSON, else moleculer's text line.
 */
export function lineBeforeLogger(message: string, env: NodeJS.ProcessEnv, now = new Date()): string {
	const json = env.LOG_FORMAT === "json" || (!env.LOG_FORMAT && env.NODE_ENV === "production");
	if (json) return JSON.stringify({ time: now.toISOString(), level: "fatal", mod: "config", msg: message });
	return `[${now.toISOString()}] FATAL CONFIG: ${message}`;
}
