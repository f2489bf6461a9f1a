import path from "node:path";

/** Everything the catalogue reads from the environment, read and checked once at start-up. */
export interface CatalogueConfig {
	/** HTTP port of the gateway (`PORT`, default 3000; 0 picks a free port). */
	port: number;
	/** Where the embedded NeDB files live (`DATA_DIR`, default ./data). */
	dataDir: string;
	/** `file` (NeDB files, the default) or `memory` (nothing kept; for tests) (`STORAGE`). */
	storage: "file" | "memory";
	/** Moleculer transporter URL (`TRANSPORTER`); none runs every service in one process. */
	transporter: string | null;
	/** Separates clusters sharing one transporter (`NAMESPACE`). */
	namespace: string;
	/** Moleculer log level (`LOGLEVEL`, default info). */
	logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace";
	/** Largest JSON body the gateway accepts (`BODY_LIMIT`, default 100kb). */
	bodyLimit: string;
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace"] as const;

export class ConfigError extends Error {}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
	if ((allowed as readonly string[]).includes(value)) return value as T;
	throw new ConfigError(`${name} must be one of ${allowed.join(", ")}; got "${value}"`);
}

function port(value: string): number {
	const number = Number(value);
	if (value.trim() === "" || !Number.isInteger(number) || number < 0 || number > 65535)
		throw new ConfigError(`PORT must be a whole number from 0 to 65535; got "${value}"`);
	return number;
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): CatalogueConfig {
	return {
		port: port(env.PORT ?? "3000"),
		dataDir: path.resolve(env.DATA_DIR || "data"),
		storage: oneOf("STORAGE", env.STORAGE || "file", ["file", "memory"] as const),
		transporter: env.TRANSPORTER || null,
		namespace: env.NAMESPACE ?? "",
		logLevel: oneOf("LOGLEVEL", env.LOGLEVEL || "info", LOG_LEVELS),
		bodyLimit: env.BODY_LIMIT || "100kb",
	};
}

export const config: CatalogueConfig = readConfig();
