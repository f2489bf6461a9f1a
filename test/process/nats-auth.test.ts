import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createUser } from "nkeys.js";
import { LOOPBACK_SERVER, signedCertificates } from "../support/certificates";
import { startNats, type NatsServer } from "../support/nats";
import { startNode, startProcess, type Node } from "../support/process";

// A nats-server that asks for credentials (docs/security.md): a node with the right ones joins
// and serves; one with wrong or none gives up within START_TIMEOUT, naming the transporter
// without the password. Each server is the test's own, on a free port, with a config written here.

const dir = mkdtempSync(path.join(tmpdir(), "catalogue-nats-auth-"));
const servers: NatsServer[] = [];
const nodes: Node[] = [];
afterAll(async () => {
	await Promise.all(nodes.map(node => node.kill()));
	await Promise.all(servers.map(server => server.stop()));
	rmSync(dir, { recursive: true, force: true });
});

/** A nats-server with this configuration (NATS's own syntax), the repository's limits included. */
async function natsWith(name: string, config: string): Promise<NatsServer> {
	const file = path.join(dir, `${name}.conf`);
	writeFileSync(file, `max_payload: 64MB\n${config}\n`);
	const server = await startNats(10_000, file);
	servers.push(server);
	return server;
}

const withCredentials = (server: NatsServer, credentials: string) => server.url.replace("nats://", `nats://${credentials}@`);

/** A node running every service over `server`, with `env`; resolves once its gateway creates and lists a category. */
async function serves(env: NodeJS.ProcessEnv): Promise<void> {
	const node = await startProcess({ STORAGE: "memory", NAMESPACE: `auth-${Date.now()}`, ...env });
	nodes.push(node);
	try {
		const category = await node.api.category("Eurogames");
		expect((await node.api.get("/category")).body).toEqual([category]);
	} finally {
		await node.stop();
	}
}

/** A node over `server` that must not get in: its exit code and what it printed. */
async function refused(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
	const node = startNode({ STORAGE: "memory", START_TIMEOUT: "3", ...env });
	nodes.push(node);
	const code = await node.exited;
	return { code, output: node.output() };
}

describe("user and password", () => {
	// A password with characters a URL must escape: sent decoded (moleculer's own reading would not).
	const password = "p@ss/w0rd:x";
	let server: NatsServer;
	beforeAll(async () => (server = await natsWith("password", `authorization { user: catalogue, password: "${password}" }`)));

	test("the right ones, percent-encoded in TRANSPORTER: the node joins and serves", async () => {
		await serves({ TRANSPORTER: withCredentials(server, `catalogue:${encodeURIComponent(password)}`) });
	}, 30_000);

	test.each([
		["a wrong password", "catalogue:wrong-Pa55"],
		["none", ""],
	])(
		"%s: exit 1 within START_TIMEOUT, the transporter named, no password shown",
		async (_case, credentials) => {
			const transporter = credentials ? withCredentials(server, credentials) : server.url;
			const { code, output } = await refused({ TRANSPORTER: transporter });
			expect(code).toBe(1);
			expect(output).toContain(
				`Could not connect to the transporter at ${credentials ? withCredentials(server, "catalogue:***") : server.url} within 3 s`,
			);
			expect(output).not.toContain("wrong-Pa55");
			expect(output).not.toContain(password);
		},
		20_000,
	);
});

test("a token in TRANSPORTER (nats://<token>@host) logs in with nats-server's token authorization", async () => {
	const server = await natsWith("token", `authorization { token: "s3cr3t-t0ken-for-tests" }`);
	await serves({ TRANSPORTER: withCredentials(server, "s3cr3t-t0ken-for-tests") });
	const { code, output } = await refused({ TRANSPORTER: withCredentials(server, "not-the-token") });
	expect(code).toBe(1);
	expect(output).not.toContain("not-the-token");
}, 40_000);

test("an nkey seed in NATS_NKEY_SEED logs in as that nkey user", async () => {
	const user = createUser();
	const seedFile = path.join(dir, "user.nk");
	writeFileSync(seedFile, new TextDecoder().decode(user.getSeed()));
	const server = await natsWith("nkey", `authorization { users = [ { nkey: "${user.getPublicKey()}" } ] }`);
	await serves({ TRANSPORTER: server.url, NATS_NKEY_SEED: seedFile });
	expect((await refused({ TRANSPORTER: server.url })).code).toBe(1);
}, 40_000);

describe("TLS with a CA and client certificates the test makes (openssl)", () => {
	let pem: (name: string) => string;
	let server: NatsServer;

	beforeAll(async () => {
		pem = signedCertificates(dir, [
			LOOPBACK_SERVER,
			{ name: "client", subject: "/CN=catalogue-node", extension: "extendedKeyUsage=clientAuth" },
		]);
		expect(readFileSync(pem("client"), "utf8")).toContain("BEGIN CERTIFICATE");
		server = await natsWith(
			"tls",
			`tls { cert_file: "${pem("server")}", key_file: "${pem("server-key")}", ca_file: "${pem("ca")}", verify: true }`,
		);
	}, 30_000);

	test("NATS_CA, NATS_CERT and NATS_KEY: the node joins and serves", async () => {
		await serves({
			TRANSPORTER: server.url.replace("nats://", "tls://"),
			NATS_CA: pem("ca"),
			NATS_CERT: pem("client"),
			NATS_KEY: pem("client-key"),
		});
	}, 30_000);

	test("without the client certificate the server turns the node away", async () => {
		expect((await refused({ TRANSPORTER: server.url.replace("nats://", "tls://"), NATS_CA: pem("ca") })).code).toBe(1);
	}, 20_000);
});

test("a NATS_* file that is missing stops the node at once, naming the variable", async () => {
	const { code, output } = await refused({ TRANSPORTER: "nats://127.0.0.1:4222", NATS_CA: path.join(dir, "nowhere.pem") });
	expect(code).toBe(1);
	expect(output).toContain(`NATS_CA names ${path.join(dir, "nowhere.pem")}, which cannot be read`);
}, 20_000);
