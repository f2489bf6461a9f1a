import { connect, type NatsConnection } from "nats";
import { ServiceBroker } from "moleculer";
import { newId } from "../../lib/catalogue/ids";
import { config } from "../../lib/config/config";
import type { Change } from "../../lib/feed/changes";
import { CHANGES_STREAM, ensureStream } from "../../lib/feed/jetstream";
import brokerOptions from "../../moleculer.config";
import AuthorsService from "../../services/authors.service";
import CategoriesService from "../../services/categories.service";
import GamesService from "../../services/games.service";
import { startNats, startNatsCluster, type NatsCluster } from "../support/nats";
import { waitFor } from "../support/process";

// The change stream's replicas (CHANGE_FEED_REPLICAS, docs/followers.md): on a NATS cluster of three servers, a stream kept by all
// three takes the feed's changes with any one of them down, the one that led it included. A stream made before with one replica is
// raised by the relay; a lone server refuses more than one, in words the relay reports.

describe("on a NATS cluster of three, CHANGE_FEED_REPLICAS=3", () => {
	let cluster: NatsCluster;
	let broker: ServiceBroker;
	let client: NatsConnection;

	beforeAll(async () => {
		jest.replaceProperty(config, "feedReplicas", 3);
		cluster = await startNatsCluster(3);
		const servers = cluster.servers.map(server => server.url);
		// A stream made by an earlier version, or with the default: one replica.
		client = await connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
		await waitFor(
			"JetStream has a meta leader",
			async () => (await (await client.jetstreamManager()).getAccountInfo()) !== undefined,
			[],
			20_000,
		);
		await ensureStream(await client.jetstreamManager(), 1);
		broker = new ServiceBroker({
			...brokerOptions,
			nodeID: `replicas-${process.pid}`,
			namespace: `replicas-${newId()}`,
			transporter: { type: "NATS", options: { servers } },
			cacher: undefined,
			logger: false,
		});
		for (const schema of [AuthorsService, CategoriesService, GamesService]) broker.createService(schema);
		await broker.start();
	}, 40_000);
	afterAll(async () => {
		await broker?.stop();
		await client?.close();
		await cluster?.stop();
	});

	test("the relay raises the stream to three replicas, and it takes changes with the server that led it stopped", async () => {
		const jsm = await client.jetstreamManager();
		await broker.call("categories.create", { name: "Before" });
		await waitFor(
			"the stream is kept by three servers",
			async () => (await jsm.streams.info(CHANGES_STREAM)).cluster?.replicas?.filter(replica => replica.current).length === 2,
			[],
			20_000,
		);
		const info = await jsm.streams.info(CHANGES_STREAM);
		expect(info.config.num_replicas).toBe(3);

		const leader = cluster.servers[Number(info.cluster!.leader!.replace("catalogue-test-", ""))];
		await leader.stop();
		const { category } = await broker.call<{ category: { id: string } }, object>("categories.create", { name: "With its leader down" });
		await waitFor(
			"the change is in the stream",
			async () => {
				const last = await jsm.streams.getMessage(CHANGES_STREAM, {
					last_by_subj: `catalogue.changes.category.created.${broker.namespace}`,
				});
				return last.json<Change>().record.id === category.id;
			},
			[],
			20_000,
		);
	}, 60_000);
});

test("a lone NATS server refuses a stream of three replicas, in words the relay reports", async () => {
	const nats = await startNats();
	const client = await connect({ servers: nats.url });
	try {
		await expect(ensureStream(await client.jetstreamManager(), 3)).rejects.toThrow(/replicas > 1 not supported in non-clustered mode/);
	} finally {
		await client.close();
		await nats.stop();
	}
});
