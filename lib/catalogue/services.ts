/**
 * The catalogue's services, written once: every other list of them (SERVICES, the cache's
 * generations, readiness, the REPL's counts, the tests' layouts) is derived from this table.
 *
 * The data services each keep one collection of records under their own name, and `calls` names
 * the data services each one calls: a game's write checks its category and author, a list
 * populates them; deleting an author or a category asks games whether any refer to it.
 */
const DATA_SERVICES = {
	authors: { calls: ["games"] },
	categories: { calls: ["games"] },
	games: { calls: ["authors", "categories"] },
} as const satisfies Record<string, { calls: readonly string[] }>;

export type DataServiceName = keyof typeof DATA_SERVICES;

/** The gateway: the HTTP surface, which calls every data service and keeps no records. */
const GATEWAY = "api";

export type ServiceName = typeof GATEWAY | DataServiceName;

/** authors, categories, games: the collections, and the services whose records are cached. */
export const DATA_SERVICE_NAMES = Object.keys(DATA_SERVICES) as readonly DataServiceName[];

/** Every service a node may run (`SERVICES`), the gateway first. */
export const SERVICE_NAMES: readonly ServiceName[] = [GATEWAY, ...DATA_SERVICE_NAMES];

/**
 * The data services a node running `service` needs answering before it is ready: its own
 * collection and the services it calls; the gateway needs them all. None for a service that is
 * not the catalogue's.
 */
export function needs(service: string): DataServiceName[] {
	if (service === GATEWAY) return [...DATA_SERVICE_NAMES];
	if (!Object.hasOwn(DATA_SERVICES, service)) return [];
	const name = service as DataServiceName;
	return [name, ...DATA_SERVICES[name].calls];
}
