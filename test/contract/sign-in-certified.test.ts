import type { JWK } from "jose";
import { texts } from "../../lib/catalogue/errors";
import type { ProviderTiming } from "../../lib/sign-in/provider-keys";
import { startCatalogue, type Catalogue } from "../support/catalogue";
import { AUDIENCE, CertifiedProvider, providerKey } from "../support/certified-provider";
import { waitFor } from "../support/process";

// docs/security.md's sign-in cases against oidc-provider from npm, an OpenID Certified provider (test/support/oidc-provider.mjs):
// JWT access tokens (RFC 9068, `typ: at+jwt`) of the client-credentials grant with a resource indicator, signed ES256, the roles
// in `scope` (AUTH_ROLES_CLAIM=scope), and a rotation of its keys while the catalogue runs.

/** The keys fetched again every half second here (a minute by default), so a key the provider retires is forgotten quickly. */
const TIMING: ProviderTiming = { refetchMs: 1000, kidCooldownMs: 1000, refreshMs: 500, maxAgeMs: 60_000, timeoutMs: 2000 };

let provider: CertifiedProvider;
let catalogue: Catalogue;
let first: JWK;

beforeAll(async () => {
	first = await providerKey();
	provider = await CertifiedProvider.start([first]);
	catalogue = await startCatalogue({
		settings: {
			signIn: {
				issuer: provider.issuer,
				jwksUrl: null,
				audience: AUDIENCE,
				rolesClaim: "scope",
				writeRole: "catalogue-editor",
				reads: "public",
			},
			providerTiming: TIMING,
			apiToken: null,
		},
	});
}, 30_000);
afterAll(async () => {
	await catalogue?.stop();
	await provider?.stop();
});

const write = (token: string | null, name = "Certified") =>
	catalogue.api.send("PUT", "/category", { name }, undefined, token === null ? {} : { Authorization: `Bearer ${token}` });

test("the gateway is ready once it has read the provider's configuration and keys at start", async () => {
	await waitFor("ready", async () => (await catalogue.api.get("/health/ready")).status === 200, [], 10_000);
});

test("the editor client's token writes; the reader's is 403; another application's is 401; none is 401", async () => {
	const created = await write(await provider.token("editor"));
	expect(created.status).toBe(200);
	const reader = await write(await provider.token("reader"));
	expect([reader.status, reader.body.msg]).toEqual([403, texts.writeRoleRequired.replace("{role}", "catalogue-editor")]);
	const other = await write(await provider.token("editor", { forOther: true }));
	expect([other.status, other.body.msg]).toEqual([401, texts.tokenNotAccepted]);
	const none = await write(null);
	expect([none.status, none.body.msg]).toEqual([401, texts.signInRequired]);
});

test("a rotation while the catalogue runs: the new key's tokens write at once, the old key's until the provider retires it", async () => {
	const before = await provider.token("editor");
	const second = await providerKey();
	await provider.restart([second, first]);
	// The gateway's background fetch may have met the provider down for its restart: it is asked again refetchMs after a failure.
	await new Promise(resolve => setTimeout(resolve, TIMING.refetchMs + 100));
	const after = await provider.token("editor");
	expect(JSON.parse(Buffer.from(after.split(".")[0], "base64url").toString()).kid).toBe(second.kid);
	expect((await write(after, "After the rotation")).status).toBe(200);
	expect((await write(before, "Old key, still published")).status).toBe(200);
	await provider.restart([second]);
	await new Promise(resolve => setTimeout(resolve, TIMING.refetchMs + 100));
	await waitFor("the old key forgotten", async () => (await write(before, "Old key, retired")).status === 401, [], 10_000);
	expect((await write(after, "New key")).status).toBe(200);
});

test("the provider down: tokens of keys fetched before still verify", async () => {
	const token = await provider.token("editor");
	await provider.stop();
	expect((await write(token, "While the provider is down")).status).toBe(200);
});
