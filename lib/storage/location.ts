/** Where a configuration keeps its records, said without opening them: the database file, the start-up line, and backup hints. */
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import type { CatalogueConfig } from "../config/config";
import { hideCredentials } from "../config/uris";

export const DATABASE_FILE = "catalogue.sqlite";

export const databaseFile = (dataDir: string) => path.join(dataDir, DATABASE_FILE);

/** The folder `dir` names, through links when it exists: two names of one folder compare equal. */
export const realFolder = (dir: string) => (existsSync(dir) ? realpathSync(dir) : path.resolve(dir));

/** The file whose SQLite lock says which processes have a DATA_DIR open: a folder holding it is, or was, a catalogue's. */
export const LOCK_FILE = "catalogue.lock";

/** Where the records live, for operators' messages; a MongoDB password is never shown. */
export function describeStorage({ mongoUri, storage, dataDir }: Pick<CatalogueConfig, "mongoUri" | "storage" | "dataDir">): string {
	if (mongoUri) return `MongoDB at ${hideCredentials(mongoUri)}`;
	return storage === "memory" ? "memory" : `SQLite database ${databaseFile(dataDir)}`;
}

/** Why this configuration leaves no database to back up (MongoDB, memory), or undefined when it keeps one. */
export function noFilesToBackUp({ mongoUri, storage }: Pick<CatalogueConfig, "mongoUri" | "storage">): string | undefined {
	if (mongoUri)
		return (
			"MONGO_URI is set: the records are in MongoDB, not in files here. Back it up with `mongodump --oplog` and restore it " +
			'with `mongorestore --oplogReplay` (docs/operations.md, "Backups"; not tried with this catalogue: no MongoDB ran where it was built).'
		);
	return storage === "memory" ? "STORAGE=memory keeps no files: there is nothing to back up." : undefined;
}
