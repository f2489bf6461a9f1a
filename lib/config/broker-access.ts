/**
 * Who may do what on the cluster's NATS (docs/security.md, "The broker"): each kind of node has a NATS user of its own, and the
 * subjects it may publish and subscribe to let it call only the actions it needs, answer only its callers, and read only its own
 * requests and replies. moleculer's NATS transporter, with `disableBalancer`, sends a call to `<prefix>.REQB.<action>`, and every
 * node's own subjects end in its node ID, `<kind>.<host>-<pid>`, so NATS can allow or deny per action and per kind of node.
 */
import { hostname } from "node:os";
import { KINDS } from "../catalogue/kinds";
import { callsOf, DATA_SERVICE_NAMES, needs, type DataServiceName } from "../catalogue/services";
import { CHANGES_STREAM } from "../feed/jetstream";

/**
 * The kinds of node: one per service, the export/import tool (`npm run export`, `import`), the example follower of the change feed
 * (examples/game-titles.service.ts: another team's service would have a kind of its own here) and the REPL.
 */
export const NODE_KINDS = ["api", "authors", "categories", "games", "transfer", "follower", "repl"] as const;
export type NodeKind = (typeof NODE_KINDS)[number];

/** The example follower's service, and what it calls: the feed, and the whole list when it starts again from a full read. */
const FOLLOWER = { service: "gameTitles", calls: ["games.changes", "games.list"] };

/** Any moleculer prefix: `MOL`, or `MOL-<NAMESPACE>`; the rules are the same in every namespace of a server. */
const ANY = "*";

const isData = (kind: string): kind is DataServiceName => (DATA_SERVICE_NAMES as readonly string[]).includes(kind);

/** The actions a kind of node calls. The gateway's: those its routes map (`routeActions`), and each data service's readiness and feed. */
export function callsOfKind(kind: NodeKind, routeActions: readonly string[]): readonly string[] {
	if (kind === "api")
		return [
			...new Set([
				...routeActions.filter(action => !action.startsWith("api.")),
				...needs("api").flatMap(service => [`${service}.ready`, `${service}.changes`]),
			]),
		];
	// Its calls of its own actions (its readiness, an import's updates) stay in the node (middlewares/calls-by-action.middleware.ts).
	if (isData(kind))
		return [
			...callsOf(kind),
			...needs(kind)
				.filter(service => service !== kind)
				.map(service => `${service}.ready`),
		];
	if (kind === "transfer")
		return DATA_SERVICE_NAMES.flatMap(service => [`${service}.count`, `${service}.exportPage`, `${service}.importRecords`]);
	if (kind === "follower") return FOLLOWER.calls;
	// The operators' console calls what they ask for (moleculer-repl's `call`), on any node.
	return [">"];
}

/** The services a kind of node runs. */
function servesOf(kind: NodeKind): string[] {
	if (kind === "follower") return [FOLLOWER.service];
	return kind === "api" || isData(kind) ? [kind] : [];
}

/** The kinds of node that call any action of `kind`'s services: those it answers. */
function callersOf(kind: NodeKind, routeActions: readonly string[]): NodeKind[] {
	const served = servesOf(kind);
	const callsInto = (pattern: string) => pattern === ">" || served.some(service => pattern.startsWith(`${service}.`));
	return NODE_KINDS.filter(caller => callsOfKind(caller, routeActions).some(callsInto));
}

export interface Permissions {
	publish: string[];
	subscribe: string[];
}

/** What moleculer's transporter sends and reads for every node: discovery, node info, heartbeats, goodbyes, pongs. */
const everyNode = (kind: NodeKind): Permissions => ({
	publish: ["DISCOVER", "DISCOVER.*.*", "INFO", "INFO.*.*", "HEARTBEAT", "DISCONNECT", "PONG.*.*"].map(s => `${ANY}.${s}`),
	subscribe: [
		...["DISCOVER", "INFO", "HEARTBEAT", "DISCONNECT", "PING"].map(s => `${ANY}.${s}`),
		...["EVENT", "REQ", "RES", "DISCOVER", "INFO", "PING", "PONG"].map(s => `${ANY}.${s}.${kind}.*`),
		// `$node`'s actions, which every node subscribes to; only the REPL may call them.
		`${ANY}.REQB.$node.*`,
		// Balanced events (moleculer's `emit`), which the catalogue never sends; moleculer subscribes to one for each event a service
		// of the node handles, and a subscription NATS refuses closes the node's connection (moleculer reads the refusal as a message).
		`${ANY}.EVENTB.>`,
		// Replies to this node's own NATS requests (JetStream's), under its own inbox prefix (`inboxPrefix`).
		`${inboxPrefix(kind)}.>`,
	],
});

/** The change feed's JetStream subjects a data service's relay uses (lib/feed/jetstream.ts): its stream, its own kind's changes. */
function relay(service: DataServiceName): string[] {
	const kind = KINDS.find(each => each.service === service)!.kind;
	return [
		"$JS.API.INFO",
		...["INFO", "CREATE", "UPDATE"].map(operation => `$JS.API.STREAM.${operation}.${CHANGES_STREAM}`),
		`$JS.API.CONSUMER.LIST.${CHANGES_STREAM}`,
		`catalogue.changes.${kind}.*`,
		// In a NAMESPACE: its name after the type (lib/feed/jetstream.ts changeSubject).
		`catalogue.changes.${kind}.*.*`,
	];
}

/** The NATS permissions of a kind of node. */
export function permissionsOf(kind: NodeKind, routeActions: readonly string[]): Permissions {
	const { publish, subscribe } = everyNode(kind);
	const calls = callsOfKind(kind, routeActions);
	if (calls.includes(">")) publish.push(`${ANY}.REQB.>`, `${ANY}.REQ.*.*`, `${ANY}.PING`, `${ANY}.PING.*.*`);
	else publish.push(...calls.map(action => `${ANY}.REQB.${action}`));
	for (const service of servesOf(kind)) {
		subscribe.push(`${ANY}.REQB.${service}.*`);
		publish.push(...callersOf(kind, routeActions).map(caller => `${ANY}.RES.${caller}.*`));
	}
	// A data service tells every node of its changes and of its stale answers (broadcast: one message per node).
	if (isData(kind)) publish.push(`${ANY}.EVENT.*.*`, ...relay(kind));
	return { publish: [...new Set(publish)], subscribe: [...new Set(subscribe)] };
}

/** The prefix of this kind of node's own inboxes, so that no other kind may read their replies. */
export const inboxPrefix = (kind: string) => `_INBOX_${kind}`;

/** The variable holding a kind's NATS password in the environment of the server that runs nats-access.conf. */
export const passwordVariable = (kind: NodeKind) => `NATS_${kind.toUpperCase()}_PASSWORD`;

/**
 * The kind of a node that runs `services`: the service when it runs one. A node that runs several (the default SERVICES) is of its
 * own kind, named after them, for which no user is shipped: on a NATS with these rules each service runs as a node of its own.
 */
export const kindOfServices = (services: readonly string[]) => services.join("+");

/** A node's ID in a cluster: its kind, then its host and process, with no `.` inside them (a NATS subject's separator). */
export const nodeIdOf = (kind: string) => `${kind}.${hostname().replace(/[.\s*>]/g, "-")}-${process.pid}`;

/** A NATS user of the rules: a kind of node, its password as the server's configuration names it, what it may publish and subscribe to. */
export interface NatsUser {
	user: NodeKind;
	password: string;
	permissions: { publish: { allow: string[] }; subscribe: { allow: string[] } };
}

/** A user per kind, its password `password(variable)` of the variable that holds it in the server's environment. */
function natsUsers(routeActions: readonly string[], password: (variable: string) => string): NatsUser[] {
	return NODE_KINDS.map(kind => {
		const { publish, subscribe } = permissionsOf(kind, routeActions);
		return {
			user: kind,
			password: password(passwordVariable(kind)),
			permissions: { publish: { allow: publish }, subscribe: { allow: subscribe } },
		};
	});
}

/** The `authorization` block of nats-access.conf: a user per kind, its password from the server's environment, its permissions. */
export function natsAuthorization(routeActions: readonly string[]): string {
	const list = (subjects: string[]) => subjects.map(subject => `          "${subject}"`).join(",\n");
	const users = natsUsers(routeActions, variable => `$${variable}`).map(({ user, password, permissions }) =>
		[
			`    {`,
			`      user: ${user}, password: ${password}`,
			`      permissions: {`,
			`        publish: { allow: [\n${list(permissions.publish.allow)}\n        ] }`,
			`        subscribe: { allow: [\n${list(permissions.subscribe.allow)}\n        ] }`,
			`      }`,
			`    }`,
		].join("\n"),
	);
	return `authorization {\n  users: [\n${users.join(",\n")}\n  ]\n}\n`;
}

/** The same users for NATS's Helm chart (`config.merge.authorization`): `<< $VAR >>` is the chart's way to write a variable. */
export const helmAuthorization = (routeActions: readonly string[]) => ({
	users: natsUsers(routeActions, variable => `<< $${variable} >>`),
});

/** The table of who may call what, for docs/security.md. */
export function accessTable(routeActions: readonly string[]): string {
	const rows = NODE_KINDS.map(kind => {
		const calls = callsOfKind(kind, routeActions).map(action => (action === ">" ? "any action" : `\`${action}\``));
		const answers = servesOf(kind).length === 0 ? "nothing" : callersOf(kind, routeActions).join(", ");
		return `| ${kind} | \`${passwordVariable(kind)}\` | ${calls.join(", ")} | ${answers} |`;
	});
	return ["| Node | Password | May call | Answers |", "|---|---|---|---|", ...rows].join("\n");
}
