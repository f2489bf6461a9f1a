/**
 * How long compacting a games file holds the games' writes, at 100,000 games (docs/storage.md,
 * "What a crash can and cannot lose"). NeDB runs a compaction in its queue, so a write that arrives
 * meanwhile waits for the end of it: that wait is the pause. Part of it (serializing the records)
 * blocks the event loop, so every service of the process waits that long. Run with
 * `npm run build && npx tsc -p bench/tsconfig.json && node dist/bench/compaction.js [games]`.
 */

import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { ServiceBroker, type Service } from "moleculer";
import DbService from "moleculer-db";
import { newId } from "../lib/catalogue/ids";
import { createAdapter } from "../lib/storage/adapter";

interface Datastore {
	compactDatafileAsync(): Promise<void>;
	insertAsync(docs: object[]): Promise<unknown>;
	ensureIndexAsync(options: { fieldName: string; sparse?: boolean }): Promise<void>;
	updateAsync(query: object, update: object, options: object): Promise<unknown>;
}

const ROUNDS = 7;
const games = Number(process.argv[2] ?? 100_000);

/** The median and the largest of `values`, in ms with one decimal. */
const summary = (values: number[]) => {
	const sorted = [...values].sort((a, b) => a - b);
	return `median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms, max ${sorted[sorted.length - 1].toFixed(1)} ms`;
};

async function main(): Promise<void> {
	const dataDir = mkdtempSync(path.join(tmpdir(), "catalogue-compaction-"));
	const broker = new ServiceBroker({ logger: false });
	const service = broker.createService({
		name: "games",
		mixins: [DbService],
		adapter: createAdapter("games", { mongoUri: null, storage: "file", dataDir }),
	} as never) as Service & { adapter: { db: Datastore } };
	await broker.start();
	const { db } = service.adapter;
	try {
		for (const fieldName of ["category", "author"]) await db.ensureIndexAsync({ fieldName });
		for (const fieldName of ["draft", "change.category", "change.author", "change.at"])
			await db.ensureIndexAsync({ fieldName, sparse: true });
		const categories = Array.from({ length: 20 }, () => newId());
		const authors = Array.from({ length: 500 }, () => newId());
		const docs = Array.from({ length: games }, (_, n) => ({
			_id: newId(),
			title: `A game of trains and ships ${String(n).padStart(6, "0")}`,
			age: 6 + (n % 12),
			category: categories[n % categories.length],
			author: authors[n % authors.length],
		}));
		await db.insertAsync(docs);
		const compactions: number[] = [];
		const waits: number[] = [];
		const blocked: number[] = [];
		for (let round = 0; round < ROUNDS; round++) {
			const loop = monitorEventLoopDelay({ resolution: 1 });
			loop.enable();
			const started = performance.now();
			const compacted = db.compactDatafileAsync().then(() => compactions.push(performance.now() - started));
			// A write that arrives just after the compaction started, as a client's would.
			await db.updateAsync({ _id: docs[round]._id }, { $set: { age: 18 } }, {});
			waits.push(performance.now() - started);
			await compacted;
			loop.disable();
			blocked.push(loop.max / 1e6);
		}
		const megabytes = statSync(path.join(dataDir, "games.db")).size / 1e6;
		console.log(`${games} games, ${megabytes.toFixed(1)} MB file, ${ROUNDS} rounds`);
		console.log(`compactDatafileAsync: ${summary(compactions)}`);
		console.log(`a write queued behind it waited: ${summary(waits)}`);
		console.log(`the event loop's longest block meanwhile: ${summary(blocked)}`);
	} finally {
		await broker.stop();
		rmSync(dataDir, { recursive: true, force: true });
	}
}

main().catch(err => {
	console.error(err);
	process.exit(1);
});
