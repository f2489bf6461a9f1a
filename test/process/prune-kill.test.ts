import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceBroker, type Service } from "moleculer";
import { SqliteAdapter } from "../../lib/storage/sqlite-adapter";
import { root } from "../support/process";

// The change feed's prune across a SIGKILL in the middle of its steps (docs/followers.md, the guarantees' "Retention"): each step
// drops the oldest changes up to a seq in one commit, so a kill leaves a feed that still ends at its last change with no hole, and
// the next prune goes on from there.

const CHANGES = 100_000;
const KEPT = 1_000;
const broker = new ServiceBroker({ logger: false });
/** The games' store as both processes open it, but for its DATA_DIR. */
const STORE = { holding: "alone", collection: "games", indexes: [], sparseIndexes: [], orders: [["title"]] } as const;

async function games(dataDir: string): Promise<SqliteAdapter> {
	const adapter = new SqliteAdapter({ dataDir, ...STORE });
	adapter.init(broker, { logger: broker.getLogger("store") } as unknown as Service);
	await adapter.connect();
	return adapter;
}

/** The built adapter in a process of its own, pruning the feed to its last KEPT changes; a line on every turn of its loop. */
const pruner = `
const { ServiceBroker } = require("moleculer");
const { SqliteAdapter } = require(${JSON.stringify(path.join(root, "dist/lib/storage/sqlite-adapter.js"))});
const broker = new ServiceBroker({ logger: false });
const adapter = new SqliteAdapter({ dataDir: process.argv[1], ...${JSON.stringify(STORE)} });
adapter.init(broker, { logger: broker.getLogger("store") });
adapter.connect().then(() => {
	const turn = () => { process.stdout.write("turn\\n"); setImmediate(turn); };
	process.stdout.write("pruning\\n");
	setImmediate(turn);
	return adapter.pruneChanges({ maxAgeMs: 3_600_000, maxChanges: ${KEPT} });
}).then(dropped => process.stdout.write("done " + dropped + "\\n"));
`;

test("a kill -9 in the middle of a prune leaves the feed whole from a seq to its end, and the next prune goes on", async () => {
	const dataDir = mkdtempSync(path.join(tmpdir(), "catalogue-prune-kill-"));
	const filled = await games(dataDir);
	const insert = Array.from({ length: CHANGES }, (_, n) => ({ _id: `g${n}`, title: `Game ${n}` }));
	await filled.recordedWrite({ insert }, id => ({ id: `change-${id}`, record: { id } }));
	await filled.disconnect();

	const child = spawn(process.execPath, ["-e", pruner, dataDir], { stdio: ["ignore", "pipe", "pipe"] });
	let output = "";
	let errors = "";
	child.stderr.on("data", chunk => (errors += chunk));
	const exited = new Promise<NodeJS.Signals | null>(resolve => child.once("exit", (_, signal) => resolve(signal)));
	// Killed after a few turns of its loop once pruning: a few steps of the 99 in.
	await new Promise<void>((resolve, reject) => {
		child.stdout.on("data", chunk => {
			output += chunk;
			const turns = output.split("\n").filter(line => line === "turn").length;
			if (output.includes("pruning") && turns >= 4) {
				child.kill("SIGKILL");
				resolve();
			}
		});
		void exited.then(() => reject(new Error(`the pruner ended before it was killed:\n${output}${errors}`)));
	});
	expect(await exited).toBe("SIGKILL");
	expect(output).not.toMatch(/^done/m);

	const reopened = await games(dataDir);
	try {
		const { changes, first, last } = await reopened.changesAfter(0, CHANGES);
		expect(last).toBe(CHANGES);
		// Killed in the middle: some steps were committed, not all of them.
		expect(first).toBeGreaterThan(1);
		expect(first).toBeLessThan(CHANGES - KEPT + 1);
		expect(changes.map(change => change.seq)).toEqual(Array.from({ length: CHANGES - first + 1 }, (_, n) => first + n));

		expect(await reopened.pruneChanges({ maxAgeMs: 3_600_000, maxChanges: KEPT })).toBe(CHANGES - KEPT - first + 1);
		expect((await reopened.changesAfter(0, CHANGES)).first).toBe(CHANGES - KEPT + 1);
	} finally {
		await reopened.disconnect();
	}
});
