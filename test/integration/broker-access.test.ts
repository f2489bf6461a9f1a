import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { connect, Events, type NatsConnection } from "nats";
import { parse } from "yaml";
import { texts } from "../../lib/catalogue/errors";
import { NODE_KINDS, passwordVariable, type NodeKind } from "../../lib/config/broker-access";
import { natsReconnects } from "../../middlewares/nats-reconnects.middleware";
import { startCatalogue, type Catalogue } from "../support/catalogue";
import { startNats, type NatsServer } from "../support/nats";
import { root } from "../support/process";
import { madeBy } from "../support/stack";

// nats.conf's access rules on a real nats-server (docs/security.md, "The broker"), as an attacker who holds one node's
// credentials would try them: each refusal here is NATS's own, and each is paired with what that user may do. Twice: on one
// server, as compose runs it, and on a cluster of three joined by routes, as the Kubernetes values run it, where each call
// crosses a route (the gateway on the first server, authors and categories on the second, games on the third) and the attacker
// logs in to the gateway's server.

let catalogue: Catalogue;
const clients: NatsConnection[] = [];

describe.each([
	["one nats-server", false],
	["a cluster of three nats-servers", true],
])("on %s", (_layout, natsCluster) => {
	beforeAll(async () => {
		catalogue = await startCatalogue({ topology: "nats", middlewares: [natsReconnects], natsCluster });
	});
	afterAll(async () => {
		await Promise.all(clients.splice(0).map(client => client.close()));
		await catalogue?.stop();
	});

	describe("what the nodes' own calls need", () => {
		test("a game's references are checked and a referenced author's delete is refused, each call on its action's subject", async () => {
			const { api } = catalogue;
			const [category, author] = [await api.category("Across"), await api.author("Across Author")];
			const game = await api.game("Across", category, author);
			expect((await api.get(`/game?title=Across`)).body.map(({ id }: { id: string }) => id)).toEqual([game.id]);
			expect(await api.delete(`/author/${author.id}`)).toMatchObject({ status: 400, body: { msg: texts.authorHasGames } });
			const orphan = { title: "Orphan", age: 10, category: { id: category.id }, author: { id: "01JZZZZZZZZZZZZZZZZZZZZZZZ" } };
			expect(await api.put("/game", orphan)).toMatchObject({ status: 400, body: { msg: texts.authorNotFound } });
			expect((await api.delete(`/game/${game.id}`)).status).toBe(200);
			expect((await api.delete(`/author/${author.id}`)).status).toBe(200);
		});
	});

	describeAttacks();
});

/** The catalogue's subjects begin with moleculer's prefix and its namespace. */
const subject = (rest: string) => `MOL-${catalogue.namespace}.${rest}`;
const nodeOf = (service: string) => catalogue.brokers.find(broker => broker.getLocalService(service))!.nodeID;

/** A NATS client logged in as `user` (on the catalogue's server by default), and the subjects NATS has refused it so far. */
async function clientAs(user: NodeKind, server: NatsServer = catalogue.nats!): Promise<{ client: NatsConnection; refused: string[] }> {
	const url = new URL(server.urlAs(user));
	const client = await connect({ servers: url.host, user: url.username, pass: url.password });
	clients.push(client);
	const refused: string[] = [];
	void (async () => {
		for await (const status of client.status())
			if (status.type === Events.Error && status.permissionContext) refused.push(status.permissionContext.subject);
	})();
	return { client, refused };
}

/** Whether NATS refuses `user` a publish to `to`: the server answers it before the flush's own round trip. */
async function publishRefused(user: NodeKind, to: string, server?: NatsServer): Promise<boolean> {
	const { client, refused } = await clientAs(user, server);
	client.publish(to, JSON.stringify({ ver: "5", sender: `${user}.forged` }));
	await client.flush();
	await new Promise(resolve => setTimeout(resolve, 50));
	return refused.includes(to);
}

async function subscribeRefused(user: NodeKind, to: string, queue?: string): Promise<boolean> {
	const { client, refused } = await clientAs(user);
	client.subscribe(to, { queue, callback: () => undefined });
	await client.flush();
	await new Promise(resolve => setTimeout(resolve, 50));
	return refused.includes(to);
}

/** What each kind's credentials may and may not do on the catalogue's NATS. */
function describeAttacks() {
	describe("the gateway's credentials", () => {
		test("may call the actions its routes map, and no other: games.importRecords, games.countBy, $node.list are refused", async () => {
			expect(await publishRefused("api", subject("REQB.games.list"))).toBe(false);
			expect(await publishRefused("api", subject("REQB.authors.remove"))).toBe(false);
			for (const action of ["games.importRecords", "games.countBy", "authors.exportPage", "categories.referable", "$node.list"])
				expect(await publishRefused("api", subject(`REQB.${action}`))).toBe(true);
		});

		test("cannot call a node directly on its own subject, which names no action (authors.remove bypassing its subject)", async () => {
			expect(await publishRefused("api", subject(`REQ.${nodeOf("authors")}`))).toBe(true);
			expect(await publishRefused("api", subject(`REQ.${nodeOf("games")}`))).toBe(true);
		});

		test("cannot forge a reply, to another node's calls or to anyone's, nor tell nodes of changes that were not made", async () => {
			// authors asks games.countBy before a delete: a forged 0 would let a referenced author go.
			expect(await publishRefused("api", subject(`RES.${nodeOf("authors")}`))).toBe(true);
			expect(await publishRefused("api", subject(`RES.${nodeOf("games")}`))).toBe(true);
			expect(await publishRefused("api", subject(`EVENT.${nodeOf("api")}`))).toBe(true);
			// games may answer authors.
			expect(await publishRefused("games", subject(`RES.${nodeOf("authors")}`))).toBe(false);
		});

		test("cannot read other nodes' requests or replies, nor join a service's queue to take its calls", async () => {
			expect(await subscribeRefused("api", subject(`RES.${nodeOf("games")}`))).toBe(true);
			expect(await subscribeRefused("api", subject(`REQ.${nodeOf("games")}`))).toBe(true);
			expect(await subscribeRefused("api", subject("REQB.games.create"), "games.create")).toBe(true);
			expect(await subscribeRefused("api", subject(">"))).toBe(true);
			expect(await subscribeRefused("api", "_INBOX_games.>")).toBe(true);
			expect(await subscribeRefused("api", subject(`RES.${nodeOf("api")}`))).toBe(false);
		});

		test("a call of categories.importRecords through the gateway's broker never reaches categories, and the node says why once", async () => {
			const warn = jest.spyOn(catalogue.broker.logger, "warn");
			const id = "01JZZZZZZZZZZZZZZZZZZZZZZZ";
			const smuggle = () =>
				catalogue.broker.call("categories.importRecords", { records: [{ id, name: "Smuggled" }] }, { timeout: 1000 });
			await expect(smuggle()).rejects.toThrow(/timed out/);
			await expect(smuggle()).rejects.toThrow(/timed out/);
			expect((await catalogue.api.get(`/category/${id}`)).status).toBe(400);
			const said = warn.mock.calls.map(([line]) => String(line)).filter(line => line.startsWith("NATS refused"));
			expect(said).toEqual([
				`NATS refused this node (${catalogue.broker.nodeID}) the publish to ${subject("REQB.categories.importRecords")}: its NATS user may not (docs/security.md, "The broker")`,
			]);
			warn.mockRestore();
		});
	});

	describe("the other kinds", () => {
		test("authors and categories may ask games.countBy, not import into games; games may check references, not remove", async () => {
			expect(await publishRefused("authors", subject("REQB.games.countBy"))).toBe(false);
			expect(await publishRefused("categories", subject("REQB.games.countBy"))).toBe(false);
			expect(await publishRefused("authors", subject("REQB.games.importRecords"))).toBe(true);
			expect(await publishRefused("games", subject("REQB.authors.referable"))).toBe(false);
			expect(await publishRefused("games", subject("REQB.authors.remove"))).toBe(true);
		});

		test("the export/import tool may export and import, and not delete; the follower may read the feed, and not write", async () => {
			expect(await publishRefused("transfer", subject("REQB.games.importRecords"))).toBe(false);
			expect(await publishRefused("transfer", subject("REQB.games.remove"))).toBe(true);
			expect(await publishRefused("follower", subject("REQB.games.changes"))).toBe(false);
			expect(await publishRefused("follower", subject("REQB.games.create"))).toBe(true);
		});

		test("a client without credentials is not let in", async () => {
			await expect(connect({ servers: catalogue.nats!.url.replace("nats://", ""), reconnect: false })).rejects.toMatchObject({
				code: "AUTHORIZATION_VIOLATION",
			});
		});
	});
}

describe("the same rules in NATS's Helm chart (deploy/kubernetes/charts/nats-values.yaml)", () => {
	test("written into a nats.conf as the chart writes `config.merge` (JSON, `<< >>` unquoted), nats-server runs them", async () => {
		const { merge } = parse(readFileSync(path.join(root, "deploy/kubernetes/charts/nats-values.yaml"), "utf8")).config;
		// The chart's nats.formatConfig: the values as JSON, each "<< x >>" written as x (a variable, a size).
		const body = JSON.stringify({ authorization: merge.authorization }, null, 2).replace(/"<<\s+(.*)\s+>>"/g, "$1");
		const folder = await mkdtemp(path.join(tmpdir(), "nats-helm-"));
		const config = path.join(folder, "nats.conf");
		await writeFile(config, `include "${path.relative(folder, path.join(root, "nats.conf"))}"\n${body.slice(1, -1)}\n`);
		const helm = await startNats(10_000, config);
		try {
			expect(await publishRefused("api", "MOL-x.REQB.games.list", helm)).toBe(false);
			expect(await publishRefused("api", "MOL-x.REQB.games.importRecords", helm)).toBe(true);
			expect(await publishRefused("transfer", "MOL-x.REQB.games.importRecords", helm)).toBe(false);
		} finally {
			await helm.stop();
			await rm(folder, { recursive: true, force: true });
		}
	});
});

describe("the passwords of nats-access.conf, which nats-server reads from its environment as values of its configuration", () => {
	/** Whether nats-server starts on nats-access.conf with every kind's password set to `password`. */
	async function startsWith(password: string): Promise<boolean> {
		const env = Object.fromEntries(NODE_KINDS.map(kind => [passwordVariable(kind), password]));
		try {
			const server = await startNats(10_000, path.join(root, "nats-access.conf"), { env });
			await server.stop();
			return true;
		} catch {
			return false;
		}
	}

	test("one that begins with digits can be a number to it, which stops it; .env.example's recipe makes letters only", async () => {
		expect(await startsWith("5e3f0a9c1b2d")).toBe(false);
		const [, recipe] = /^# NATS_API_PASSWORD=<(.*)>$/m.exec(readFileSync(path.join(root, ".env.example"), "utf8"))!;
		const made = madeBy(recipe);
		expect(made).toMatch(/^[a-z]{48}$/);
		expect(await startsWith(made)).toBe(true);
	});
});
