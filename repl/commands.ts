import type { ReplOptions, ServiceBroker } from "moleculer";
import { DATA_SERVICE_NAMES } from "../lib/catalogue/services";
import { config } from "../lib/config/config";
import { NO_CLUSTER } from "../lib/config/start-failures";
import { aloneWithoutCluster } from "../middlewares/ready-line.middleware";
import { noFilesToBackUp } from "../lib/storage/location";
import type { OrphanGame } from "../services/games.types";
import type { Change, FeedPage } from "../lib/feed/changes";

type ReplCommand = NonNullable<ReplOptions["customCommands"]>[number];

/** What moleculer-repl hands a command: its arguments by the names its `command` gives them (moleculer's typings say string[]). */
type Arguments = Record<string, string>;

/** A node that has just joined may not have heard of the others yet: wait this long for them. */
const DISCOVERY_WAIT_MS = 5000;

/**
 * Waits until the data services are known, or the wait is over: the commands report those still missing. A REPL with no
 * services and no TRANSPORTER does not wait for services that cannot come: it says how to reach them (NO_CLUSTER).
 */
async function discovered(broker: ServiceBroker): Promise<unknown> {
	if (aloneWithoutCluster(broker)) throw new Error(NO_CLUSTER);
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

/** Each feed's position (docs/followers.md): the latest change written, and the oldest still kept. */
async function changes(broker: ServiceBroker): Promise<string> {
	await discovered(broker);
	const rows = await Promise.all(
		DATA_SERVICE_NAMES.map(async name => {
			const page = await orUnavailable(
				broker.call<FeedPage, { after: number }>(`${name}.changes`, { after: Number.MAX_SAFE_INTEGER }),
			);
			return typeof page === "string"
				? [name, page, ""]
				: [name, String(page.last), page.first > page.last ? "none" : String(page.first)];
		}),
	);
	return [["feed", "latest", "oldest kept"], ...rows]
		.map(([name, last, first]) => `${name.padEnd(12)} ${last.padStart(8)}  ${first}`)
		.join("\n");
}

/** One line per change. */
const changeLine = ({ kind, seq, type, record }: Change) =>
	`${kind.padEnd(8)} #${String(seq).padEnd(6)} ${type.padEnd(7)} ${record.id}  ${JSON.stringify(record.title ?? record.name ?? "")}`;

/** How often `follow` reads the feeds. */
const FOLLOW_EVERY_MS = 250;

/** Prints every change made from now on, for `seconds` (30 by default), then says how many it printed. */
async function follow(broker: ServiceBroker, { seconds }: Arguments): Promise<string> {
	await discovered(broker);
	const until = Date.now() + 1000 * (Number(seconds) > 0 ? Number(seconds) : 30);
	const read = (name: string, after: number) => broker.call<FeedPage, { after: number }>(`${name}.changes`, { after });
	const at = new Map(
		await Promise.all(DATA_SERVICE_NAMES.map(async name => [name, (await read(name, Number.MAX_SAFE_INTEGER)).last] as const)),
	);
	let printed = 0;
	while (Date.now() < until) {
		for (const name of DATA_SERVICE_NAMES) {
			const page = await read(name, at.get(name)!);
			for (const change of page.changes) console.log(changeLine(change));
			printed += page.changes.length;
			at.set(name, page.changes.at(-1)?.seq ?? at.get(name)!);
		}
		await new Promise(resolve => setTimeout(resolve, FOLLOW_EVERY_MS));
	}
	return `Followed the feeds: ${printed} change(s).`;
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
			const { message } = err as Error;
			console.log(message === NO_CLUSTER ? message : `Failed: ${message}`);
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
	{ command: "changes", description: "Each change feed's position: the latest change and the oldest kept", action: printing(changes) },
	{ command: "follow [seconds]", description: "Print every change as it is made, for [seconds] (30)", action: printing(follow) },
	{
		command: "backup <dir>",
		description: "Copy this node's SQLite database (DATA_DIR) into <dir>, one snapshot, while the catalogue runs",
		action: printing(backup),
	},
];
