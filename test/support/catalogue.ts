import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { Cachers, ServiceBroker, type BrokerOptions, type Middleware } from "moleculer";
import MongoDbAdapter from "moleculer-db-adapter-mongo";
import { cacherOptions } from "../../lib/cache/cache";
import { generationsKey } from "../../lib/cache/keys";
import { SERVICE_NAMES, type ServiceName } from "../../lib/catalogue/services";
import type { NodeKind } from "../../lib/config/broker-access";
import { config } from "../../lib/config/config";
import { natsTransporter } from "../../lib/config/transporter";
import brokerOptions from "../../moleculer.config";
import { describeStorage } from "../../lib/storage/location";
import { callsByAction } from "../../middlewares/calls-by-action.middleware";
import { apiService, type GatewayOptions } from "../../services/api.service";
import AuthorsService from "../../services/authors.service";
import CategoriesService from "../../services/categories.service";
import GamesService from "../../services/games.service";
import { startNats, startNatsCluster, type NatsServer } from "./nats";

/**
 * How the services are laid out: all in one broker, or each in a broker of its own (its own
 * nodeID) over a NATS server the catalogue starts for itself, as a cluster runs them.
 */
const TOPOLOGIES = ["one-broker", "nats"] as const;
export type Topology = (typeof TOPOLOGIES)[number];

export interface Catalogue {
	topology: Topology;
	/** The broker that runs the gateway; in one broker, every service. */
	broker: ServiceBroker;
	/** Every broker of the catalogue, the gateway's first. */
	brokers: ServiceBroker[];
	/** The NATS server the brokers talk over; none in one broker. */
	nats?: NatsServer;
	/** The brokers' namespace, which another node needs to join them. */
	namespace: string;
	api: Api;
	/** Stops the brokers, then the NATS server; with MongoDB, drops the test's database first. */
	stop(): Promise<void>;
}

export interface Answer<T = any> {
	status: number;
	body: T;
	headers: Headers;
}

/** A tiny JSON client for the gateway. */
export class Api {
	constructor(readonly url: string) {}

	async send<T = any>(
		method: string,
		path: string,
		body?: unknown,
		raw?: string | Uint8Array<ArrayBuffer>,
		headers: Record<string, string> = {},
	): Promise<Answer<T>> {
		const response = await fetch(this.url + path, {
			method,
			headers: body !== undefined || raw !== undefined ? { "Content-Type": "application/json", ...headers } : headers,
			body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
		});
		const text = await response.text();
		return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers };
	}

	get = <T = any>(path: string) => this.send<T>("GET", path);
	put = <T = any>(path: string, body?: unknown) => this.send<T>("PUT", path, body);
	post = <T = any>(path: string, body?: unknown) => this.send<T>("POST", path, body);
	delete = <T = any>(path: string) => this.send<T>("DELETE", path);

	/** Creates a record through HTTP and returns it, failing the test if the service refuses. */
	async create<T = any>(path: string, key: string, body: unknown): Promise<T> {
		const answer = await this.put(path, body);
		if (answer.status !== 200) throw new Error(`PUT ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
		return answer.body[key];
	}

	author = (name = "Reiner Knizia", nationality = "German") => this.create("/author", "author", { name, nationality });
	category = (name = "Eurogames") => this.create("/category", "category", { name });
	game = (title: string, category: { id: string }, author: { id: string }, age = 10) =>
		this.create("/game", "game", { title, age, category: { id: category.id }, author: { id: author.id } });
}

const SCHEMAS = {
	api: apiService(),
	authors: AuthorsService,
	categories: CategoriesService,
	games: GamesService,
} satisfies Record<ServiceName, unknown>;

/** Which server of a NATS cluster (`natsCluster`) each service's broker logs in to. */
const CLUSTER_SERVER: Record<ServiceName, number> = { api: 0, authors: 1, categories: 1, games: 2 };

/** How long a catalogue may take to start: its brokers, their storage and, over NATS, discovery. */
const START_TIMEOUT_MS = 20_000;

/** The topology of this Jest project: CATALOGUE_TOPOLOGY, set from jest.config.js by support/env.ts. */
function projectTopology(): Topology {
	const topology = process.env.CATALOGUE_TOPOLOGY || "one-broker";
	if (!(TOPOLOGIES as readonly string[]).includes(topology))
		throw new Error(`CATALOGUE_TOPOLOGY must be one of ${TOPOLOGIES.join(", ")}; got "${topology}"`);
	return topology as Topology;
}

export interface CatalogueOptions {
	/** Broker middlewares of every node. */
	middlewares?: Middleware[];
	/** The layout; by default the Jest project's. */
	topology?: Topology;
	/** Gateway settings other than the configuration's (CORS, rate limit, API token, ...). */
	settings?: Partial<GatewayOptions>;
	/** More broker options for the node that runs the gateway (metrics on a port of the test's own, ...). */
	gatewayBroker?: BrokerOptions;
	/** The bytes the in-memory cache of one broker may hold (CACHE_MAX_MB); the configuration's by default. */
	cacheMaxBytes?: number;
	/**
	 * Over NATS: a cluster of three nats-servers joined by routes, as the Kubernetes values run it, instead of one server for all:
	 * the gateway on the first, authors and categories on the second, games on the third, so that every call crosses a route.
	 */
	natsCluster?: boolean;
}

/**
 * The four services with the storage of the environment (memory, or MongoDB in that project), laid
 * out as `topology` says, the gateway on a free port; resolves once the gateway reaches every service.
 */
export async function startCatalogue({
	middlewares = [],
	topology = projectTopology(),
	settings,
	gatewayBroker,
	cacheMaxBytes = config.cacheMaxBytes,
	natsCluster = false,
}: CatalogueOptions = {}): Promise<Catalogue> {
	// Over NATS with its access rules on, each broker logging in as its kind of node (docs/security.md, "The broker").
	const cluster = topology === "nats" && natsCluster ? await startNatsCluster(3, undefined, { access: true }) : undefined;
	const nats = topology === "nats" ? (cluster?.servers[0] ?? (await startNats(undefined, undefined, { access: true }))) : undefined;
	const serverOf = (name: ServiceName) => cluster?.servers[CLUSTER_SERVER[name]] ?? nats!;
	const stopNats = () => (cluster ? cluster.stop() : nats?.stop());
	const namespace = `catalogue-test-${randomUUID()}`;
	const broker = (options: BrokerOptions, services: ServiceName[]) => {
		const gatewayOptions = services.includes("api") ? gatewayBroker : {};
		const created = new ServiceBroker({
			...brokerOptions,
			...options,
			...gatewayOptions,
			logger: false,
			// Over NATS, as moleculer.config.ts adds it to every node's.
			middlewares: nats ? [...middlewares, callsByAction] : middlewares,
		});
		for (const name of services)
			created.createService(name === "api" && settings ? apiService({ ...config, ...settings }) : SCHEMAS[name]);
		return created;
	};
	// Over NATS, as a cluster runs: the cache is Redis, shared by every node (see support/env.ts). In one broker, memory also on
	// MongoDB: the test's database is its own, which no other process writes (a catalogue on MONGO_URI alone caches nothing).
	const cacher = () =>
		cacherOptions({
			mongoUri: null,
			redisUrl: nats ? process.env.CATALOGUE_TEST_REDIS! : null,
			transporter: nats?.url ?? null,
			cacheMaxBytes,
		});
	const brokers = nats
		? SERVICE_NAMES.map(name =>
				broker({ ...clusterMember(serverOf(name), name, `${name}.test-${process.pid}`), namespace, cacher: cacher() }, [name]),
			)
		: [broker({ nodeID: `test-${process.pid}`, namespace, cacher: cacher(), transporter: null }, [...SERVICE_NAMES])];
	const [gateway] = brokers;
	const cache = nats ? `Redis at ${process.env.CATALOGUE_TEST_REDIS}` : "memory";

	async function stop() {
		await dropTestDatabase(brokers);
		await forgetRedisCache(gateway);
		await Promise.all(brokers.map(each => each.stop()));
		await stopNats();
	}

	const starting = (async () => {
		await Promise.all(brokers.map(each => each.start()));
		// Every node, not just the gateway, waits to see every service: games calls categories and
		// authors, and they call games.countBy.
		await Promise.all(brokers.map(each => each.waitForServices([...SERVICE_NAMES], START_TIMEOUT_MS)));
	})();
	try {
		await within(
			START_TIMEOUT_MS,
			starting,
			`the catalogue (${topology}, storage: ${describeStorage(config)}, cache: ${cache}) did not start`,
		);
	} catch (err) {
		await within(5000, Promise.all(brokers.map(each => each.stop())), "").catch(() => undefined);
		await stopNats();
		throw err;
	}
	return { topology, broker: gateway, brokers, nats, namespace, api: gatewayApi(gateway), stop };
}

/**
 * A broker's options as a cluster's node of `kind` over `nats` (with its access rules on): the node ID, the NATS user and inbox of
 * that kind, and calls balanced by NATS, as moleculer.config.ts makes them from TRANSPORTER (whose middlewares hold callsByAction).
 */
export function clusterMember(nats: NatsServer, kind: NodeKind | "anyone", nodeID: string): BrokerOptions {
	return {
		nodeID,
		disableBalancer: true,
		transporter: natsTransporter(nats.urlAs(kind), kind),
	};
}

/** A client for the gateway that `broker` runs. */
export function gatewayApi(broker: ServiceBroker): Api {
	const server = (broker.getLocalService("api") as unknown as { server: { address(): AddressInfo } }).server;
	return new Api(`http://127.0.0.1:${server.address().port}`);
}

/** The service `name` on whichever broker of the catalogue runs it. */
export function localService<T = unknown>(catalogue: Catalogue, name: string): T {
	const host = catalogue.brokers.map(broker => broker.getLocalService(name)).find(Boolean);
	if (!host) throw new Error(`no broker of the catalogue runs ${name}`);
	return host as unknown as T;
}

/** `promise`, or a failure saying `what` once `ms` have passed. */
export async function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)));
	try {
		return await Promise.race([promise, late]);
	} finally {
		clearTimeout(timer);
	}
}

/** Whether `promise` is still unsettled after `ms`: a request that waits for another one. */
export async function stillPending(promise: Promise<unknown>, ms = 200): Promise<boolean> {
	const settled = promise.then(
		() => true,
		() => true,
	);
	return !(await Promise.race([settled, new Promise<false>(resolve => setTimeout(() => resolve(false), ms))]));
}

/** With a Redis cache, removes what the catalogue left there: its answers and its generations. */
async function forgetRedisCache(broker: ServiceBroker): Promise<void> {
	if (!(broker.cacher instanceof Cachers.Redis) || !broker.cacher.connected) return;
	const redis = broker.cacher as Cachers.Redis<{ del(key: string): Promise<number> }>;
	await redis.clean();
	await redis.client.del(generationsKey(broker.namespace));
}

/** With MongoDB storage, removes the database this test file had to itself (see support/env.ts). */
async function dropTestDatabase(brokers: ServiceBroker[]): Promise<void> {
	const adapter = brokers
		.flatMap(each => each.services)
		.map(service => (service as unknown as { adapter?: unknown }).adapter)
		.find(candidate => candidate instanceof MongoDbAdapter);
	await (adapter as { db?: { dropDatabase(): Promise<unknown> } } | undefined)?.db?.dropDatabase();
}

/** Drops every cached answer, so that the next reads ask the stores. */
export async function forgetCachedAnswers(catalogue: Catalogue): Promise<void> {
	await Promise.all(catalogue.brokers.flatMap(broker => (broker.cacher ? [broker.cacher.clean()] : [])));
}

/**
 * Sends a request while one adapter method of a service fails as a broken store would, and
 * returns the answer; the store works again afterwards. Nothing is cached then, so the request
 * reaches the store.
 */
export async function withBrokenStorage<T>(
	catalogue: Catalogue,
	[service, methods]: [string, string | string[]],
	request: () => Promise<T>,
): Promise<T> {
	const { adapter } = localService<{ adapter: Record<string, unknown> }>(catalogue, service);
	const broken = typeof methods === "string" ? [methods] : methods;
	const originals = broken.map(method => adapter[method]);
	const failure = () => new Error("disk unavailable");
	for (const [index, method] of broken.entries())
		adapter[method] =
			(originals[index] as { constructor?: { name: string } } | undefined)?.constructor?.name === "AsyncGeneratorFunction"
				? // A read in steps fails at its first step.
					async function* () {
						yield* [];
						throw failure();
					}
				: () => Promise.reject(failure());
	await forgetCachedAnswers(catalogue);
	try {
		return await request();
	} finally {
		broken.forEach((method, index) => (adapter[method] = originals[index]));
	}
}

/** The adapter methods a recorded write (a create, update or remove) goes through: SQLite's, or MongoDB's insert. */
export const RECORDED_INSERT = ["recordedWrite", "insertMany"];

/** What a failure body must never show: a stack, a file of the service or of its dependencies. */
export const INTERNALS = /stack|node_modules|\/services\/|at .+:\d+:\d+/;

/** Ids of every shape a client may send that no record has: each must be a plain unknown id. */
export const unknownIds: [string, string][] = [
	["a number", "1"],
	["a word", "noExist"],
	["200 characters", "x".repeat(200)],
	["a well-formed id nobody has", "01ARZ3NDEKTSV4RRFFQ69G5FAV"],
	// In a path, read as the text it is: moleculer-web refuses to decode it.
	["not percent-encoded (a lone %)", "100%"],
	["percent-encoded bytes that are not UTF-8", "%ED%A0%80"],
];
