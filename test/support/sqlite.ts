import type { Database } from "../../lib/storage/sqlite-database";

/**
 * The three collections' tables, as their adapters make them but without the indexed columns:
 * for the tests that write rows straight into a database (lib/storage/sqlite-adapter.ts makes the
 * real ones when a service connects).
 */
export function withTables(database: Database): Database {
	for (const name of ["categories", "authors", "games"])
		database.writer.exec(`CREATE TABLE IF NOT EXISTS ${name} (_id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL)`);
	return database;
}
