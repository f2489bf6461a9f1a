import { IdentityProvider, signingKey } from "../support/identity-provider";
import { startProcess, startNode, waitFor, type RunningCatalogue } from "../support/process";

// Sign-in as `npm start` runs it: the AUTH_* variables read at start, the gateway's checks, and
// who changed what in the JSON log (the gateway's access line and the data service's own line).

const EDITOR = { realm_access: { roles: ["catalogue-editor"] } };

let provider: IdentityProvider;
let catalogue: RunningCatalogue;

beforeAll(async () => {
	provider = await IdentityProvider.start([await signingKey("RS256")]);
	catalogue = await startProcess({
		STORAGE: "memory",
		LOGLEVEL: "info",
		LOG_FORMAT: "json",
		AUTH_ISSUER: provider.issuer,
		AUTH_AUDIENCE: provider.audience,
		AUTH_ROLES_CLAIM: "realm_access.roles",
	});
}, 30_000);
afterAll(async () => {
	await catalogue?.stop();
	await provider?.stop();
});

/** The JSON lines the node printed. */
const lines = () =>
	catalogue
		.output()
		.split("\n")
		.filter(line => line.startsWith("{"))
		.map(line => JSON.parse(line) as Record<string, unknown>);

test("writes need the provider's token with the write role, and the log says who deleted a category", async () => {
	const { api } = catalogue;
	expect((await api.put("/category", { name: "Anonymous" })).status).toBe(401);
	const token = await provider.token({ subject: "alice", claims: EDITOR });
	const auth = { Authorization: `Bearer ${token}`, "X-Request-ID": "alice-deletes" };
	const created = await api.send("PUT", "/category", { name: "Eurogames" }, undefined, { Authorization: `Bearer ${token}` });
	expect(created.status).toBe(200);
	const { id } = created.body.category;
	expect((await api.send("DELETE", `/category/${id}`, undefined, undefined, auth)).status).toBe(200);
	await waitFor(
		"both lines of the delete are logged",
		async () => lines().filter(line => line.requestId === "alice-deletes").length >= 2,
		[catalogue],
	);
	expect(lines().filter(line => line.requestId === "alice-deletes")).toEqual(
		expect.arrayContaining([
			expect.objectContaining({ mod: "categories", msg: "categories.remove by alice", user: "alice", id }),
			expect.objectContaining({ mod: "api", method: "DELETE", status: 200, user: "alice" }),
		]),
	);
	// The token itself is never logged.
	expect(catalogue.output()).not.toContain(token);
});

test("AUTH_ISSUER without AUTH_AUDIENCE ends the node at once with the reason", async () => {
	const node = startNode({ STORAGE: "memory", PORT: "0", AUTH_ISSUER: provider.issuer });
	expect(await node.exited).toBe(1);
	expect(node.output()).toContain("FATAL CONFIG: AUTH_ISSUER needs AUTH_AUDIENCE");
});
