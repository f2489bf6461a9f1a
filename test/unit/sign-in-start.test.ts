import type { Logger } from "moleculer";
import { texts } from "../../lib/catalogue/errors";
import type { SignIn } from "../../lib/config/config";
import { providerKeys, type ProviderTiming } from "../../lib/sign-in/provider-keys";
import { checkSignInAtStart, type SignInCheck } from "../../lib/sign-in/start-check";
import { startCatalogue, type Catalogue } from "../support/catalogue";
import { IdentityProvider, signingKey } from "../support/identity-provider";
import { waitFor } from "../support/process";

// Sign-in checked at start (lib/sign-in/start-check.ts, docs/security.md): the provider's configuration and keys are read when the
// gateway starts, each mistake is one line naming the variable and what the provider gave, and the gateway is not ready until
// the keys are fetched. The stand-in provider of test/support plays each case.

const TIMING: ProviderTiming = { refetchMs: 300, kidCooldownMs: 300, refreshMs: 60_000, maxAgeMs: 60_000, timeoutMs: 1000 };

let provider: IdentityProvider;
beforeAll(async () => {
	provider = await IdentityProvider.start([await signingKey("RS256")]);
});
afterAll(() => provider.stop());
afterEach(() => {
	provider.reachable = true;
	provider.configured = {};
});

const signInTo = (more: Partial<SignIn> = {}): SignIn => provider.signIn(more);

/** The check at start of `signIn`, its log lines as `level: text`. */
function started(signIn: SignIn): { check: SignInCheck; lines: string[] } {
	const lines: string[] = [];
	const log = (level: string) => (text: string) => lines.push(`${level}: ${text}`);
	const logger = { info: log("info"), warn: log("warn"), error: log("error") } as unknown as Logger;
	const keys = providerKeys(signIn, TIMING);
	return { check: checkSignInAtStart(() => keys.check(), signIn, logger, TIMING.refetchMs), lines };
}

test("an issuer that differs from the provider's by a trailing slash: one error line at start that names AUTH_ISSUER and the provider's value", async () => {
	const { check, lines } = started(signInTo({ issuer: `${provider.issuer}/` }));
	await waitFor("the first line", async () => lines.length > 0);
	check.stop();
	expect(lines).toEqual([
		`error: Sign-in is misconfigured: AUTH_ISSUER is "${provider.issuer}/", but ${provider.issuer}/.well-known/openid-configuration ` +
			`names the issuer "${provider.issuer}": set AUTH_ISSUER to exactly that (checked again in 0.3 s)`,
	]);
	expect(check.fetched()).toBe(false);
});

test("a configuration without jwks_uri: one error line naming AUTH_JWKS_URL", async () => {
	provider.configured = { jwks_uri: undefined };
	const { check, lines } = started(signInTo());
	await waitFor("the first line", async () => lines.length > 0);
	check.stop();
	expect(lines[0]).toMatch(
		/^error: Sign-in is misconfigured: .*openid-configuration names no key set \(jwks_uri: undefined\): set AUTH_JWKS_URL/,
	);
});

test("a provider down at start: a warning, not fatal; asked again with backoff, and the keys are fetched once it answers", async () => {
	provider.reachable = false;
	const { check, lines } = started(signInTo());
	await waitFor("the first line", async () => lines.length > 0);
	expect(lines[0]).toMatch(new RegExp(`^warn: Sign-in: the identity provider of AUTH_ISSUER=${provider.issuer} does not answer yet: `));
	expect(check.fetched()).toBe(false);
	provider.reachable = true;
	await waitFor("the keys fetched", async () => check.fetched(), [], 5000);
	check.stop();
	expect(lines.at(-1)).toBe(`info: Sign-in: the keys of ${provider.issuer} are fetched`);
	// Asked again after 0.3 s, 0.6 s, ...: a few lines, not one per attempt of a busy loop.
	expect(lines.length).toBeLessThan(8);
});

describe("the gateway", () => {
	let catalogue: Catalogue;
	afterEach(() => catalogue?.stop());

	test("misconfigured: /health/ready waits for `sign-in`, and a write with a token is 503 saying the configuration is at fault", async () => {
		catalogue = await startCatalogue({
			topology: "one-broker",
			settings: { signIn: signInTo({ issuer: `${provider.issuer}/` }), providerTiming: TIMING, apiToken: null },
		});
		const ready = await catalogue.api.get("/health/ready");
		expect(ready.status).toBe(503);
		expect(ready.body.waitingFor).toEqual(["sign-in"]);
		const token = await provider.token({ issuer: `${provider.issuer}/`, claims: { roles: ["catalogue-editor"] } });
		const write = await catalogue.api.send("PUT", "/category", { name: "Eurogames" }, undefined, { Authorization: `Bearer ${token}` });
		expect([write.status, write.body]).toEqual([503, { msg: texts.signInMisconfigured }]);
	});

	test("set up right: ready once the keys are fetched, without any token asking", async () => {
		const before = provider.requests.jwks;
		catalogue = await startCatalogue({
			topology: "one-broker",
			settings: { signIn: signInTo(), providerTiming: TIMING, apiToken: null },
		});
		await waitFor("ready", async () => (await catalogue.api.get("/health/ready")).status === 200, [], 5000);
		expect(provider.requests.jwks - before).toBe(1);
	});
});
