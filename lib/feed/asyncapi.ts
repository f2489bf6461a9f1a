/**
 * The change feed's AsyncAPI 3 document (GET /asyncapi.json, docs/followers.md): the JetStream subjects, the broker's events and
 * GET /changes, each carrying the changes of one kind of record, whose schema the gateway's OpenAPI document gives too.
 */
import type { JsonSchema } from "../http/json-schema";
import { CHANGE_TYPES, FEED_SERVICES, type ChangeKind } from "./changes";

export interface AsyncApiSources {
	version: string;
	/** Each kind's record as the services answer it, and an example of one. */
	records: Record<ChangeKind, { schema: JsonSchema; example: { id: string } }>;
}

const title = (kind: string) => kind[0].toUpperCase() + kind.slice(1);

/** A change of `kind`: its envelope, and the record after it (`{ id }` alone on removal). */
function changeSchema(kind: ChangeKind): JsonSchema {
	return {
		type: "object",
		required: ["id", "kind", "type", "seq", "at", "requestId", "record"],
		properties: {
			id: { type: "string", description: "The change's own id (a ULID), unique for ever: a duplicate has the same." },
			kind: { type: "string", const: kind },
			type: { type: "string", enum: CHANGE_TYPES },
			seq: { type: "integer", minimum: 1, description: `Its place in the ${kind} feed, in the order the writes were stored.` },
			at: { type: "string", format: "date-time", description: "When it was written." },
			requestId: { type: ["string", "null"], description: "The request that made it (X-Request-ID)." },
			subject: { type: "string", description: "Who made it, when the request was signed in." },
			record: {
				description: "The record after the change, references as ids; `{ id }` alone on removal.",
				oneOf: [
					{ $ref: `#/components/schemas/${title(kind)}` },
					{ type: "object", required: ["id"], properties: { id: { type: "string" } }, additionalProperties: false },
				],
			},
		},
	};
}

/** The document; `records` give the schemas of the records the changes carry. */
export function asyncApiDocument({ version, records }: AsyncApiSources): JsonSchema {
	const kinds = Object.keys(FEED_SERVICES) as ChangeKind[];
	const message = (kind: ChangeKind) => ({ $ref: `#/components/messages/${kind}Change` });
	const typeParameter = { type: { enum: CHANGE_TYPES, description: "created, updated or removed" } };
	const channels: Record<string, JsonSchema> = {};
	const operations: Record<string, JsonSchema> = {};
	const receive = (name: string, summary: string) => {
		operations[`receive${title(name)}`] = { action: "receive", channel: { $ref: `#/channels/${name}` }, summary };
	};
	for (const kind of kinds) {
		const service = FEED_SERVICES[kind];
		channels[`${kind}Stream`] = {
			address: `catalogue.changes.${kind}.{type}`,
			title: `The ${kind} changes in JetStream`,
			description:
				`Subjects of the stream CATALOGUE_CHANGES, in a cluster: each change once (its id is the de-duplication id), in ${kind} order; ` +
				"`reset` after a restored backup, before the changes that follow it. A cluster with a NAMESPACE adds `.<namespace>` after the type.",
			parameters: { type: { enum: [...CHANGE_TYPES, "reset"], description: "created, updated or removed; reset after a restore" } },
			servers: [{ $ref: "#/servers/cluster" }],
			messages: { [`${kind}Change`]: message(kind), streamReset: { $ref: "#/components/messages/streamReset" } },
		};
		receive(`${kind}Stream`, `Follow the ${kind} changes as a JetStream consumer (durable: acknowledged, resumed, shared).`);
		channels[`${service}Events`] = {
			address: `${service}.{type}`,
			title: `The ${service} service's events`,
			description: "moleculer events broadcast once a change is stored: at most once; read the feed itself to miss none.",
			parameters: typeParameter,
			messages: { [`${kind}Change`]: message(kind) },
		};
		receive(`${service}Events`, `Hear of the ${kind} changes as moleculer events.`);
	}
	channels.changes = {
		address: "/changes",
		title: "GET /changes",
		description:
			"Server-Sent Events through the gateway: each change a `message` event whose id is the position to resume from (Last-Event-ID).",
		servers: [{ $ref: "#/servers/gateway" }],
		messages: {
			...Object.fromEntries(kinds.map(kind => [`${kind}Change`, message(kind)])),
			ready: { $ref: "#/components/messages/ready" },
			reset: { $ref: "#/components/messages/reset" },
		},
	};
	receive("changes", "Follow every change from a browser.");
	return {
		asyncapi: "3.0.0",
		info: {
			title: "Game catalogue: the change feed",
			version,
			description:
				"Every created, updated and removed category, author and game, in the order of each kind's writes (docs/followers.md).",
		},
		defaultContentType: "application/json",
		servers: {
			cluster: { host: "nats:4222", protocol: "nats", description: "The cluster's NATS, with JetStream." },
			gateway: { host: "localhost:3000", protocol: "http", description: "Any gateway of the catalogue." },
		},
		channels,
		operations,
		components: {
			schemas: Object.fromEntries(kinds.map(kind => [title(kind), records[kind].schema])),
			messages: {
				...Object.fromEntries(
					kinds.map(kind => [
						`${kind}Change`,
						{
							name: `${kind}Change`,
							title: `A ${kind} created, updated or removed`,
							payload: changeSchema(kind),
							examples: [
								{
									payload: {
										id: "01JDQ5W4C8K8YV1J4T8Q4N0Z3M",
										kind,
										type: "created",
										seq: 1,
										at: "2026-11-26T16:00:00.000Z",
										requestId: "b5cbeb1b-2f5e-4c5c-9a55-1f1f3b8f6a11",
										record: records[kind].example,
									},
								},
							],
						},
					]),
				),
				ready: {
					name: "ready",
					title: "Caught up (the `ready` event)",
					payload: { type: "object", required: ["position"], properties: { position: { type: "string" } } },
				},
				streamReset: {
					name: "streamReset",
					title: "Start again from a full read: a restored backup undid the changes after it",
					payload: {
						type: "object",
						required: ["id", "kind", "type", "after", "at", "msg"],
						properties: {
							id: {
								type: "string",
								description: "`<kind>-reset-<after>`: the same for the same restore, a duplicate has the same.",
							},
							kind: { type: "string", enum: kinds },
							type: { type: "string", const: "reset" },
							after: { type: "integer", description: "The kind's changes after it are numbered from after + 1." },
							at: { type: "string", format: "date-time", description: "When it was published." },
							msg: { type: "string" },
						},
					},
				},
				reset: {
					name: "reset",
					title: "Start again from a full read (the `reset` event)",
					payload: {
						type: "object",
						required: ["msg", "kind"],
						properties: {
							msg: { type: "string" },
							kind: { type: "string", enum: kinds, description: "The kind whose changes were lost." },
						},
					},
				},
			},
		},
	};
}
