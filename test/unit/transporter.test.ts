import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConfigError } from "../../lib/config/config";
import type { ServiceBroker } from "moleculer";
import { checkUserOfKind, natsFiles, natsOptions, natsTransporter } from "../../lib/config/transporter";

const dir = mkdtempSync(path.join(tmpdir(), "catalogue-transporter-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
	writeFileSync(path.join(dir, name), text);
	return path.join(dir, name);
};

describe("natsTransporter", () => {
	test("asks nats.js for no stack trace per request or JetStream publish", () => {
		const { options } = natsTransporter("nats://nats:4222", null) as unknown as { options: { noAsyncTraces?: boolean } };
		expect(options.noAsyncTraces).toBe(true);
	});

	test("with NATS_ACCESS=on, a node logs in as its kind's user: several services, or another kind's user, stop the start", () => {
		const broker = (nodeID: string, transporter: string) =>
			({ nodeID, options: { transporter: natsTransporter(transporter, nodeID.split(".")[0]) } }) as unknown as ServiceBroker;
		expect(() => checkUserOfKind(broker("games.host-1", "nats://games:pw@nats:4222"))).not.toThrow();
		expect(() => checkUserOfKind(broker("transfer.host-1", "nats://transfer:pw@nats:4222"))).not.toThrow();
		expect(() => checkUserOfKind(broker("games.host-1", "nats://nats:4222"))).not.toThrow();
		expect(() => checkUserOfKind(broker("games.host-1", "nats://api:pw@nats:4222"))).toThrow(
			"NATS_ACCESS=on: a games node logs in as the NATS user games, not api: correct TRANSPORTER's user",
		);
		expect(() => checkUserOfKind(broker("api+authors+categories+games.host-1", "nats://api:pw@nats:4222"))).toThrow(
			"NATS_ACCESS=on gives each kind of node a NATS user of its own, and none runs api, authors, categories, games together: give each node one service (SERVICES=games)",
		);
	});
});

describe("natsOptions", () => {
	test.each([
		["no credentials", "nats://nats:4222", { servers: ["nats:4222"] }],
		[
			"user and password, percent-decoded",
			"nats://catalogue:p%40ss%2Fw0rd@nats:4222",
			{ servers: ["nats:4222"], user: "catalogue", pass: "p@ss/w0rd" },
		],
		["a token: a user with no password", "nats://s3cr3t@nats:4222", { servers: ["nats:4222"], token: "s3cr3t" }],
		["several servers", "nats://u:p@n1:4222, nats://u:p@n2:4222", { servers: ["n1:4222", "n2:4222"], user: "u", pass: "p" }],
		["tls:// asks for TLS", "tls://nats:4222", { servers: ["nats:4222"], tls: {} }],
	])("%s", (_case, transporter, expected) => {
		expect(natsOptions(transporter, {})).toEqual(expected);
	});

	test("the TLS files are read into the options; an nkey seed becomes an authenticator", () => {
		const seed = file("user.nk", "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY\n");
		const options = natsOptions("nats://nats:4222", {
			ca: file("ca.pem", "CA"),
			cert: file("cert.pem", "CERT"),
			key: file("key.pem", "KEY"),
			nkeySeed: seed,
		});
		expect(options.tls).toEqual({ ca: "CA", cert: "CERT", key: "KEY" });
		expect(typeof options.authenticator).toBe("function");
	});

	test.each([
		[
			"a file that is not there, named by its variable",
			{ ca: path.join(dir, "nowhere.pem") },
			/^NATS_CA names .*nowhere\.pem, which cannot be read/,
		],
		["a certificate without its key", { cert: file("only-cert.pem", "CERT") }, /NATS_CERT and NATS_KEY go together/],
		[
			"two ways to log in",
			{ creds: file("a.creds", "x"), nkeySeed: file("b.nk", "y") },
			/NATS_CREDS and NATS_NKEY_SEED are two ways to log in/,
		],
		[
			"an nkey seed file that holds no seed (it failed as NATS being away, after START_TIMEOUT)",
			{ nkeySeed: file("empty.nk", "not a seed\n") },
			/^NATS_NKEY_SEED names .*empty\.nk, which holds no nkey seed \(a line SU\.\.\. as `nk -gen user` writes it\)$/,
		],
	])("refuses %s", (_case, files, message) => {
		expect(() => natsOptions("nats://nats:4222", files)).toThrow(ConfigError);
		expect(() => natsOptions("nats://nats:4222", files)).toThrow(message);
	});

	test("TRANSPORTER that is not a URL is refused with what it must be", () => {
		expect(() => natsOptions("nats", {})).toThrow(/TRANSPORTER must be a NATS URL/);
		// Another scheme, and a password whose % is not an escape (a stack trace from decodeURIComponent before): one line each.
		expect(() => natsOptions("redis://cache:6379", {})).toThrow(
			'TRANSPORTER must be a NATS URL, such as nats://user:password@nats:4222, or several separated by commas; got "redis://cache:6379"',
		);
		expect(() => natsOptions("nats://cat:50%off@nats:4222", {})).toThrow(
			'TRANSPORTER must be a NATS URL, such as nats://user:password@nats:4222, or several separated by commas (a user or password percent-encoded: a % is written %25); got "nats://cat:***@nats:4222"',
		);
	});
});

test("natsFiles: the NATS_* variables that are set", () => {
	expect(natsFiles({ NATS_CA: "/ca.pem", NATS_CERT: "", NATS_NKEY_SEED: "/u.nk" })).toEqual({ ca: "/ca.pem", nkeySeed: "/u.nk" });
});
