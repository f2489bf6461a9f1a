// First: reads .env, then the configuration, and ends the process with one line on a bad setting.
import { orExit } from "./lib/config/load";
import type { BrokerOptions, Errors } from "moleculer";
import { cacherOptions } from "./lib/cache/cache";
import { config } from "./lib/config/config";
import { loggerOptions, metricsOptions, tracingOptions } from "./lib/observability/observability";
import { kindOfServices, nodeIdOf } from "./lib/config/broker-access";
import { checkUserOfKind, natsTransporter } from "./lib/config/transporter";
import { hideCredentials, secretsIn } from "./lib/config/uris";
import { describeStorage } from "./lib/storage/location";
import { callsByAction } from "./middlewares/calls-by-action.middleware";
import { drainGateway } from "./middlewares/drain.middleware";
import { natsReconnects } from "./middlewares/nats-reconnects.middleware";
import { noSecretsInOptions } from "./middlewares/no-secrets.middleware";
import { readinessProbe } from "./middlewares/readiness.middleware";
import { writeAudit } from "./middlewares/write-audit.middleware";
import { startTimeout } from "./middlewares/start-timeout.middleware";
import { readyLineOf } from "./middlewares/ready-line.middleware";
import { catalogueCommands } from "./repl/commands";

/**
 * What this node is in a cluster (docs/security.md, "The broker"): the REPL (moleculer-runner's `--repl`), or the node of the
 * services it runs. On a NATS with nats-access.conf (`NATS_ACCESS=on`) its node ID begins with it, and its NATS user allows
 * what that kind of node does.
 */
const kind = process.argv.includes("--repl") ? "repl" : kindOfServices(config.services);
const byKind = Boolean(config.transporter) && config.natsAccess;
/** Where this node's records are, as its start-up lines name it. */
const storage = describeStorage(config);

/** Only what differs from moleculer's defaults; every value comes from lib/config/config.ts. */
const brokerOptions: BrokerOptions = {
	namespace: config.namespace,
	...(byKind && { nodeID: nodeIdOf(kind) }),
	transporter: null,
	// With NATS_ACCESS=on NATS balances the calls: each goes to `<prefix>.REQB.<action>`, a subject NATS allows or denies per action.
	disableBalancer: byKind,
	logLevel: config.logLevel,
	// docs/observability.md: JSON logs in production, Prometheus at METRICS_PORT, spans to TRACE_EXPORTER.
	logger: loggerOptions(config, [
		...secretsIn(config.transporter, config.redisUrl, config.mongoUri),
		...(config.apiToken ? [config.apiToken] : []),
	]),
	metrics: metricsOptions(config),
	tracing: tracingOptions(config),
	// Reads are cached; every write moves the cache on (docs/caching.md).
	cacher: cacherOptions(config),
	// Fault tolerance, chosen on purpose (docs/operations.md, "Fault tolerance"). moleculer waits for ever by
	// default: a call lost with a node or a NATS connection would hold its HTTP request open.
	requestTimeout: config.requestTimeoutMs,
	// Retries stay off here: only actions that are safe to repeat turn them on (`safeToRetry`). A
	// timed-out call is not repeated: its client has waited long enough.
	retryPolicy: {
		enabled: false,
		check: error => Boolean((error as Errors.MoleculerRetryableError).retryable) && error.name !== "RequestTimeoutError",
	},
	// A node that stops answering (timeouts, 5xx) is skipped for a while instead of being waited on.
	circuitBreaker: { enabled: true, threshold: 0.5, minRequestCount: 20, windowTime: 30, halfOpenTime: 5_000 },
	// Per action and node: a burst queues, and beyond the queue is refused (503) at once.
	bulkhead: { enabled: true, concurrency: 32, maxQueueSize: 128 },
	// A node killed without a goodbye is noticed within 4 to 8 s (heartbeats every 1 s).
	heartbeatInterval: 1,
	heartbeatTimeout: 4,
	// Graceful stop: the node first tells the cluster it takes no more calls and waits for that to
	// spread, then finishes the calls it has (context tracking), then leaves.
	registry: { stopDelay: 500 },
	tracking: { enabled: true, shutdownTimeout: config.requestTimeoutMs },
	middlewares: [
		startTimeout({
			timeoutMs: config.startTimeoutMs,
			transporter: config.transporter && hideCredentials(config.transporter),
			redis: config.redisUrl && hideCredentials(config.redisUrl),
			storage,
		}),
		readyLineOf(storage),
		drainGateway(config.requestTimeoutMs),
		callsByAction,
		noSecretsInOptions,
		natsReconnects,
		writeAudit,
		...(config.healthPort ? [readinessProbe(config.healthPort)] : []),
	],
	replOptions: { delimiter: "catalogue $", customCommands: catalogueCommands },
	// The broker made, whose kind a tool sets to its own (scripts/catalogue-member.ts): before it connects.
	created: broker => void (byKind && orExit(() => checkUserOfKind(broker))),
};

/** NATS with the credentials of TRANSPORTER's URL and the NATS_* files (docs/security.md), read here, at start. */
const natsUrl = config.transporter;
const transporter: BrokerOptions["transporter"] = natsUrl ? orExit(() => natsTransporter(natsUrl, byKind ? kind : null)) : null;

// moleculer-runner replaces every option named like a variable of the environment with its text:
// TRANSPORTER would become the bare URL, which moleculer reads itself (a token as a user name,
// nothing decoded, no TLS files). The runner's assignment is ignored; the options above stay.
Object.defineProperty(brokerOptions, "transporter", { enumerable: true, get: () => transporter, set: () => undefined });

export default brokerOptions;
