import { createHash } from "node:crypto";
import { format, inspect } from "node:util";
import { Loggers, TracerExporters, type BrokerOptions, type TracerOptions } from "moleculer";
import type { CatalogueConfig } from "../config/config";

/** Where Prometheus scrapes a node: METRICS_PORT, this path. */
const METRICS_PATH = "/metrics";

/** Prometheus at METRICS_PORT; off without it (nodes sharing a machine would fight over one port). */
export function metricsOptions({ metricsPort }: Pick<CatalogueConfig, "metricsPort">): BrokerOptions["metrics"] {
	if (metricsPort === null) return undefined;
	return { enabled: true, reporter: { type: "Prometheus", options: { port: metricsPort, path: METRICS_PATH } } };
}

const LEVELS = Loggers.LEVELS;
type LoggerBindings = Parameters<InstanceType<typeof Loggers.Console>["getLogHandler"]>[0];
const TO_STDERR = new Set(["fatal", "error", "warn"]);

/**
 * moleculer's console logger, written with `process.stdout.write` (stderr for warnings and errors) instead of `console.log`:
 * Node hands every console call to its inspector too, which costs a small read dearly (docs/performance.md).
 */
class StreamLogger extends Loggers.Console {
	override getLogHandler(bindings: LoggerBindings) {
		const level = bindings ? this.getLogLevel(bindings.mod) : null;
		if (!level) return null;
		const enabled = LEVELS.indexOf(level);
		const formatter = this.getFormatter(bindings);
		const secrets = ((this.opts as { redact?: string[] }).redact ?? []).filter(secret => secret.length >= MIN_REDACTED);
		return (type: string, args: unknown[]) => {
			if (LEVELS.indexOf(type) > enabled) return;
			let line = format(...formatter(type, args));
			for (const secret of secrets) if (line.includes(secret)) line = line.replaceAll(secret, "***");
			(TO_STDERR.has(type) ? process.stderr : process.stdout).write(`${line}\n`);
		};
	}
}

/** Shorter secrets are not looked for in log lines: they would blot out ordinary text. */
const MIN_REDACTED = 4;
// moleculer's typings ask for an instance where it keeps the class.
Loggers.register("Stream", StreamLogger as unknown as Parameters<typeof Loggers.register>[1]);

/**
 * Text is moleculer's console format with textFields; JSON is the same logger with jsonLogLine. Every line has the `secrets`
 * replaced by `***`, whoever logs them: a library's error can carry the failed command, password included (ioredis's AUTH).
 */
export function loggerOptions({ logFormat }: Pick<CatalogueConfig, "logFormat">, secrets: string[] = []): BrokerOptions["logger"] {
	const redact = secrets.length > 0 ? { redact: secrets } : {};
	if (logFormat === "text") return { type: "Stream", options: { objectPrinter: textFields, ...redact } };
	return { type: "Stream", options: { colors: false, formatter: jsonLogLine, ...redact } };
}

/** What moleculer tells a formatter about the logger a line comes from (node, namespace, module, service). */
type Bindings = Record<string, unknown>;

const isFields = (value: unknown): value is Record<string, unknown> =>
	typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;

const printed = (value: unknown) =>
	typeof value === "object" && value !== null ? inspect(value, { depth: 2, breakLength: Infinity }) : String(value);

/** A plain object in a text line as `key=value` pairs, quoting values with a space or quote; anything else as util.inspect prints it. */
export function textFields(value: unknown): string {
	if (!isFields(value)) return printed(value);
	return Object.entries(value)
		.filter(([, field]) => field !== undefined)
		.map(([key, field]) => `${key}=${typeof field === "string" && !/[\s"]/.test(field) ? field : JSON.stringify(field)}`)
		.join(" ");
}

/**
 * One JSON object per line: time, level, the logger's bindings, the keys of a plain object logged first (such as `requestId`),
 * the rest as `msg`. moleculer's "json" would print that object inside `msg`; its "jsonext" would drop an Error logged alone.
 */
export function jsonLogLine(level: string, args: unknown[], bindings?: Bindings): string[] {
	const [first, ...rest] = args;
	const fields = isFields(first) ? first : {};
	const msg = (isFields(first) ? rest : args).map(printed).join(" ");
	return [JSON.stringify({ ...fields, time: new Date().toISOString(), level, ...bindings, msg })];
}

/**
 * Zipkin's trace id for a request id: 16 lower-case hex digits. Zipkin refuses non-hex ids (the whole batch), so such an id
 * becomes the start of its SHA-256; every span still carries the request id as its `requestID` tag.
 */
export function zipkinTraceId(id: string): string {
	const bare = id.replace(/-/g, "").toLowerCase();
	return /^[0-9a-f]{16,}$/.test(bare) ? bare.slice(0, 16) : createHash("sha256").update(id).digest("hex").slice(0, 16);
}

/** moleculer's Zipkin exporter with ids Zipkin accepts (zipkinTraceId). */
class ZipkinExporter extends TracerExporters.Zipkin {
	override convertID(id: string): string {
		return id ? zipkinTraceId(id) : id;
	}
}

/** Every request traced, its spans sent where TRACE_EXPORTER says; off without it. */
export function tracingOptions({ tracing }: Pick<CatalogueConfig, "tracing">): BrokerOptions["tracing"] {
	if (tracing === null) return undefined;
	// Every action's span names who sent the request (ctx.meta.user, lib/sign-in/sign-in.ts) beside its params.
	const tags = { action: { params: true, meta: ["user"] } };
	if (tracing.exporter === "console") return { enabled: true, exporter: { type: "Console" }, tags };
	// moleculer takes an exporter object as it takes a type name (tracing/exporters resolve()); its typings list only the names.
	const exporter = new ZipkinExporter({ baseURL: tracing.url }) as unknown as TracerOptions["exporter"];
	return { enabled: true, exporter, tags };
}
