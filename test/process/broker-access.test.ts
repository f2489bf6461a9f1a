import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { connect } from "nats";
import { CHANGES_STREAM } from "../../lib/feed/jetstream";
import type { Api } from "../support/catalogue";
import { startCluster, type Cluster } from "../support/cluster";
import { waitFor } from "../support/process";
import { runTool } from "../support/transfer";

// A cluster of processes started like `npm start`, with NATS_ACCESS=on, each logging in to a NATS with nats-access.conf's rules
// as its kind (docs/security.md, "The broker"): the writes, the references' checks and an export and import each cross NATS
// only on the subjects their kind may use; a node that used another would wait for REQUEST_TIMEOUT and the step would fail.

let cluster: Cluster;
let api: Api;
let dir: string;

beforeAll(async () => {
	dir = await mkdtemp(path.join(tmpdir(), "catalogue-broker-access-"));
	cluster = await startCluster({ access: true, env: { REQUEST_TIMEOUT: "3" } });
	api = cluster.api;
}, 60_000);
afterAll(async () => {
	await cluster?.stop();
	await rm(dir, { recursive: true, force: true });
});

test("games checks its references, authors asks games before a delete, and the gateway lists what they hold", async () => {
	const category = await api.category("Access");
	const author = await api.author("Access", "Dutch");
	const game = await api.game("Allowed", category, author, 10);
	expect(await api.put("/game", { title: "Orphan", age: 10, category: { id: category.id }, author: { id: "nope" } })).toMatchObject({
		status: 400,
	});
	expect(await api.delete(`/author/${author.id}`)).toMatchObject({
		status: 400,
		body: { msg: "There are games related to this author" },
	});
	expect((await api.get("/game")).body).toEqual([{ ...game, category, author }]);
});

test("each data service's relay publishes its changes to the JetStream stream, as its kind", async () => {
	const nats = await connect({ servers: new URL(cluster.nats.url).host, user: "anyone", pass: "anyone" });
	try {
		const jsm = await nats.jetstreamManager();
		const subjects = async () => Object.keys((await jsm.streams.info(CHANGES_STREAM, { subjects_filter: ">" })).state.subjects ?? {});
		await waitFor(
			"the category's, author's and game's changes in the stream",
			async () => (await subjects().catch(() => [])).length >= 3,
		);
		// The cluster's NAMESPACE after each (lib/feed/jetstream.ts changeSubject), which the access rules let each relay publish.
		const namespace = cluster.env("").NAMESPACE!;
		expect((await subjects()).sort()).toEqual(
			["author", "category", "game"].map(kind => `catalogue.changes.${kind}.created.${namespace}`),
		);
	} finally {
		await nats.close();
	}
});

test("the export/import tool exports the catalogue and imports it back, as the transfer kind", async () => {
	const file = path.join(dir, "export.jsonl");
	const exported = await runTool("export", [file], { env: cluster.env("") });
	expect(exported.code).toBe(0);
	const imported = await runTool("import", [file], { env: cluster.env("") });
	expect(imported.output).toMatch(/Read 3: 0 created, 3 unchanged, 0 updated, 0 refused/);
	expect(imported.code).toBe(0);
}, 60_000);
