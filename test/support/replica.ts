import type { Service, ServiceSchema } from "moleculer";
import { MemoryAdapter } from "moleculer-db";

/** What moleculer-db's memory adapter keeps once connected, which its type declarations leave out. */
type Connected = { db?: unknown };

/**
 * moleculer-db's memory adapter over the NeDB datastore another adapter has connected to: its
 * connect() promisifies the datastore's methods, so a second connect on one datastore would wrap
 * them twice.
 */
class SharedMemoryAdapter extends MemoryAdapter {
	constructor(private readonly primary: Service) {
		super();
	}

	override connect(): Promise<void> {
		const { db } = (this.primary as unknown as { adapter: Connected }).adapter;
		if (!db) return Promise.reject(new Error(`${this.primary.name}'s store is not connected yet: start the replica after it`));
		(this as Connected).db = db;
		return Promise.resolve();
	}
}

/**
 * A replica of the catalogue service `schema` that reads and writes the records of `primary`, a
 * running instance of it with memory storage, as replicas share one database; its broker is
 * started once `primary`'s has.
 */
export function replicaOf(schema: object, primary: Service): ServiceSchema {
	return {
		name: primary.name,
		mixins: [schema as Partial<ServiceSchema>],
		// After the DB mixin's own `merged`, which gives every instance a store of its own.
		merged(merged: Record<string, unknown>) {
			merged.adapter = new SharedMemoryAdapter(primary);
		},
	} as ServiceSchema;
}
