import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { connect, Events, type NatsConnection } from "nats";
import { parse } from "yaml";
import type { NodeKind } from "../../lib/config/broker-access";
import { natsReconnects } from "../../middlewares/nats-reconnects.middleware";
import { startCatalogue, type Catalogue } from "../support/catalogue";
import { startNats, type NatsServer } from "../support/nats";
import { root } from "../support/process";

// nats.conf's access rules on a real nats-server (docs/security.md, "The broker"), as an attacker who holds one node's
// credentials would try them: each refusal here is NATS's own, and each is paired with what that user may do.

let catalogue: Catalogue;
const clients: NatsConnection[] = [];

beforeAll(async () => {
	catalogue = await startCatalogue({ topology: "nats", middlewares: [natsReconnects] });
});
afterAll(async () => {
	await Promise.all(clients.map(client => client.close()));
	await catalogue?.stop();
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
		const smuggle = () => catalogue.broker.call("categories.importRecords", { records: [{ id, name: "Smuggled" }] }, { timeout: 1000 });
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
