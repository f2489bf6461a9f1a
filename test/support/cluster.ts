import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { SERVICE_NAMES, type ServiceName } from "../../lib/catalogue/services";
import { Api } from "./catalogue";
import { startNats, type NatsServer } from "./nats";
import { answers, freePort, startNode, waitFor, type Node } from "./process";

/** The catalogue as an operator runs it: one OS process per service over a NATS of the test's own. */
export interface Cluster {
	api: Api;
	nats: NatsServer;
	/** The environment of a node running `services` (comma list) in this cluster. */
	env(services: string): NodeJS.ProcessEnv;
	/** The running node of each service. */
	nodes: Map<ServiceName, Node>;
	/** Starts (again) the node of one service, not waiting for it. */
	start(service: ServiceName): Node;
	/** Waits until the gateway reaches authors, categories and games. */
	ready(timeoutMs?: number): Promise<void>;
	/** Kills every node and the NATS server, and removes the data folder. */
	stop(): Promise<void>;
}

export interface ClusterOptions {
	/** `file`: the SQLite database of a folder of the cluster's own, so a node restarted finds its records. */
	storage?: "file" | "memory";
	/** More environment for every node (REQUEST_TIMEOUT, LOGLEVEL...). */
	env?: NodeJS.ProcessEnv;
	/**
	 * nats-access.conf's rules on the NATS server, and `NATS_ACCESS=on` for every node, each logging in as its kind (a tool, with
	 * no services, as the export/import tool): docs/security.md, "The broker".
	 */
	access?: boolean;
}

const START_MS = 30_000;

/** Until the gateway reaches all three data services: each path needs one of them. */
export const reachesEveryService = (api: Api) => async () =>
	(await Promise.all(["/category", "/author", "/game"].map(route => answers(api, route)()))).every(Boolean);

/** Starts NATS and the four nodes, and waits until the gateway reaches every service. */
export async function startCluster({ storage = "memory", env: extra = {}, access = false }: ClusterOptions = {}): Promise<Cluster> {
	const nats = await startNats(undefined, undefined, { access });
	const namespace = `cluster-${randomUUID()}`;
	const dataDir = storage === "file" ? await mkdtemp(path.join(tmpdir(), "catalogue-cluster-")) : undefined;
	const port = await freePort();
	const api = new Api(`http://127.0.0.1:${port}`);
	const nodes = new Map<ServiceName, Node>();

	const env = (services: string): NodeJS.ProcessEnv => ({
		SERVICES: services,
		TRANSPORTER: access ? nats.urlAs(services === "" ? "transfer" : (services as ServiceName)) : nats.url,
		...(access && { NATS_ACCESS: "on" }),
		NAMESPACE: namespace,
		STORAGE: storage,
		...(dataDir && { DATA_DIR: dataDir }),
		START_TIMEOUT: "20",
		...extra,
	});

	const cluster: Cluster = {
		api,
		nats,
		env,
		nodes,
		start(service) {
			const node = startNode({ ...env(service), ...(service === "api" && { PORT: String(port) }) });
			nodes.set(service, node);
			return node;
		},
		ready(timeoutMs = START_MS) {
			return waitFor("the gateway reaches authors, categories and games", reachesEveryService(api), [...nodes.values()], timeoutMs);
		},
		async stop() {
			await Promise.all([...nodes.values()].map(node => node.kill()));
			await nats.stop();
			if (dataDir) await rm(dataDir, { recursive: true, force: true });
		},
	};

	try {
		for (const service of SERVICE_NAMES) cluster.start(service);
		await cluster.ready();
	} catch (err) {
		await cluster.stop();
		throw err;
	}
	return cluster;
}
