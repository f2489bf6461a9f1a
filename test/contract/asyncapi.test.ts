import Ajv from "ajv";
import { schemas as asyncApiSchemas } from "@asyncapi/specs";
import { asyncApi } from "../../services/api.docs";
import type { Change } from "../../lib/feed/changes";
import { resetMessage } from "../../lib/feed/jetstream";
import { startCatalogue, type Api, type Catalogue } from "../support/catalogue";

// GET /asyncapi.json (docs/followers.md): the change feed's AsyncAPI 3 document, valid against AsyncAPI's own schema, served by
// the gateway, and describing the changes the services really make.

let catalogue: Catalogue;
let api: Api;

beforeAll(async () => {
	catalogue = await startCatalogue();
	api = catalogue.api;
});
afterAll(() => catalogue.stop());

type Document = { components: { messages: Record<string, { payload: object }> } };

test("is valid against the AsyncAPI 3.0.0 schema", () => {
	// The bundled schema carries draft-07's own meta-schema among its definitions: Ajv's copy is left out.
	const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, meta: false, validateSchema: false });
	const validate = ajv.compile(asyncApiSchemas["3.0.0"]);
	expect(validate(asyncApi) ? [] : validate.errors).toEqual([]);
	// An operation AsyncAPI does not know is refused: the check has teeth.
	const wrong = JSON.parse(JSON.stringify(asyncApi)) as { operations: Record<string, { action: string }> };
	Object.values(wrong.operations)[0].action = "listen";
	expect(validate(wrong)).toBe(false);
});

test("is served at GET /asyncapi.json", async () => {
	expect(await api.get("/asyncapi.json")).toMatchObject({ status: 200, body: JSON.parse(JSON.stringify(asyncApi)) });
});

test("a created, updated and removed record of each kind fits its message's payload", async () => {
	const document = asyncApi as unknown as Document;
	const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
	ajv.addSchema({ ...document, $id: "https://catalogue.test/asyncapi.json" });
	const category = await api.category("Described");
	const author = await api.author("Described");
	const game = await api.game("Described", category, author);
	await api.put(`/game/${game.id}`, { title: "Described 2", age: 10, category, author });
	await api.delete(`/game/${game.id}`);
	const changes = (
		await Promise.all(
			["categories", "authors", "games"].map(service =>
				catalogue.broker.call<{ changes: Change[] }, { after: number }>(`${service}.changes`, { after: 0 }),
			),
		)
	).flatMap(page => page.changes);
	expect(new Set(changes.map(change => `${change.kind} ${change.type}`))).toEqual(
		new Set(["category created", "author created", "game created", "game updated", "game removed"]),
	);
	for (const change of changes) {
		const validate = ajv.getSchema(`https://catalogue.test/asyncapi.json#/components/messages/${change.kind}Change/payload`)!;
		expect([change, validate(change) ? [] : validate.errors]).toEqual([change, []]);
	}
	// A change whose record lacks a field does not fit: the check has teeth.
	const validate = ajv.getSchema("https://catalogue.test/asyncapi.json#/components/messages/gameChange/payload")!;
	expect(validate({ ...changes.find(change => change.kind === "game")!, record: { id: "x", title: "no age" } })).toBe(false);
});

test("the stream's reset after a restore fits its message's payload", () => {
	const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
	ajv.addSchema({ ...(asyncApi as object), $id: "https://catalogue.test/asyncapi.json" });
	const validate = ajv.getSchema("https://catalogue.test/asyncapi.json#/components/messages/streamReset/payload")!;
	const reset = resetMessage("game", 178_000_000_000_000);
	expect([reset, validate(reset) ? [] : validate.errors]).toEqual([reset, []]);
	expect(validate({ ...reset, after: "178" })).toBe(false);
});
