import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Redis from "ioredis";
import { startCatalogue, type Catalogue } from "../support/catalogue";
import { LOOPBACK_SERVER, signedCertificates } from "../support/certificates";
import { freePort, listening, startNode, startProcess } from "../support/process";
import { startRedis, type RedisServer } from "../support/redis";

// A Redis that asks for a password (`requirepass`, as compose runs it): REDIS_URL with the
// password caches, a wrong one stops the node with a clear message and no password shown
// (docs/security.md).

const PASSWORD = "Redis-pa55/word";
let redis: RedisServer;
let withPassword: string;
let catalogue: Catalogue | undefined;

beforeAll(async () => {
	redis = await startRedis(10_000, ["--requirepass", PASSWORD]);
	withPassword = redis.url.replace("redis://", `redis://:${encodeURIComponent(PASSWORD)}@`);
});
afterAll(async () => {
	await catalogue?.stop();
	await redis?.stop();
});

test("with the password in REDIS_URL the cluster caches its reads in that Redis", async () => {
	process.env.CATALOGUE_TEST_REDIS = withPassword;
	catalogue = await startCatalogue({ topology: "nats" });
	await catalogue.api.author("Uwe Rosenberg", "German");
	expect((await catalogue.api.get("/author")).status).toBe(200);
	const client = new Redis(withPassword);
	try {
		expect((await client.keys(`MOL-${catalogue.namespace}-*`)).length).toBeGreaterThan(0);
	} finally {
		client.disconnect();
	}
	const stranger = new Redis(redis.url, { maxRetriesPerRequest: 0 });
	stranger.on("error", () => undefined);
	try {
		await expect(stranger.keys("*")).rejects.toThrow(/NOAUTH/);
	} finally {
		stranger.disconnect();
	}
}, 30_000);

test("a wrong password: the node says Redis refuses it, then exits with 1 after START_TIMEOUT naming REDIS_URL, the password nowhere", async () => {
	const wrong = redis.url.replace("redis://", "redis://:not-the-Pa55@");
	const node = startNode({ SERVICES: "games", STORAGE: "memory", REDIS_URL: wrong, START_TIMEOUT: "3", LOGLEVEL: "info" });
	const code = await node.exited;
	expect(code).toBe(1);
	expect(node.output()).toMatch(/The Redis of REDIS_URL redis:\/\/:\*\*\*@\S+ does not answer \((WRONGPASS|NOAUTH|ERR invalid)/);
	expect(node.output()).toContain("Could not reach the Redis of REDIS_URL redis://:***@");
	expect(node.output()).not.toContain("not-the-Pa55");
}, 20_000);

test("rediss://: a node caches in a Redis that speaks only TLS, trusting its CA through NODE_EXTRA_CA_CERTS", async () => {
	const dir = mkdtempSync(path.join(tmpdir(), "catalogue-rediss-"));
	const pem = signedCertificates(dir, [LOOPBACK_SERVER]);
	const port = await freePort();
	const server = spawn(
		"redis-server",
		[
			"--port",
			"0",
			"--tls-port",
			String(port),
			"--tls-cert-file",
			pem("server"),
			"--tls-key-file",
			pem("server-key"),
			"--tls-ca-cert-file",
			pem("ca"),
			"--tls-auth-clients",
			"no",
			"--requirepass",
			PASSWORD,
			"--save",
			"",
			"--appendonly",
			"no",
		],
		{ stdio: "ignore" },
	);
	const failed = new Promise<never>((_, reject) => server.once("error", reject));
	try {
		await listening(port, failed, 10_000, () => `redis-server with TLS did not listen on ${port}`);
		const url = `rediss://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/0`;
		const node = await startProcess({ STORAGE: "memory", REDIS_URL: url, NODE_EXTRA_CA_CERTS: pem("ca") });
		try {
			await node.api.author("Vital Lacerda", "Portuguese");
			expect((await node.api.get("/author")).status).toBe(200);
		} finally {
			await node.stop();
		}
		const client = new Redis(url, { tls: { ca: readFileSync(pem("ca")) } });
		try {
			expect((await client.keys("MOL-*")).length).toBeGreaterThan(0);
		} finally {
			client.disconnect();
		}
	} finally {
		server.kill("SIGKILL");
		rmSync(dir, { recursive: true, force: true });
	}
}, 40_000);
