// First: reads .env, then the configuration (a bad setting is one line).
import "../lib/config/load";
import { createWriteStream } from "node:fs";
import { mkdtemp, open, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { once } from "node:events";
import type { Writable } from "node:stream";
import { finished } from "node:stream/promises";
import type { ServiceBroker } from "moleculer";
import { DATA_SERVICE_NAMES } from "../lib/catalogue/services";
import { syncFolder } from "../lib/storage/backup";
import { exportCatalogue, guarded, refusedExportTarget, type ExportSummary } from "../lib/transfer/export";
import { config } from "../lib/config/config";
import { EXPORT_PAGE } from "../lib/transfer/format";
import type { Caller } from "../lib/transfer/calls";
import { exitOnSignals, interrupted, onInterrupt, startMember, whereTheCatalogueIs } from "./catalogue-member";
import { progressBar, secondsSince } from "./progress";
import { typedPath } from "./typed-path";

const USAGE = "usage: npm run export -- <file>, or npm run -s export -- - for stdout (-s: without npm's own lines there)";

/** Writes the export to `target` whole or not at all: to a file beside it, flushed to the disk, then renamed over it. */
async function exportToFile(target: string, run: (out: Writable) => Promise<ExportSummary>, done: () => void): Promise<ExportSummary> {
	const partial = `${target}.partial-${process.pid}`;
	const out = guarded(createWriteStream(partial));
	const kept = onInterrupt(() => rm(partial, { force: true }));
	try {
		// A folder that is not there, or not writable, fails here, before the catalogue is read.
		await once(out, "open");
		const summary = await run(out);
		out.end();
		await finished(out);
		const written = await open(partial, "r+");
		await written.sync().finally(() => written.close());
		await rename(partial, target);
		done();
		await syncFolder(path.dirname(target));
		return summary;
	} catch (err) {
		out.destroy();
		await rm(partial, { force: true });
		throw err;
	} finally {
		kept();
	}
}

/** Records an import would refuse, listed at most. */
const SHOWN = 20;

/** `npm run export -- <file>`: the whole catalogue as JSON Lines (docs/contract.md, "Export and import"); false when an import would refuse some of it. */
async function exportTo(broker: ServiceBroker, target: string, done: () => void): Promise<boolean> {
	const call: Caller = (action, params) => broker.call(action, params);
	const started = Date.now();
	const counts = await Promise.all(DATA_SERVICE_NAMES.map(name => call<number>(`${name}.count`, {})));
	const bar = progressBar("export");
	bar.start(
		counts.reduce((sum, count) => sum + count, 0),
		0,
	);
	const spoolDir = await mkdtemp(path.join(tmpdir(), "catalogue-export-"));
	const spooled = onInterrupt(() => rm(spoolDir, { recursive: true, force: true }));
	try {
		const options = { call, page: EXPORT_PAGE, spoolDir, progress: (records: number) => bar.update(records) };
		const run = (out: Writable) => exportCatalogue(options, out);
		const summary =
			target === "-" ? await run(process.stdout).then(written => (done(), written)) : await exportToFile(target, run, done);
		bar.stop();
		const { categories, authors, games } = summary.counts;
		console.error(
			`Exported ${categories} categories, ${authors} authors and ${games} games to ${target === "-" ? "stdout" : target} in ${secondsSince(started)}` +
				(summary.readAgain > 0 ? `; ${summary.readAgain} written meanwhile were read again` : "") +
				(summary.leftOut > 0 ? `; ${summary.leftOut} games changing all along were left out` : "") +
				".",
		);
		const { refusable } = summary;
		if (refusable.length === 0) return true;
		console.error(
			`${refusable.length} of them an import would refuse, stored before a rule of today: correct them through the API (PUT) and export again.`,
		);
		for (const { kind, id, reason } of refusable.slice(0, SHOWN)) console.error(`  ${kind} ${id}: ${reason}`);
		if (refusable.length > SHOWN) console.error(`  and ${refusable.length - SHOWN} more`);
		return false;
	} finally {
		bar.stop();
		spooled();
		await rm(spoolDir, { recursive: true, force: true });
	}
}

async function main(): Promise<void> {
	const typed = process.argv[2];
	if (!typed || process.argv.length > 3) {
		console.error(USAGE);
		process.exitCode = 2;
		return;
	}
	// Another catalogue's files, or a folder, are refused before the catalogue is read.
	const target = typed === "-" ? typed : typedPath(typed);
	const refused = target === "-" ? undefined : refusedExportTarget(target, config.dataDir);
	if (refused) {
		console.error(`Export failed: ${refused}`);
		process.exitCode = 1;
		return;
	}
	console.error(`Exporting the catalogue of ${whereTheCatalogueIs()}`);
	const done = exitOnSignals(
		"Export",
		target === "-" ? "what went to stdout is not a whole export." : `nothing was written to ${target}.`,
	);
	let broker: ServiceBroker | undefined;
	try {
		broker = await startMember({ snapshot: true });
		const started = broker;
		onInterrupt(() => started.stop());
		if (!(await exportTo(broker, target, done))) process.exitCode = 1;
	} catch (err) {
		if (!interrupted()) console.error(`Export failed: ${(err as Error).message}`);
		process.exitCode = 1;
	} finally {
		await broker?.stop();
	}
}

void main();
