import { readFileSync } from "node:fs";
import { Transporters, type BrokerOptions, type ServiceBroker } from "moleculer";
import { credsAuthenticator, nkeyAuthenticator, type Authenticator, type NatsConnection } from "nats";
import { inboxPrefix, NODE_KINDS } from "./broker-access";
import { hideCredentials } from "./uris";
import { ConfigError } from "./config";

/**
 * The files of NATS's own authentication and TLS, by the variables that name them. Each is read
 * once, at start; a missing or unreadable one stops the node with the variable's name.
 */
export interface NatsFiles {
	/** `NATS_CREDS`: a `.creds` file (a user JWT and its nkey seed, for an operator-mode server). */
	creds?: string;
	/** `NATS_NKEY_SEED`: a file holding a user's nkey seed (`SU...`). */
	nkeySeed?: string;
	/** `NATS_CA`: the CA that signed the server's certificate (PEM). */
	ca?: string;
	/** `NATS_CERT`, `NATS_KEY`: this node's client certificate and its key (PEM), for a server that verifies clients. */
	cert?: string;
	key?: string;
}

/** The variables of `NatsFiles`, for messages. */
const VARIABLES: Record<keyof NatsFiles, string> = {
	creds: "NATS_CREDS",
	nkeySeed: "NATS_NKEY_SEED",
	ca: "NATS_CA",
	cert: "NATS_CERT",
	key: "NATS_KEY",
};

/** The NATS_* files of the environment that are set. */
export function natsFiles(env: NodeJS.ProcessEnv = process.env): NatsFiles {
	const entries = Object.entries(VARIABLES).map(([field, variable]) => [field, env[variable] || undefined] as const);
	return Object.fromEntries(entries.filter(([, file]) => file !== undefined));
}

function read(files: NatsFiles, field: keyof NatsFiles): Buffer | undefined {
	const file = files[field];
	if (file === undefined) return undefined;
	try {
		return readFileSync(file);
	} catch (err) {
		throw new ConfigError(`${VARIABLES[field]} names ${file}, which cannot be read: ${(err as Error).message}`);
	}
}

/**
 * The authenticator of NATS_NKEY_SEED's `file`, tried once on a nonce of its own: a file without a seed would fail every login as
 * NATS being away.
 */
function seedAuthenticator(text: Buffer, file: string): Authenticator {
	const authenticator = nkeyAuthenticator(new TextEncoder().encode(text.toString("utf8").trim()));
	try {
		authenticator("catalogue");
	} catch {
		throw new ConfigError(`NATS_NKEY_SEED names ${file}, which holds no nkey seed (a line SU... as \`nk -gen user\` writes it)`);
	}
	return authenticator;
}

/** What the NATS client is given: its servers, and the credentials and TLS the configuration holds. */
export interface NatsOptions {
	servers: string[];
	user?: string;
	pass?: string;
	token?: string;
	authenticator?: Authenticator;
	tls?: { ca?: string; cert?: string; key?: string };
}

/**
 * The NATS client's options for `TRANSPORTER` (one or more URLs) and the NATS_* files: `user:password` is a user and password, a lone
 * `user@` a token, both percent-decoded; `tls://` or any TLS file asks for TLS. moleculer's own reading would send a token as a user.
 */
export function natsOptions(transporter: string, files: NatsFiles): NatsOptions {
	const urls = transporter.split(",").map(url => url.trim());
	const options: NatsOptions = { servers: [] };
	let tls = false;
	for (const text of urls) {
		const refused = (why = "") =>
			new ConfigError(
				`TRANSPORTER must be a NATS URL, such as nats://user:password@nats:4222, or several separated by commas${why}; got "${hideCredentials(transporter)}"`,
			);
		let url: URL;
		let user: string;
		let password: string;
		try {
			url = new URL(text);
			user = decodeURIComponent(url.username);
			password = decodeURIComponent(url.password);
		} catch {
			throw refused(" (a user or password percent-encoded: a % is written %25)");
		}
		if (url.protocol !== "nats:" && url.protocol !== "tls:") throw refused();
		tls ||= url.protocol === "tls:";
		if (password) Object.assign(options, { user, pass: password });
		else if (user) options.token = user;
		options.servers.push(url.host);
	}
	const creds = read(files, "creds");
	const seed = read(files, "nkeySeed");
	if (creds && seed) throw new ConfigError("NATS_CREDS and NATS_NKEY_SEED are two ways to log in: set one");
	if (creds) options.authenticator = credsAuthenticator(new Uint8Array(creds));
	if (seed) options.authenticator = seedAuthenticator(seed, files.nkeySeed!);
	const [ca, cert, key] = (["ca", "cert", "key"] as const).map(field => read(files, field)?.toString("utf8"));
	if ((cert === undefined) !== (key === undefined)) throw new ConfigError("NATS_CERT and NATS_KEY go together: set both or neither");
	if (tls || ca || cert) options.tls = { ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }) };
	return options;
}

type Packet = Parameters<InstanceType<typeof Transporters.NATS>["publish"]>[0];

/**
 * moleculer's NATS transporter, whose subscriptions to its actions' subjects (with `disableBalancer`: NATS_ACCESS=on) are there before
 * anyone hears of the actions, and renewed without a gap. NATS drops a call sent to a subject nobody subscribes to, and moleculer
 * settles such a call only at its timeout (a 504 after REQUEST_TIMEOUT). moleculer subscribes when the node announces its services,
 * after a debounce, while its answers to other nodes' discovery announce them at once; and it renews them by unsubscribing all,
 * waiting for the server, and subscribing again. Here an announcement waits for the subscriptions of what it announces, and a
 * renewal makes the new ones first and drains the old ones (their messages delivered, then unsubscribed) once the others have heard
 * of the change; a call reaches one member of an action's queue group.
 */
class GaplessNats extends Transporters.NATS {
	/** The `seq` of the node's info whose services the subscriptions are of. */
	private subscribedSeq = -1;

	/** Nothing to wait for: the renewal below drains what it replaces itself, so the new subscriptions go out at once. */
	override unsubscribeFromBalancedCommands(): Promise<void> {
		return Promise.resolve();
	}

	override makeBalancedSubscriptions(): Promise<void> {
		this.subscribedSeq = this.broker.getLocalNodeInfo().seq;
		const replaced = this.subscriptions;
		this.subscriptions = [];
		// moleculer's debounced announcement of the node's services does not catch a failure here, which would end the node: none
		// leaves. A round trip the connection loses fails, and nothing is lost: on reconnecting, the client subscribes again before
		// sending the rest. A connection closed for good (NATS refused the node's login twice) takes no subscription: the node is not
		// ready (middlewares/readiness.middleware.ts), and says why.
		return super
			.makeBalancedSubscriptions()
			.then(() => (this.client as NatsConnection).flush().catch(() => undefined))
			.then(() => {
				// The old ones go once the others have heard the announcement that follows, as moleculer's stop waits for them to
				// (registry.stopDelay): until then what the node no longer takes still reaches it, and it refuses it at once.
				const wait = this.broker.options.registry?.stopDelay ?? 0;
				setTimeout(() => replaced.forEach(subscription => void subscription.drain().catch(() => undefined)), wait).unref();
			})
			.catch((err: Error) => this.logger.warn("The node's actions are not subscribed to on NATS:", err.message));
	}

	/**
	 * moleculer's callbacks read the message of every event of a subscription: one the server refuses (its user may not read that
	 * subject) comes as an error without a message, whose TypeError stopped the connection's reader while the node said it was ready,
	 * and no SIGTERM could end it then. A refusal of one of moleculer's own subjects ends the node with one line instead.
	 */
	override onConnected(wasReconnect?: boolean): Promise<void> {
		const client = this.client as NatsConnection;
		const subscribe = client.subscribe.bind(client);
		client.subscribe = (subject, options) => {
			const callback = options?.callback;
			if (!callback || !subject.startsWith(this.prefix)) return subscribe(subject, options);
			return subscribe(subject, { ...options, callback: (err, msg) => (err ? this.refused(subject, err) : callback(err, msg)) });
		};
		return super.onConnected(wasReconnect);
	}

	private refused(subject: string, err: Error): void {
		this.logger.fatal(
			`NATS refused this node the subject ${subject} (${err.message}): its user may not do what this kind of node does. ` +
				"Check NATS_ACCESS, TRANSPORTER's user and the server's rules (docs/security.md).",
		);
		process.exit(1);
	}

	override publish(packet: Packet): Promise<void> {
		const info = packet.type === "INFO" && (packet.payload as { seq?: number }).seq;
		if (this.broker.options.disableBalancer && typeof info === "number" && info !== this.subscribedSeq)
			return this.makeBalancedSubscriptions().then(() => super.publish(packet));
		return super.publish(packet);
	}
}

/** Its name among moleculer's transporters: every broker given it makes an instance of its own, as with moleculer's own names. */
const GAPLESS_NATS = "GaplessNATS";
Transporters.register(GAPLESS_NATS, GaplessNats as unknown as Parameters<typeof Transporters.register>[1]);

/**
 * The NATS transporter for `transporter`; as a node of `kind` on a NATS with access rules, the replies to its own NATS requests
 * come under its kind's prefix (docs/security.md, "The broker").
 */
export function natsTransporter(transporter: string, kind: string | null): NonNullable<BrokerOptions["transporter"]> {
	const options: NatsOptions & { inboxPrefix?: string; noAsyncTraces: boolean } = {
		...natsOptions(transporter, natsFiles()),
		...(kind && { inboxPrefix: inboxPrefix(kind) }),
		// Otherwise nats.js makes a stack trace for every request and JetStream publish, in case it fails: one per change of the
		// feed. The relay reports a failed publish by its message (mixins/change-relay.mixin.ts), which the trace does not change.
		noAsyncTraces: true,
	};
	// moleculer's types name only its own transporters; `register` above made this name one of them.
	return { type: GAPLESS_NATS, options } as unknown as NonNullable<BrokerOptions["transporter"]>;
}

/**
 * With NATS_ACCESS=on a node logs in as the NATS user of its kind (the first part of its ID), which may do only what that kind does:
 * a node of no kind (several services) or logged in as another would have its subscriptions refused by the server, one by one,
 * while it says it is ready. A user from NATS_CREDS or NATS_NKEY_SEED is the server's to check.
 */
export function checkUserOfKind(broker: ServiceBroker): void {
	const kind = broker.nodeID.split(".")[0];
	const user = (broker.options.transporter as { options?: NatsOptions } | null)?.options?.user;
	if (!(NODE_KINDS as readonly string[]).includes(kind))
		throw new ConfigError(
			`NATS_ACCESS=on gives each kind of node a NATS user of its own, and none runs ${kind.replaceAll("+", ", ")} together: give each node one service (SERVICES=games)`,
		);
	if (user !== undefined && user !== kind)
		throw new ConfigError(`NATS_ACCESS=on: a ${kind} node logs in as the NATS user ${kind}, not ${user}: correct TRANSPORTER's user`);
}

/** The nats.js connection under moleculer's NATS transporter, when that is the transporter in use. */
export function natsConnection(broker: ServiceBroker): NatsConnection | undefined {
	const client = (broker.transit?.tx as { client?: Partial<NatsConnection> } | undefined)?.client;
	return typeof client?.rtt === "function" ? (client as NatsConnection) : undefined;
}
