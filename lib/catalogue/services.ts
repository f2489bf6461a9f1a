/**
 * The catalogue's services, written once: every other list of them is derived from this table. `calls` names the other services'
 * actions each one calls: a game's write checks its category and author (`referable`) and embeds them (`get`); deleting an author or
 * category asks games whether any refer to it (`countBy`). NATS lets a node call these and no others (lib/config/broker-access.ts).
 */
const DATA_SERVICES = {
	authors: { calls: ["games.countBy"] },
	categories: { calls: ["games.countBy"] },
	games: { calls: ["authors.referable", "authors.get", "categories.referable", "categories.get"] },
} as const satisfies Record<string, { calls: readonly `${string}.${string}`[] }>;

export type DataServiceName = keyof typeof DATA_SERVICES;

/** The gateway: the HTTP surface, which calls every data service and keeps no records. */
const GATEWAY = "api";

export type ServiceName = typeof GATEWAY | DataServiceName;

/** authors, categories, games: the collections, and the services whose records are cached. */
export const DATA_SERVICE_NAMES = Object.keys(DATA_SERVICES) as readonly DataServiceName[];

/** Every service a node may run (`SERVICES`), the gateway first. */
export const SERVICE_NAMES: readonly ServiceName[] = [GATEWAY, ...DATA_SERVICE_NAMES];

/** The data services a node running `service` needs answering before it is ready: its own and those it calls; all for the gateway. */
export function needs(service: string): DataServiceName[] {
	if (service === GATEWAY) return [...DATA_SERVICE_NAMES];
	if (!Object.hasOwn(DATA_SERVICES, service)) return [];
	const name = service as DataServiceName;
	return [name, ...new Set(callsOf(name).map(action => action.split(".")[0] as DataServiceName))];
}

/** The other services' actions a data service calls. */
export const callsOf = (service: DataServiceName): readonly string[] => DATA_SERVICES[service].calls;
