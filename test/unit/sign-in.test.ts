import { errors, jwtVerify } from "jose";
import { texts } from "../../lib/catalogue/errors";
import { ConfigError, readConfig, type SignIn } from "../../lib/config/config";
import { toFailure } from "../../lib/http/failures";
import { claimAt, rolesOf } from "../../lib/sign-in/claims";
import { providerKeys, ProviderUnreachable, SignInMisconfigured, type ProviderTiming } from "../../lib/sign-in/provider-keys";
import { ALGORITHMS, signInGate } from "../../lib/sign-in/sign-in";
import { IdentityProvider, signingKey } from "../support/identity-provider";

describe("roles in a token (AUTH_ROLES_CLAIM)", () => {
	test("Keycloak's realm roles: a dotted path", () => {
		const claims = { realm_access: { roles: ["catalogue-editor", "offline_access"] } };
		expect(rolesOf(claims, "realm_access.roles")).toEqual(["catalogue-editor", "offline_access"]);
		expect(rolesOf(claims, "roles")).toEqual([]);
	});

	test("Auth0's namespaced claim: a name with dots in it, found whole", () => {
		const claims = { "https://catalogue.example.com/roles": ["catalogue-editor"], https: { other: 1 } };
		expect(rolesOf(claims, "https://catalogue.example.com/roles")).toEqual(["catalogue-editor"]);
		expect(claimAt({ a: { "b.c": { d: "x" } } }, "a.b.c.d")).toBe("x");
	});

	test("a plain roles claim, or a space-separated string such as OAuth's scope", () => {
		expect(rolesOf({ roles: ["catalogue-editor"] }, "roles")).toEqual(["catalogue-editor"]);
		expect(rolesOf({ scope: "openid catalogue-editor  profile" }, "scope")).toEqual(["openid", "catalogue-editor", "profile"]);
	});

	test("anything else grants no role", () => {
		for (const claims of [{}, { roles: 1 }, { roles: { editor: true } }, { roles: [1, null, { a: 1 }] }, null, "roles"])
			expect(rolesOf(claims, "roles")).toEqual([]);
		expect(rolesOf({ roles: ["a", 2, "b"] }, "roles")).toEqual(["a", "b"]);
		expect(claimAt({ realm_access: "x" }, "realm_access.roles")).toBeUndefined();
	});
});

test("only asymmetric algorithms are allowed: no none, no HS* (a public key would become the shared secret)", () => {
	expect(ALGORITHMS.length).toBeGreaterThan(0);
	expect(ALGORITHMS.filter(alg => /^(HS|none$)/i.test(alg))).toEqual([]);
	expect(ALGORITHMS).toEqual(expect.arrayContaining(["RS256", "PS256", "ES256", "EdDSA"]));
});

describe("AUTH_* configuration", () => {
	const issuer = "https://id.example.com/realms/games";

	test("off without AUTH_ISSUER; defaults with it: roles, catalogue-editor, public reads", () => {
		expect(readConfig({}).signIn).toBeNull();
		expect(readConfig({ AUTH_ISSUER: issuer, AUTH_AUDIENCE: "game-catalogue" }).signIn).toEqual({
			issuer,
			jwksUrl: null,
			audience: "game-catalogue",
			rolesClaim: "roles",
			writeRole: "catalogue-editor",
			reads: "public",
		});
	});

	test("reads every variable", () => {
		const env = {
			AUTH_ISSUER: issuer,
			AUTH_JWKS_URL: "https://id.example.com/certs",
			AUTH_AUDIENCE: "catalogue",
			AUTH_ROLES_CLAIM: "realm_access.roles",
			AUTH_WRITE_ROLE: "editor",
			AUTH_READS: "user",
		};
		expect(readConfig(env).signIn).toEqual<SignIn>({
			issuer,
			jwksUrl: "https://id.example.com/certs",
			audience: "catalogue",
			rolesClaim: "realm_access.roles",
			writeRole: "editor",
			reads: "user",
		});
	});

	test.each([
		[{ AUTH_AUDIENCE: "x" }, "AUTH_AUDIENCE is only read with AUTH_ISSUER"],
		[{ AUTH_READS: "user" }, "AUTH_READS is only read with AUTH_ISSUER"],
		[{ AUTH_ISSUER: issuer }, "AUTH_ISSUER needs AUTH_AUDIENCE"],
		[{ AUTH_ISSUER: "id.example.com", AUTH_AUDIENCE: "x" }, "AUTH_ISSUER must be the issuer's URL"],
		[{ AUTH_ISSUER: issuer, AUTH_AUDIENCE: "x", AUTH_JWKS_URL: "ftp://x" }, "AUTH_JWKS_URL must be an http(s) URL"],
		[{ AUTH_ISSUER: issuer, AUTH_AUDIENCE: "x", AUTH_ROLES_CLAIM: "realm_access..roles" }, "AUTH_ROLES_CLAIM must be"],
		[{ AUTH_ISSUER: issuer, AUTH_AUDIENCE: "x", AUTH_READS: "everyone" }, "AUTH_READS must be one of public, user"],
		[
			{ NODE_ENV: "production", AUTH_ISSUER: "http://keycloak:8080/realms/games", AUTH_AUDIENCE: "x" },
			'AUTH_ISSUER must be an https URL when NODE_ENV=production (keys fetched over http could be replaced on the way); got "http://keycloak:8080/realms/games"',
		],
		[
			{ NODE_ENV: "production", AUTH_ISSUER: issuer, AUTH_AUDIENCE: "x", AUTH_JWKS_URL: "http://id.example.com/certs" },
			"AUTH_JWKS_URL must be an https URL when NODE_ENV=production",
		],
	])("%j is refused at start", (env, message) => {
		expect(() => readConfig(env)).toThrow(ConfigError);
		expect(() => readConfig(env)).toThrow(message);
	});

	test("in production a provider on this machine may be reached over http; elsewhere, outside production, too", () => {
		for (const url of ["http://127.0.0.1:8080/realms/games", "http://localhost:8080/realms/games", "http://[::1]:8080/realms/games"])
			expect(readConfig({ NODE_ENV: "production", AUTH_ISSUER: url, AUTH_AUDIENCE: "x" }).signIn?.issuer).toBe(url);
		expect(readConfig({ AUTH_ISSUER: "http://keycloak:8080/realms/games", AUTH_AUDIENCE: "x" }).signIn?.issuer).toBe(
			"http://keycloak:8080/realms/games",
		);
	});
});

describe("refusals as HTTP answers", () => {
	const gate = signInGate({
		apiToken: null,
		signIn: { issuer: "https://id.test", jwksUrl: null, audience: "a", rolesClaim: "roles", writeRole: "editor", reads: "public" },
	});

	test("no sender: 401 with a challenge and no error; a user without the write role: 403 insufficient_scope", () => {
		const refusal = (fn: () => void) => {
			try {
				fn();
			} catch (err) {
				return toFailure(err);
			}
			throw new Error("not refused");
		};
		expect(refusal(() => gate.admit(null, "user"))).toEqual({
			status: 401,
			body: { msg: texts.signInRequired },
			headers: { "WWW-Authenticate": 'Bearer realm="game-catalogue"' },
		});
		expect(refusal(() => gate.admit({ sub: "r", via: "identity-provider", mayWrite: false }, "writer"))).toEqual({
			status: 403,
			body: { msg: "Changing the catalogue needs the role 'editor', which this sign-in does not have" },
			headers: { "WWW-Authenticate": 'Bearer realm="game-catalogue", error="insufficient_scope"' },
		});
		expect(() => gate.admit({ sub: "r", via: "identity-provider", mayWrite: false }, "user")).not.toThrow();
		expect(() => gate.admit(null, "nothing")).not.toThrow();
	});

	test("the provider unreachable: 503 with Retry-After, whole seconds until it is asked again", async () => {
		const answer = await gate.signedIn("Basic abc", "writer").catch(toFailure);
		expect(answer).toMatchObject({ status: 401, body: { msg: texts.tokenNotAccepted } });
		const down = toFailure(
			Object.assign(new Error(texts.providerUnreachable), {
				type: "IDENTITY_PROVIDER_UNREACHABLE",
				code: 503,
				data: { retryAt: Date.now() + 4200 },
			}),
		);
		expect(down).toEqual({ status: 503, body: { msg: texts.providerUnreachable }, headers: { "Retry-After": "5" } });
	});
});

describe("the provider's keys (lib/sign-in/provider-keys.ts)", () => {
	let provider: IdentityProvider;
	beforeAll(async () => {
		provider = await IdentityProvider.start([await signingKey("RS256")]);
	});
	afterAll(() => provider.stop());
	const signIn = (): SignIn => ({
		issuer: provider.issuer,
		jwksUrl: null,
		audience: provider.audience,
		rolesClaim: "roles",
		writeRole: "e",
		reads: "public",
	});
	// One failure keeps the provider from being asked for a minute; an unknown key id waits 100 ms for the next fetch.
	const TIMING: ProviderTiming = { refetchMs: 60_000, kidCooldownMs: 100, refreshMs: 600_000, maxAgeMs: 60_000, timeoutMs: 2000 };
	const verify = (keys: ReturnType<typeof providerKeys>, token: string) =>
		jwtVerify(token, keys, { issuer: provider.issuer, audience: provider.audience });

	test("found through the issuer's openid-configuration, then fetched once for many tokens", async () => {
		const before = { ...provider.requests };
		const keys = providerKeys(signIn(), TIMING);
		const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => provider.token({ subject: `u${i}` })));
		await Promise.all(tokens.map(token => verify(keys, token)));
		expect(provider.requests.configuration - before.configuration).toBe(1);
		expect(provider.requests.jwks - before.jwks).toBe(1);
	});

	test("AUTH_JWKS_URL skips discovery", async () => {
		const before = { ...provider.requests };
		const keys = providerKeys({ ...signIn(), jwksUrl: `${provider.issuer}/protocol/openid-connect/certs` });
		await verify(keys, await provider.token());
		expect(provider.requests.configuration).toBe(before.configuration);
	});

	test("a configuration that names another issuer is not used: the mistake is ours, not the provider's", async () => {
		const keys = providerKeys({ ...signIn(), issuer: `${provider.issuer}/` });
		await expect(
			keys({ alg: "RS256", kid: provider.published[0].kid }, { payload: "", signature: "", protected: "" }),
		).rejects.toBeInstanceOf(SignInMisconfigured);
	});

	test("while the provider is down it is asked at most once per refetch interval, however many tokens come", async () => {
		provider.reachable = false;
		try {
			const before = provider.requests.received;
			const keys = providerKeys(signIn(), TIMING);
			const token = await provider.token();
			for (let i = 0; i < 25; i++) await expect(verify(keys, token)).rejects.toBeInstanceOf(ProviderUnreachable);
			expect(provider.requests.received - before).toBe(1);
		} finally {
			provider.reachable = true;
		}
	});

	test("an unknown kid while the provider is up is the token's fault, not the provider's", async () => {
		const keys = providerKeys(signIn(), TIMING);
		await verify(keys, await provider.token());
		await expect(verify(keys, await provider.token({ kid: "made-up" }))).rejects.toBeInstanceOf(errors.JWKSNoMatchingKey);
	});

	test("the keys are fetched again every refreshMs without a token asking: a key published before it signs is known at once", async () => {
		const keys = providerKeys(signIn(), { ...TIMING, refreshMs: 300 });
		await verify(keys, await provider.token());
		const before = provider.requests.jwks;
		await new Promise(resolve => setTimeout(resolve, 1000));
		expect(provider.requests.jwks - before).toBeGreaterThanOrEqual(2);
	});
});
