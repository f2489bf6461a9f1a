// First: reads .env, then the configuration (a bad setting is one line).
import "../lib/config/load";
import { access, stat } from "node:fs/promises";
import type { ServiceBroker } from "moleculer";
import { TRANSFER_BATCH } from "../lib/transfer/format";
import type { Caller } from "../lib/transfer/calls";
import { checkFile, importFile, RefusedFile, type ImportOptions } from "../lib/transfer/import";
import { readLines } from "../lib/transfer/lines";
import { exitOnSignals, interrupted, onInterrupt, startMember, whereTheCatalogueIs } from "./catalogue-member";
import { progressBar, secondsSince } from "./progress";
import { typedPath } from "./typed-path";

const USAGE = "usage: npm run import -- <file>   (a file: it is read twice, checked whole before anything is written)";

/** Control characters a file may hold in a field's name or a line's text, written escaped: raw, they would drive the terminal. */
const printable = (text: string) => text.replace(/(?!\n)\p{Cc}/gu, char => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** `npm run import -- <file>`: an export file loaded into the catalogue, ids kept (docs/contract.md, "Export and import"). */
async function importFrom(broker: ServiceBroker, file: string, done: () => void): Promise<boolean> {
	const call: Caller = (action, params) => broker.call(action, params);
	const started = Date.now();
	const bar = progressBar("import");
	const options: ImportOptions = {
		file,
		lines: () => readLines(file),
		call,
		batch: TRANSFER_BATCH,
		progress: records => bar.update(records),
	};
	const total = await checkFile(options);
	console.error(`${file}: ${total} records, checked`);
	bar.start(total, 0);
	try {
		const summary = await importFile(options, total);
		done();
		bar.stop();
		const { read, created, unchanged, updated, refused } = summary;
		console.error(
			`Read ${read}: ${created} created, ${unchanged} unchanged, ${updated} updated, ${refused.length} refused, in ${secondsSince(started)}.`,
		);
		for (const { line, reason } of refused) console.error(`  line ${line}: ${printable(reason)}`);
		if (read < total) {
			console.error(
				`The file changed after its check: ${total} records were checked and ${read} read. Import it again once it is whole.`,
			);
			return false;
		}
		return refused.length === 0;
	} finally {
		bar.stop();
	}
}

async function main(): Promise<void> {
	const typed = process.argv[2];
	if (!typed || typed === "-" || process.argv.length > 3) {
		console.error(USAGE);
		process.exitCode = 2;
		return;
	}
	const file = typedPath(typed);
	let broker: ServiceBroker | undefined;
	try {
		await access(file);
		// Read twice, checked whole first: a pipe would be empty the second time.
		if (!(await stat(file)).isFile())
			throw new Error(`${file} is not a file (a pipe, a device or a folder): save the export to a file first`);
		console.error(`Importing ${file} into the catalogue of ${whereTheCatalogueIs()}`);
		const done = exitOnSignals(
			"Import",
			"part of the file may be in the catalogue; run the same import again to finish it (it creates only what is missing).",
		);
		broker = await startMember();
		const started = broker;
		onInterrupt(() => started.stop());
		if (!(await importFrom(broker, file, done))) process.exitCode = 1;
	} catch (err) {
		if (!interrupted()) console.error(printable(err instanceof RefusedFile ? err.message : `Import failed: ${(err as Error).message}`));
		process.exitCode = 1;
	} finally {
		await broker?.stop();
	}
}

void main();
