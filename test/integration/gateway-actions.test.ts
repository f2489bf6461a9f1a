import { Errors } from "moleculer";
import { startCatalogue, type Catalogue } from "../support/catalogue";

// Anything that reaches NATS can call the catalogue's actions; the gateway's own management of
// routes is not among them (docs/security.md).

let catalogue: Catalogue;
beforeAll(async () => (catalogue = await startCatalogue({ topology: "nats" })));
afterAll(() => catalogue?.stop());

/** A node of the cluster other than the gateway's. */
const otherNode = () => catalogue.brokers.find(broker => !broker.getLocalService("api"))!;

test.each([
	["api.addRoute", { route: { path: "/open", aliases: { "GET /authors": "authors.list" } } }],
	["api.removeRoute", { path: "/" }],
	["api.listAliases", {}],
])("%s cannot be called from another node", async (action, params) => {
	await expect(otherNode().call(action, params)).rejects.toBeInstanceOf(Errors.ServiceNotFoundError);
});

test("the gateway still manages its routes itself, and still serves them", async () => {
	const aliases = await catalogue.broker.call<{ path: string }[]>("api.listAliases");
	expect(aliases.map(alias => alias.path)).toContain("category/:id");
	expect((await catalogue.api.get("/category")).status).toBe(200);
	expect((await catalogue.api.get("/open/authors")).status).toBe(404);
});
