import { createHash } from "node:crypto";
import { format, inspect } from "node:util";
import type { Server } from "node:http";
import {
	Loggers,
	MetricReporters,
	TracerExporters,
	type BrokerOptions,
	type Context,
	type MetricRegistry,
	type TracerOptions,
} from "moleculer";
import type { CatalogueConfig } from "../config/config";
import { portRefused } from "../config/start-failures";
import { isSecretName } from "../http/access-log";

/** Where Prometheus scrapes a node: METRICS_PORT, this path. */
const METRICS_PATH = "/metrics";

/** moleculer's Prometheus reporter, whose port refused would crash the process unhandled: one line naming METRICS_PORT instead. */
class PrometheusReporter extends MetricReporters.Prometheus {
	override init(registry: MetricRegistry): void {
		super.init(registry);
		const { server, opts } = this as unknown as { server: Server; opts: { port: number } };
		server.on("error", (err: NodeJS.ErrnoException) => {
			if (err.syscall !== "listen") throw err;
			registry.logger.fatal(portRefused("METRICS_PORT", opts.port, err));
			process.exit(1);
		});
	}
}

/** Prometheus at METRICS_PORT; off without it (nodes sharing a machine would fight over one port). */
export function metricsOptions({ metricsPort }: Pick<CatalogueConfig, "metricsPort">): BrokerOptions["metrics"] {
	if (metricsPort === null) return undefined;
	// moleculer takes a reporter object as it takes a type name; its typings list only the names.
	const reporter = new PrometheusReporter({ port: metricsPort, path: METRICS_PATH }) as unknown as Extract<
		BrokerOptions["metrics"],
		object
	>["reporter"];
	return { enabled: true, reporter };
}

const LEVELS = Loggers.LEVELS;
type LoggerBindings = Parameters<InstanceType<typeof Loggers.Console>["getLogHandler"]>[0];
const TO_STDERR = new Set(["fatal", "error", "warn"]);

/** The output streams watched for failures, and those that failed (EPIPE: their reader is gone), written no more. */
const watchedOutputs = new Set<NodeJS.WriteStream>();
const failedOutputs = new Set<NodeJS.WriteStream>();

/**
 * A log line's stream, watched once: an output whose reader has gone (`npm start | head`, a log collector restarted) fails its writes
 * with EPIPE, an 'error' no one listened to, which ended the process. Its lines are dropped from then on, said once on the other
 * stream, and the catalogue goes on serving (docs/observability.md).
 */
function logOutput(stream: NodeJS.WriteStream): NodeJS.WriteStream | undefined {
	if (failedOutputs.has(stream)) return undefined;
	if (!watchedOutputs.has(stream)) {
		watchedOutputs.add(stream);
		stream.on("error", (err: NodeJS.ErrnoException) => {
			if (failedOutputs.has(stream)) return;
			failedOutputs.add(stream);
			const other = stream === process.stdout ? process.stderr : process.stdout;
			const name = stream === process.stdout ? "standard output" : "standard error";
			logOutput(other)?.write(`The ${name} failed (${err.code ?? err.message}): its log lines are dropped from now on.\n`);
		});
	}
	return stream;
}

/**
 * moleculer's console logger, written with `process.stdout.write` (stderr for warnings and errors) instead of `console.log`:
 * Node hands every console call to its inspector too, which costs a small read dearly.
 */
class StreamLogger extends Loggers.Console {
	override getLogHandler(bindings: LoggerBindings) {
		const level = bindings ? this.getLogLevel(bindings.mod) : null;
		if (!level) return null;
		const enabled = LEVELS.indexOf(level);
		const formatter = this.getFormatter(bindings);
		// Each as written into a line too: util.inspect (an object's field), JSON, or both escape its quotes and backslashes.
		const secrets = [
			...new Set(
				((this.opts as { redact?: string[] }).redact ?? [])
					.filter(secret => secret.length >= MIN_REDACTED)
					.flatMap(secret => [secret, inspected(secret)])
					.flatMap(secret => [secret, JSON.stringify(secret).slice(1, -1)]),
			),
		];
		const stacks = enabled >= LEVELS.indexOf("debug");
		return (type: string, args: unknown[]) => {
			if (LEVELS.indexOf(type) > enabled) return;
			let line = format(...formatter(type, stacks ? args : args.map(arg => (arg instanceof Error ? errorLine(arg) : arg))));
			for (const secret of secrets) if (line.includes(secret)) line = line.replaceAll(secret, "***");
			logOutput(TO_STDERR.has(type) ? process.stderr : process.stdout)?.write(`${line}\n`);
		};
	}
}

/**
 * An Error as one line: its name, message and code. Below LOGLEVEL=debug every error is logged so (docs/observability.md): a line
 * is one event, and the stack, which says where in the code, is for the one who debugs it.
 */
function errorLine(err: Error & { code?: string | number }): string {
	const code = err.code === undefined || err.message.includes(String(err.code)) ? "" : ` (${String(err.code)})`;
	return `${err.name}: ${err.message}${code}`;
}

/** A string as util.inspect writes it inside an object, without its quotes. */
const inspected = (text: string) => inspect(text).slice(1, -1);

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

/** The console exporter's spans in progress, by span id: each with its children's ids. */
type PrintedSpans = Record<string, { span: { traceID: string }; children: string[] }>;

/**
 * moleculer's console exporter, each tree headed by its trace id, the request id, where moleculer's prints the id of the tree's first
 * span (a context id nobody sent). It prints the id it is handed: the tree is lent under its trace id for the print.
 */
class ConsoleExporter extends TracerExporters.Console {
	override printRequest(id: string): void {
		const spans = (this as unknown as { spans: PrintedSpans }).spans;
		const traceID = spans[id]?.span.traceID;
		if (!traceID || traceID === id) return super.printRequest(id);
		const other = spans[traceID];
		spans[traceID] = spans[id];
		try {
			super.printRequest(traceID);
		} finally {
			if (other) spans[traceID] = other;
			else delete spans[traceID];
		}
	}
}

/**
 * `value` with the values of secret-looking names (isSecretName) written `***`, in plain objects and arrays at any depth: the
 * gateway hands a query's parameters to the action, and a client may send a token there.
 */
function maskedSecrets(value: unknown): unknown {
	if (Array.isArray(value)) return value.map(maskedSecrets);
	if (value === null || typeof value !== "object") return value;
	const prototype: unknown = Object.getPrototypeOf(value);
	if (prototype !== Object.prototype && prototype !== null) return value;
	return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, isSecretName(key) ? "***" : maskedSecrets(inner)]));
}

/** Every request traced, its spans sent where TRACE_EXPORTER says; off without it. */
export function tracingOptions({ tracing }: Pick<CatalogueConfig, "tracing">): BrokerOptions["tracing"] {
	if (tracing === null) return undefined;
	// Every action's span names who sent the request (ctx.meta.user, lib/sign-in/sign-in.ts) beside its params, secrets masked.
	const tags = {
		action: (ctx: Context) => {
			const { user } = ctx.meta as { user?: unknown };
			return { params: maskedSecrets(ctx.params), meta: user === undefined ? {} : { user } };
		},
	};
	// moleculer takes an exporter object as it takes a type name (tracing/exporters resolve()); its typings list only the names.
	const exporter = (tracing.exporter === "console"
		? new ConsoleExporter({})
		: new ZipkinExporter({ baseURL: tracing.url })) as unknown as TracerOptions["exporter"];
	return { enabled: true, exporter, tags };
}
