import { NO_CLUSTER } from "../../lib/config/start-failures";
import { Api, localService, startCatalogue, type Catalogue } from "../support/catalogue";
import { freePort } from "../support/process";
import { PROMPT_SHOWN, ReplSession } from "../support/repl";

describe("npm run repl: a REPL node that joins a running cluster over NATS", () => {
	let catalogue: Catalogue;
	let repl: ReplSession | undefined;
	let orphan: { id: string; author: string };

	beforeAll(async () => {
		catalogue = await startCatalogue({ topology: "nats" });
		const { api } = catalogue;
		const category = await api.category("Euro");
		const kept = await api.author("Kept", "German");
		const gone = await api.author("Gone", "French");
		await api.game("Sound", category, kept);
		orphan = await api.game("Orphaned", category, gone);
		// An author removed behind the catalogue's back (as a direct edit of the store would):
		// the one way a game can lose its author, since the service refuses it.
		const authors = localService<{ adapter: { removeById(id: string): Promise<unknown> } }>(catalogue, "authors");
		await authors.adapter.removeById(gone.id);
	});

	afterAll(async () => {
		await repl?.kill();
		await catalogue?.stop();
	});

	test("counts, integrity and the built-in nodes command, then quit", async () => {
		// As `npm run repl` starts it: no SERVICES and no SERVICEDIR, so no services of its own.
		// As the REPL joins a cluster whose NATS has the access rules: as its kind (docs/security.md, "The broker").
		const joins = { TRANSPORTER: catalogue.nats!.urlAs("repl"), NATS_ACCESS: "on", NAMESPACE: catalogue.namespace };
		repl = new ReplSession({ SERVICES: "", SERVICEDIR: "", ...joins });
		await repl.waitFor(PROMPT_SHOWN);

		const counts = await repl.type("counts");
		expect(counts).toMatch(/authors\s+1\b/);
		expect(counts).toMatch(/categories\s+1\b/);
		expect(counts).toMatch(/games\s+2\b/);

		const integrity = await repl.type("integrity");
		expect(integrity).toContain("1 game(s) refer to a missing category or author:");
		expect(integrity).toContain(`${orphan.id}  "Orphaned"  missing author ${orphan.author}`);
		expect(integrity).not.toContain('"Sound"');
		expect(await repl.type("orphans")).toContain(`missing author ${orphan.author}`);

		const positions = await repl.type("changes");
		expect(positions).toMatch(/games\s+2\s+1\b/);
		expect(positions).toMatch(/authors\s+2\s+1\b/);
		const following = repl.type("follow 3");
		await new Promise(resolve => setTimeout(resolve, 1500));
		const followed = await catalogue.api.category("Followed live");
		const printed = await following;
		expect(printed).toMatch(new RegExp(`category +#2 +created ${followed.id}  "Followed live"`));
		expect(printed).toContain("Followed the feeds: 1 change(s).");

		expect(await repl.type("nodes")).toContain(catalogue.broker.nodeID);
		expect(await repl.quit()).toBe(0);
	});
});

describe("npm start -- --repl: a node that runs the services with the REPL attached", () => {
	let repl: ReplSession | undefined;
	afterAll(() => repl?.kill());

	test("counts what was written through its own gateway; integrity finds nothing wrong", async () => {
		const port = await freePort();
		repl = new ReplSession({ STORAGE: "memory", PORT: String(port) });
		await repl.waitFor(PROMPT_SHOWN);
		const api = new Api(`http://127.0.0.1:${port}`);
		const category = await api.category("Family");
		await api.game("Carcassonne", category, await api.author());

		const counts = await repl.type("counts");
		expect(counts).toMatch(/authors\s+1\b/);
		expect(counts).toMatch(/categories\s+1\b/);
		expect(counts).toMatch(/games\s+1\b/);
		expect(await repl.type("integrity")).toContain("Integrity check passed");
		expect(await repl.quit()).toBe(0);
	});
});

describe("npm run repl without TRANSPORTER: no cluster to join", () => {
	let repl: ReplSession | undefined;
	afterAll(() => repl?.kill());

	test("says so at its start and answers the catalogue's commands with how to join one, without waiting", async () => {
		// As `npm run repl` starts it: no SERVICES and no SERVICEDIR; and no TRANSPORTER.
		repl = new ReplSession({ SERVICES: "", SERVICEDIR: "", TRANSPORTER: "" });
		const started = await repl.waitFor(PROMPT_SHOWN);
		expect(started).toContain(NO_CLUSTER);
		const asked = Date.now();
		const counts = await repl.type("counts");
		expect(counts.trim()).toBe(NO_CLUSTER);
		// The wait for services that would come over NATS is 5 s.
		expect(Date.now() - asked).toBeLessThan(2000);
		expect(await repl.type("integrity")).toContain(NO_CLUSTER);
		expect(await repl.quit()).toBe(0);
	});
});
