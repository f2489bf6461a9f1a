import { randomUUID } from "node:crypto";
import { ServiceBroker } from "moleculer";
import { startNats, type NatsServer } from "../support/nats";
import { startNode, waitFor, type Node } from "../support/process";

// Nothing secret leaves a node (docs/security.md): a node started with passwords in TRANSPORTER
// and REDIS_URL answers `$node.options` and `$node.services` to another node without them, and
// prints none of them.

const NATS_PASSWORD = "s3cret-nats-pw";
const REDIS_PASSWORD = "s3cret-redis-pw";

let nats: NatsServer;
let node: Node;
let other: ServiceBroker;
const namespace = `secrets-${randomUUID()}`;

beforeAll(async () => {
	nats = await startNats();
	// This nats-server and Redis ask for no password: the node is given ones all the same.
	const withUser = nats.url.replace("nats://", `nats://catalogue:${NATS_PASSWORD}@`);
	node = startNode({
		SERVICES: "authors",
		STORAGE: "memory",
		NAMESPACE: namespace,
		TRANSPORTER: withUser,
		REDIS_URL: `redis://:${REDIS_PASSWORD}@127.0.0.1:6379/0`,
		LOGLEVEL: "info",
	});
	other = new ServiceBroker({
		namespace,
		nodeID: `other-${process.pid}`,
		transporter: { type: "NATS", options: { url: nats.url } },
		logger: false,
	});
	await other.start();
	await other.waitForServices(["authors"], 20_000);
}, 30_000);
afterAll(async () => {
	await other?.stop();
	await node?.stop();
	await nats?.stop();
});

/** The catalogue node's id, as the other node sees it. */
const nodeId = () =>
	(other.registry.getNodeList({ onlyAvailable: true }) as { id: string; local: boolean }[]).find(each => !each.local)!.id;

test("$node.options, asked from another node, carries the transporter's user and Redis's URL with their passwords hidden", async () => {
	const options = JSON.stringify(await other.call("$node.options", {}, { nodeID: nodeId() }));
	expect(options).toContain('"user":"catalogue","pass":"***"');
	expect(options).toContain("redis://:***@127.0.0.1:6379/0");
	expect(options).not.toContain(NATS_PASSWORD);
	expect(options).not.toContain(REDIS_PASSWORD);
});

test("no service's settings and no line of the node's output carry a password", async () => {
	const services = JSON.stringify(await other.call("$node.services", { withActions: true }, { nodeID: nodeId() }));
	expect(services).toContain("authors");
	expect(services).not.toContain(NATS_PASSWORD);
	expect(services).not.toContain(REDIS_PASSWORD);
	await waitFor("the node has printed that it started", async () => /started successfully/.test(node.output()), [node]);
	expect(node.output()).not.toContain(NATS_PASSWORD);
	expect(node.output()).not.toContain(REDIS_PASSWORD);
});
