// First: reads .env, then the configuration (a bad setting is one line).
import "../lib/config/load";
import { config } from "../lib/config/config";
import { backupDataDir, backupText } from "../lib/storage/backup";
import { noFilesToBackUp } from "../lib/storage/location";
import { typedPath } from "./typed-path";

// `npm run backup -- <dir>`: a copy of DATA_DIR's SQLite database in <dir>, taken while the
// catalogue runs and writes it (docs/operations.md, "Backups"). Unlike the seed, it reads the database, not HTTP.

const USAGE = "usage: npm run backup -- <dir>   (the folder the copy goes to)";

/** Backs up DATA_DIR into the folder given and prints what it copied; exits with 1, saying why, when it cannot (2 for a wrong command line, as export and import). */
async function main(): Promise<void> {
	const [typed, ...more] = process.argv.slice(2);
	if (!typed || more.length > 0) {
		console.error(USAGE);
		process.exitCode = 2;
		return;
	}
	const target = typedPath(typed);
	const refused = noFilesToBackUp(config);
	if (refused) throw new Error(refused);
	console.log(backupText(await backupDataDir(config.dataDir, target), target));
}

main().catch((err: Error) => {
	console.error(`Backup failed: ${err.message}`);
	process.exitCode = 1;
});
