import type { Service, ServiceSchema } from "moleculer";
import { SqliteAdapter, type SqliteAdapterOptions } from "../../lib/storage/sqlite-adapter";

/** What a connected SqliteAdapter keeps, which it does not expose. */
type Connected = { database?: unknown; options: SqliteAdapterOptions };

/**
 * The SQLite adapter over the in-memory database another adapter has opened, with its indexed
 * columns (which every writer fills); it leaves closing the database to that one.
 */
class SharedMemoryAdapter extends SqliteAdapter {
	constructor(private readonly primary: Service) {
		super({ ...(primary as unknown as { adapter: Connected }).adapter.options, holding: "shared" });
	}

	override connect(): Promise<void> {
		const { database } = (this.primary as unknown as { adapter: Connected }).adapter;
		if (!database) return Promise.reject(new Error(`${this.primary.name}'s store is not connected yet: start the replica after it`));
		(this as unknown as Connected).database = database;
		return Promise.resolve();
	}

	override disconnect(): Promise<void> {
		(this as unknown as Connected).database = undefined;
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
