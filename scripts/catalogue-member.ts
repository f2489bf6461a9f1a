import { constants as osConstants } from "node:os";
import path from "node:path";
import { ServiceBroker, type Middleware } from "moleculer";
import brokerOptions from "../moleculer.config";
import { nodeIdOf } from "../lib/config/broker-access";
import { config } from "../lib/config/config";
import { natsTransporter } from "../lib/config/transporter";
import { DATA_SERVICE_NAMES } from "../lib/catalogue/services";
import { within } from "../lib/async/within";
import { describeStorage } from "../lib/storage/location";
import { readSnapshot } from "../lib/storage/sqlite-database";

/** Where the catalogue a tool works on is: the cluster it joins, or the data folder it opens itself. */
export const whereTheCatalogueIs = () =>
	config.transporter ? "the cluster of TRANSPORTER (joined as the REPL joins it)" : `${describeStorage(config)} (opened here)`;

/** What an interrupted tool undoes before it exits: its partial files, its broker. */
const undoOnInterrupt = new Set<() => unknown>();

/** The longest an interrupted tool waits for its clean-up. */
const CLEAN_UP_MS = 5000;

/** Runs `undo` if the tool is interrupted (`exitOnSignals`) until the returned function is called. */
export function onInterrupt(undo: () => unknown): () => void {
	undoOnInterrupt.add(undo);
	return () => undoOnInterrupt.delete(undo);
}

/** Set once SIGINT or SIGTERM interrupts the tool: a failure after it is the interruption's, which the tool has said already. */
let wasInterrupted = false;
export const interrupted = () => wasInterrupted;

/**
 * Makes SIGINT and SIGTERM end the tool as a failure (status 130 or 143), saying `whatIsLeft`, once what `onInterrupt` registered
 * is undone. moleculer's own handlers, left off in `startMember`, stopped the broker and exited with 0, skipping the tool's clean-up.
 * The function returned tells that the tool's work is done (its file in place): a signal after it only cuts its stop short, and the
 * tool ends with the work's own status, saying nothing more.
 */
export function exitOnSignals(tool: string, whatIsLeft: string): () => void {
	let done = false;
	for (const signal of ["SIGINT", "SIGTERM"] as const)
		process.once(signal, () => {
			wasInterrupted = true;
			if (!done) console.error(`\n${tool} interrupted (${signal}): ${whatIsLeft}`);
			const undone = Promise.allSettled([...undoOnInterrupt].map(async undo => undo()));
			void within(undone, CLEAN_UP_MS).finally(() => process.exit(done ? undefined : 128 + osConstants.signals[signal]));
		});
	return () => {
		done = true;
	};
}

/**
 * A broker for a command-line tool that works through the catalogue's services, with the
 * catalogue's own options (namespace, NATS credentials, timeouts). With TRANSPORTER it joins the
 * cluster as `npm run repl` does; without, it runs the three data services itself on DATA_DIR:
 * with `snapshot` (an export), they read one snapshot of the database beside a catalogue that may
 * be writing it; otherwise they open it as the catalogue does, which a running catalogue may
 * refuse (docs/storage.md, "One process or several"). It answers once the data services are
 * reachable, or throws within START_TIMEOUT. Logs below a warning are left out, and the rest go to
 * stderr: stdout may be the export itself.
 */
export async function startMember({ snapshot = false } = {}): Promise<ServiceBroker> {
	const broker = new ServiceBroker({
		...brokerOptions,
		// On a NATS with access rules, as the export/import tool: NATS lets it call what an export or import needs (docs/security.md).
		...(config.transporter &&
			config.natsAccess && { nodeID: nodeIdOf("transfer"), transporter: natsTransporter(config.transporter, "transfer") }),
		logLevel: "warn",
		// An export reads, and needs no cache: with one, each data service it runs would move the cluster's generations on at its start.
		...(snapshot && { cacher: undefined }),
		// The tool's own handlers (exitOnSignals): moleculer's would exit with 0 before the tool cleans up.
		skipProcessEventRegistration: true,
		metrics: { enabled: false },
		tracing: { enabled: false },
		// No health port: the catalogue's own nodes have it.
		middlewares: (brokerOptions.middlewares ?? []).filter(middleware => (middleware as Middleware).name !== "ReadinessProbe"),
	});
	if (!config.transporter) {
		if (snapshot && config.storage === "file" && !config.mongoUri) {
			const end = readSnapshot(config.dataDir);
			broker.localBus.on("$broker.stopped", end);
		}
		for (const name of DATA_SERVICE_NAMES) broker.loadService(path.join(__dirname, "..", "services", `${name}.service.js`));
	}
	await broker.start();
	await broker.waitForServices([...DATA_SERVICE_NAMES], config.startTimeoutMs).catch(async (err: Error) => {
		await broker.stop();
		throw new Error(`The catalogue's services did not answer within START_TIMEOUT (${config.startTimeoutMs / 1000} s): ${err.message}`);
	});
	return broker;
}
