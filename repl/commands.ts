import type { ReplOptions, ServiceBroker } from "moleculer";
import { DATA_SERVICE_NAMES } from "../lib/catalogue/services";
import { config } from "../lib/config/config";
import { noFilesToBackUp } from "../lib/storage/location";
import type { OrphanGame } from "../services/games.types";

type ReplCommand = NonNullable<ReplOptions["customCommands"]>[number];

/** What moleculer-repl hands a command: its arguments by the names its `command` gives them (moleculer's typings say string[]). */
type Arguments = Record<string, string>;

/** A node that has just joined may not have heard of the others yet: wait this long for them. */
const DISCOVERY_WAIT_MS = 5000;

/** Waits until the data services are known, or the wait is over: the commands report those still missing. */
function discovered(broker: ServiceBroker): Promise<unknown> {
	return broker.waitForServices([...DATA_SERVICE_NAMES], DISCOVERY_WAIT_MS).catch(() => undefined);
}

/** The value, or the reason it could not be had, for a table cell. */
async function orUnavailable<T>(value: Promise<T>): Promise<T | string> {
	return value.catch((err: Error) => `unavailable: ${err.message}`);
}

/** One line per collection: how many records it holds (each count asked of its own service). */
async function counts(broker: ServiceBroker): Promise<string> {
	await discovered(broker);
	const rows = await Promise.all(
		DATA_SERVICE_NAMES.map(async name => [name, String(await orUnavailable(broker.call<number>(`${name}.count`)))]),
	);
	return [["collection", "records"], ...rows].map(([name, count]) => `${name.padEnd(12)} ${count}`).join("\n");
}

/** The games whose category or author does not exist, or a line saying there are none. */
async function integrity(broker: ServiceBroker): Promise<string> {
	await discovered(broker);
	const found = await broker.call<OrphanGame[]>("games.orphans");
	if (found.length === 0) return "Integrity check passed: every game's category and author exist.";
	const lines = found.map(game => {
		const missing = game.missing.map(field => `${field} ${game[field]}`).join(", ");
		return `${game.id}  "${game.title}"  missing ${missing}`;
	});
	return [`${found.length} game(s) refer to a missing category or author:`, ...lines].join("\n");
}

/**
 * Copies this process's DATA_DIR files into `dir` and says what it copied. Where this process runs
 * the services (`npm run dev`, `npm start -- --repl`), the snapshot is one instant of its writes.
 */
async function backup(_broker: ServiceBroker, { dir }: Arguments): Promise<string> {
	const refused = noFilesToBackUp(config);
	if (refused) throw new Error(refused);
	// Loaded here: a gateway node's REPL has the command but no store.
	const { backupDataDir, backupText } = await import("../lib/storage/backup.js");
	return backupText(await backupDataDir(config.dataDir, dir), dir);
}

/** Runs a command, printing what it returns or why it failed; the REPL stays open either way. */
function printing(command: (broker: ServiceBroker, args: Arguments) => Promise<string>): ReplCommand["action"] {
	return async (broker, args) => {
		try {
			console.log(await command(broker, args as unknown as Arguments));
		} catch (err) {
			console.log(`Failed: ${(err as Error).message}`);
		}
	};
}

/** The catalogue's commands, beside moleculer-repl's own (nodes, services, actions, call, ...). */
export const catalogueCommands: ReplCommand[] = [
	{ command: "counts", description: "How many authors, categories and games are stored", action: printing(counts) },
	{
		command: "integrity",
		alias: "orphans",
		description: "List games whose category or author does not exist",
		action: printing(integrity),
	},
	{
		command: "backup <dir>",
		description: "Copy this node's SQLite database (DATA_DIR) into <dir>, one snapshot, while the catalogue runs",
		action: printing(backup),
	},
];
