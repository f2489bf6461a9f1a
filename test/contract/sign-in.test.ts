import type { Middleware, Service } from "moleculer";
import type { SignIn } from "../../lib/config/config";
import type { ProviderTiming } from "../../lib/sign-in/provider-keys";
import { startCatalogue, type Answer, type Api, type Catalogue, type CatalogueOptions } from "../support/catalogue";
import { openStream } from "../support/sse";
import { waitFor } from "../support/process";
import { IdentityProvider, signingKey, type SigningKey } from "../support/identity-provider";

// Sign-in with an identity provider (AUTH_*, docs/security.md), against a local stand-in that
// publishes an OpenID configuration and a JWKS of RSA and EC keys (support/identity-provider.ts).
// In both layouts: over NATS, the sender in ctx.meta.user crosses to the data services' nodes.

const EDITOR = { realm_access: { roles: ["catalogue-editor", "offline_access"] } };
const READER = { realm_access: { roles: ["offline_access"] } };
const API_TOKEN = "service-token-0123456789abcdef";
const ORIGIN = "https://app.example.com";
/** Short enough for a test to wait out: the provider is asked again at most once a second. */
const TIMING: ProviderTiming = { refetchMs: 1000, kidCooldownMs: 1000, refreshMs: 60_000, maxAgeMs: 60_000, timeoutMs: 2000 };

const texts = {
	signInRequired: "Sign in first: send the identity provider's access token as Authorization: Bearer <token>",
	tokenNotAccepted: "The access token was not accepted: sign in again and send the new token as Authorization: Bearer <token>",
	writeRoleRequired: "Changing the catalogue needs the role 'catalogue-editor', which this sign-in does not have",
	providerUnreachable: "The identity provider cannot be reached to check the sign-in; try again later",
};

/** Who each data service's action saw as the sender, and on which node it ran. */
function senders(): { seen: { action: string; user: unknown; node: string }[]; middleware: Middleware } {
	const seen: { action: string; user: unknown; node: string }[] = [];
	const middleware: Middleware = {
		localAction(next, action) {
			const name = String(action.name);
			const node = (action as { service?: Service }).service?.broker.nodeID ?? "";
			return function (this: Service, ctx) {
				if (!name.startsWith("api.")) seen.push({ action: name, user: (ctx.meta as { user?: unknown }).user, node });
				return next.call(this, ctx);
			};
		},
	};
	return { seen, middleware };
}

const signInOf = (provider: IdentityProvider, more: Partial<SignIn> = {}): SignIn =>
	provider.signIn({ rolesClaim: "realm_access.roles", ...more });

/** A provider with `keys` and a catalogue signing in with it, for one describe block. */
function signInWith(keys: () => Promise<SigningKey[]>, options: (started: IdentityProvider) => CatalogueOptions) {
	const state = {} as { provider: IdentityProvider; catalogue: Catalogue };
	beforeAll(async () => {
		state.provider = await IdentityProvider.start(await keys());
		state.catalogue = await startCatalogue(options(state.provider));
	});
	afterAll(async () => {
		await state.catalogue?.stop();
		await state.provider?.stop();
	});
	return { api: (): Api => state.catalogue.api, provider: () => state.provider, catalogue: () => state.catalogue };
}

const bearer = (token: string, more: Record<string, string> = {}) => ({ Authorization: `Bearer ${token}`, ...more });

function expectRefused(answer: Answer, status: number, msg: string, challenge?: string) {
	expect({ status: answer.status, body: answer.body }).toEqual({ status, body: { msg } });
	if (challenge !== undefined) expect(answer.headers.get("www-authenticate")).toBe(challenge);
}

const INVALID = 'Bearer realm="game-catalogue", error="invalid_token"';

describe("sign-in (AUTH_ISSUER): tokens the provider signed", () => {
	const recorded = senders();
	const { api, provider, catalogue } = signInWith(
		async () => [await signingKey("RS256"), await signingKey("ES256")],
		idp => ({
			middlewares: [recorded.middleware],
			settings: { signIn: signInOf(idp), providerTiming: TIMING, apiToken: null, corsOrigins: [ORIGIN] },
		}),
	);
	const write = (token: string, name = "Eurogames") => api().send("PUT", "/category", { name }, undefined, bearer(token));

	test("an editor's token writes, signed with an RSA key and with an EC key, and every service called sees its subject", async () => {
		for (const key of provider().published) {
			const token = await provider().token({ key, subject: `editor-${key.alg}`, claims: EDITOR });
			const created = await write(token, `By ${key.alg}`);
			expect(created.status).toBe(200);
			const { id } = created.body.category;
			expect((await api().send("DELETE", `/category/${id}`, undefined, undefined, bearer(token))).status).toBe(200);
			const removal = recorded.seen.find(
				each => each.action === "categories.remove" && (each.user as { sub?: string })?.sub === `editor-${key.alg}`,
			);
			expect(removal?.user).toEqual({
				sub: `editor-${key.alg}`,
				via: "identity-provider",
				mayWrite: true,
				until: expect.any(Number),
			});
			// Over NATS the data service ran on a node of its own: the sender crossed with the call.
			if (catalogue().topology === "nats") expect(removal?.node).not.toBe(catalogue().broker.nodeID);
		}
	});

	test("a game's write reaches categories and authors with the same subject", async () => {
		const token = await provider().token({ subject: "game-editor", claims: EDITOR });
		const category = (await write(token, "Party")).body.category;
		const author = (await api().send("PUT", "/author", { name: "Uwe", nationality: "German" }, undefined, bearer(token))).body.author;
		const game = { title: "Agricola", age: 12, category: { id: category.id }, author: { id: author.id } };
		expect((await api().send("PUT", "/game", game, undefined, bearer(token))).status).toBe(200);
		const byGameWrite = recorded.seen.filter(each => (each.user as { sub?: string })?.sub === "game-editor").map(each => each.action);
		expect(byGameWrite).toEqual(expect.arrayContaining(["games.create", "categories.referable", "authors.referable"]));
	});

	test("a reader's valid token is refused writes with 403, and nothing is written", async () => {
		const before = (await api().get("/category")).body;
		const token = await provider().token({ subject: "reader", claims: READER });
		expectRefused(
			await write(token, "Sneaky"),
			403,
			texts.writeRoleRequired,
			'Bearer realm="game-catalogue", error="insufficient_scope"',
		);
		expect((await api().get("/category")).body).toEqual(before);
	});

	test("no token: 401 with a Bearer challenge without an error, and a msg that says to sign in", async () => {
		expectRefused(await api().put("/category", { name: "Sneaky" }), 401, texts.signInRequired, 'Bearer realm="game-catalogue"');
	});

	test("an expired token: 401 invalid_token", async () => {
		const token = await provider().token({ claims: EDITOR, expiresIn: -120 });
		expectRefused(await write(token), 401, texts.tokenNotAccepted, INVALID);
	});

	test("a token expired within the clock leeway (30 s) is still accepted", async () => {
		const token = await provider().token({ claims: EDITOR, expiresIn: -5 });
		expect((await write(token, "Leeway")).status).toBe(200);
	});

	test("a token not yet valid (nbf two minutes ahead): 401 invalid_token", async () => {
		const token = await provider().token({ claims: EDITOR, notBefore: 120 });
		expectRefused(await write(token), 401, texts.tokenNotAccepted, INVALID);
	});

	test("a token from another issuer: 401 invalid_token", async () => {
		const token = await provider().token({ claims: EDITOR, issuer: "http://127.0.0.1:1/realms/other" });
		expectRefused(await write(token), 401, texts.tokenNotAccepted, INVALID);
	});

	test("a token for another audience: 401 invalid_token", async () => {
		const token = await provider().token({ claims: EDITOR, audience: "another-application" });
		expectRefused(await write(token), 401, texts.tokenNotAccepted, INVALID);
	});

	test.each([
		["an ID token (Keycloak's typ ID)", { claims: { ...EDITOR, typ: "ID" } }],
		["a refresh token (typ Refresh)", { claims: { ...EDITOR, typ: "Refresh" } }],
		["a logout token (header typ logout+jwt)", { claims: EDITOR, type: "logout+jwt" }],
	])("%s, though signed by the provider for this audience: 401 invalid_token", async (_name, options) => {
		expectRefused(await write(await provider().token(options)), 401, texts.tokenNotAccepted, INVALID);
	});

	test("an access token marked as one (header typ at+jwt, Keycloak's typ Bearer) writes", async () => {
		const token = await provider().token({ claims: { ...EDITOR, typ: "Bearer" }, type: "at+jwt" });
		expect((await write(token, "Typed")).status).toBe(200);
	});

	test("an unsigned token (alg: none): 401 invalid_token", async () => {
		expectRefused(await write(provider().unsigned(EDITOR)), 401, texts.tokenNotAccepted, INVALID);
	});

	test("an HS256 token signed with the provider's public key: 401 invalid_token", async () => {
		expectRefused(await write(await provider().signedWithPublicKey(EDITOR)), 401, texts.tokenNotAccepted, INVALID);
	});

	test("a token signed by a key the provider never published: 401 invalid_token", async () => {
		const stranger = await signingKey("RS256", provider().published[0].kid);
		expectRefused(await write(await provider().token({ key: stranger, claims: EDITOR })), 401, texts.tokenNotAccepted, INVALID);
	});

	test("a token in the query string is ignored: only the Authorization header carries one", async () => {
		const token = await provider().token({ claims: EDITOR });
		for (const query of [`access_token=${token}`, `token=${token}`, `authorization=Bearer%20${token}`]) {
			const answer = await api().send("PUT", `/category?${query}`, { name: "Via query" });
			expect(answer.status).toBe(401);
			expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="game-catalogue"');
		}
	});

	test("reads are public by default, with no token and even with a bad one", async () => {
		expect((await api().get("/category")).status).toBe(200);
		expect((await api().send("GET", "/category", undefined, undefined, bearer("not-a-token"))).status).toBe(200);
		expect((await api().post("/author", { pageable: { pageNumber: 0, pageSize: 5 } })).status).toBe(200);
	});

	test("the 401 and 403 answers carry the CORS headers, so a front end can read the msg", async () => {
		const reader = await provider().token({ claims: READER });
		for (const answer of [
			await api().send("PUT", "/category", { name: "x" }, undefined, { Origin: ORIGIN }),
			await api().send("PUT", "/category", { name: "x" }, undefined, bearer(reader, { Origin: ORIGIN })),
		]) {
			expect([401, 403]).toContain(answer.status);
			expect(answer.headers.get("access-control-allow-origin")).toBe(ORIGIN);
			expect(answer.body.msg).toEqual(expect.any(String));
		}
		const preflight = await api().send("OPTIONS", "/category", undefined, undefined, {
			Origin: ORIGIN,
			"Access-Control-Request-Method": "PUT",
			"Access-Control-Request-Headers": "authorization, content-type",
		});
		expect(preflight.status).toBe(204);
		expect(preflight.headers.get("access-control-allow-headers")).toMatch(/Authorization/);
	});

	test("the OpenAPI document declares the bearer JWT scheme and the operations that need it", async () => {
		const { body } = await api().get("/openapi.json");
		expect(body.components.securitySchemes.signIn).toMatchObject({ type: "http", scheme: "bearer", bearerFormat: "JWT" });
		expect(body.components.securitySchemes.signIn.description).toContain(provider().issuer);
		expect(body.paths["/category"].put.security).toEqual([{ signIn: [] }]);
		expect(Object.keys(body.paths["/category/{id}"].delete.responses)).toEqual(expect.arrayContaining(["401", "403"]));
		expect(body.paths["/category"].get.security).toBeUndefined();
		expect(body.paths["/health/ready"].get.security).toBeUndefined();
	});
});

describe("sign-in: key rotation", () => {
	const { api, provider } = signInWith(
		async () => [await signingKey("RS256")],
		idp => ({ settings: { signIn: signInOf(idp), providerTiming: TIMING, apiToken: null } }),
	);
	const write = (token: string) => api().send("PUT", "/category", { name: "Rotated" }, undefined, bearer(token));

	test("an unknown kid is refused; once the provider publishes the key it verifies, without a restart", async () => {
		expect((await write(await provider().token({ claims: EDITOR }))).status).toBe(200);
		const rotated = await signingKey("ES256");
		const token = await provider().token({ key: rotated, claims: EDITOR });
		await new Promise(resolve => setTimeout(resolve, TIMING.refetchMs + 100));
		expectRefused(await write(token), 401, texts.tokenNotAccepted, INVALID);
		provider().published = [rotated, ...provider().published];
		await new Promise(resolve => setTimeout(resolve, TIMING.refetchMs + 100));
		expect((await write(token)).status).toBe(200);
	});

	test("a flood of unknown kids asks the provider for its keys at most once per kidCooldownMs", async () => {
		const before = provider().requests.jwks;
		const started = Date.now();
		for (let round = 0; round < 5; round++) {
			const tokens = await Promise.all(
				Array.from({ length: 40 }, (_, i) => provider().token({ kid: `made-up-${round}-${i}`, claims: EDITOR })),
			);
			const answers = await Promise.all(tokens.map(write));
			expect(new Set(answers.map(answer => answer.status))).toEqual(new Set([401]));
			await new Promise(resolve => setTimeout(resolve, 300));
		}
		const intervals = Math.floor((Date.now() - started) / TIMING.kidCooldownMs) + 1;
		expect(provider().requests.jwks - before).toBeGreaterThanOrEqual(1);
		expect(provider().requests.jwks - before).toBeLessThanOrEqual(intervals);
	});
});

describe("sign-in: invented key ids", () => {
	/** Longer than the 2 s between the key's publication and its first token: without the wait, that token would be refused. */
	const COOLDOWN_MS = 3000;
	const { api, provider } = signInWith(
		async () => [await signingKey("RS256")],
		idp => ({ settings: { signIn: signInOf(idp), providerTiming: { ...TIMING, kidCooldownMs: COOLDOWN_MS }, apiToken: null } }),
	);
	const write = (token: string) => api().send("PUT", "/category", { name: "Rotated" }, undefined, bearer(token));

	test("amid a flood of them, a token signed with a key published 2 s earlier is accepted, once the provider may be asked again", async () => {
		const rotated = await signingKey("ES256");
		const genuine = await provider().token({ key: rotated, claims: EDITOR });
		let inventing = true;
		const refused = new Set<number>();
		const flood = (async () => {
			for (let round = 0; inventing; round++) {
				const tokens = await Promise.all(
					Array.from({ length: 10 }, (_, i) => provider().token({ kid: `invented-${round}-${i}`, claims: EDITOR })),
				);
				for (const answer of await Promise.all(tokens.map(write))) refused.add(answer.status);
			}
		})();
		await new Promise(resolve => setTimeout(resolve, 500));
		provider().published = [rotated, ...provider().published];
		await new Promise(resolve => setTimeout(resolve, 2000));
		const sent = Date.now();
		const answer = await write(genuine);
		const waited = Date.now() - sent;
		inventing = false;
		await flood;
		expect(refused).toEqual(new Set([401]));
		expect(answer.status).toBe(200);
		// It waited for the provider to be asked again, no longer.
		expect(waited).toBeLessThan(COOLDOWN_MS);
	});
});

describe("sign-in: the identity provider unreachable", () => {
	const { api, provider } = signInWith(
		async () => [await signingKey("RS256")],
		idp => {
			// Down from before the catalogue starts: its check at start would otherwise fetch the keys.
			idp.reachable = false;
			return { settings: { signIn: signInOf(idp), providerTiming: { ...TIMING, maxAgeMs: 500 }, apiToken: null } };
		},
	);
	const write = (token: string) => api().send("PUT", "/category", { name: "While down" }, undefined, bearer(token));

	test("before any key is known: writes answer 503 with Retry-After, never 500 or 200; reads stay public", async () => {
		const token = await provider().token({ claims: EDITOR });
		const before = (await api().get("/category")).body;
		for (let i = 0; i < 3; i++) {
			const answer = await write(token);
			expectRefused(answer, 503, texts.providerUnreachable);
			expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
		}
		expect((await api().get("/category")).body).toEqual(before);
		provider().reachable = true;
	});

	test("once the provider answers again, the token verifies; then down, the cached key still verifies, past its age", async () => {
		await new Promise(resolve => setTimeout(resolve, TIMING.refetchMs + 100));
		const token = await provider().token({ claims: EDITOR });
		expect((await write(token)).status).toBe(200);
		provider().reachable = false;
		// Past maxAgeMs (500 ms here): jose would fetch again, fails, and the keys known verify.
		await new Promise(resolve => setTimeout(resolve, 700));
		expect((await write(token)).status).toBe(200);
		expect((await write(token)).status).toBe(200);
		// A key the provider could not be asked about may be a new one: 503, not a refusal of the user.
		const rotated = await provider().token({ key: await signingKey("ES256"), claims: EDITOR });
		await new Promise(resolve => setTimeout(resolve, TIMING.refetchMs + 100));
		expectRefused(await write(rotated), 503, texts.providerUnreachable);
		// A bad token is still refused as such.
		expectRefused(await write(await provider().token({ claims: EDITOR, audience: "other" })), 401, texts.tokenNotAccepted, INVALID);
		provider().reachable = true;
	});
});

describe("sign-in: AUTH_READS=user", () => {
	const { api, provider } = signInWith(
		async () => [await signingKey("RS256")],
		idp => ({ settings: { signIn: signInOf(idp, { reads: "user" }), providerTiming: TIMING, apiToken: null } }),
	);

	test("reads need a signed-in user (any role); health, the document and the docs page stay public", async () => {
		expectRefused(await api().get("/category"), 401, texts.signInRequired, 'Bearer realm="game-catalogue"');
		expectRefused(await api().post("/author", { pageable: { pageNumber: 0, pageSize: 5 } }), 401, texts.signInRequired);
		expectRefused(await api().send("GET", "/game", undefined, undefined, bearer("garbage")), 401, texts.tokenNotAccepted, INVALID);
		const reader = await provider().token({ claims: READER });
		// A valid token in the query string of a read is ignored: only the Authorization header carries one.
		expectRefused(await api().get(`/category?access_token=${reader}`), 401, texts.signInRequired, 'Bearer realm="game-catalogue"');
		expect((await api().send("GET", "/category", undefined, undefined, bearer(reader))).status).toBe(200);
		expect((await api().send("PUT", "/category", { name: "x" }, undefined, bearer(reader))).status).toBe(403);
		for (const path of ["/health/live", "/health/ready", "/openapi.json", "/docs/"])
			expect((await fetch(api().url + path)).status).toBe(200);
		const { body } = await api().get("/openapi.json");
		expect(body.paths["/category"].get.security).toEqual([{ signIn: [] }]);
	});

	test("GET /changes is read as the lists are: 401 without a user, a stream with one", async () => {
		expectRefused(await api().get("/changes"), 401, texts.signInRequired, 'Bearer realm="game-catalogue"');
		const reader = await provider().token({ claims: READER });
		const stream = await openStream(`${api().url}/changes`, bearer(reader));
		try {
			expect(stream.status).toBe(200);
			expect(await stream.next(event => event.event === "ready")).toMatchObject({ event: "ready" });
		} finally {
			stream.close();
		}
	});

	test("a signed-in reader's stream tells who made each change, and ends when the token that opened it expires", async () => {
		// Expired 27 s ago: still accepted, within the 30 s of clock leeway, for 3 s more.
		const reader = await provider().token({ claims: READER, expiresIn: -27 });
		const stream = await openStream(`${api().url}/changes?kinds=category`, bearer(reader));
		try {
			await stream.next(event => event.event === "ready");
			const editor = await provider().token({ subject: "carol", claims: EDITOR });
			expect((await api().send("PUT", "/category", { name: "By carol" }, undefined, bearer(editor))).status).toBe(200);
			expect((await stream.next(event => event.data.record?.name === "By carol")).data.subject).toBe("carol");
			expect(stream.ended()).toBe(false);
			await waitFor("the stream ends with its token", async () => stream.ended(), [], 6000);
		} finally {
			stream.close();
		}
	});

	test("with the provider down and no key known, reads answer 503 too", async () => {
		provider().reachable = false;
		await new Promise(resolve => setTimeout(resolve, TIMING.refetchMs + 100));
		const unknownKey = await provider().token({ key: await signingKey("ES256"), claims: READER });
		const answer = await api().send("GET", "/category", undefined, undefined, bearer(unknownKey));
		expectRefused(answer, 503, texts.providerUnreachable);
		provider().reachable = true;
	});
});

describe("sign-in: API_TOKEN and the provider together", () => {
	const recorded = senders();
	const { api, provider } = signInWith(
		async () => [await signingKey("ES256")],
		idp => ({
			middlewares: [recorded.middleware],
			settings: { signIn: signInOf(idp), providerTiming: TIMING, apiToken: API_TOKEN },
		}),
	);

	test("a service writes with API_TOKEN, an editor with its token; a wrong token is refused", async () => {
		expect((await api().send("PUT", "/category", { name: "By service" }, undefined, bearer(API_TOKEN))).status).toBe(200);
		expect(recorded.seen.find(each => each.action === "categories.create")?.user).toEqual({
			sub: "api-token",
			via: "api-token",
			mayWrite: true,
		});
		const editor = await provider().token({ subject: "bob", claims: EDITOR });
		expect((await api().send("PUT", "/category", { name: "By bob" }, undefined, bearer(editor))).status).toBe(200);
		expectRefused(
			await api().send("PUT", "/category", { name: "x" }, undefined, bearer(`${API_TOKEN}x`)),
			401,
			texts.tokenNotAccepted,
			INVALID,
		);
		expectRefused(await api().put("/category", { name: "x" }), 401, texts.signInRequired);
		const { body } = await api().get("/openapi.json");
		expect(body.paths["/category"].put.security).toEqual([{ bearerToken: [] }, { signIn: [] }]);
	});

	test("the public change stream does not tell who made a change: a `sub` may be an email address", async () => {
		const stream = await openStream(`${api().url}/changes?kinds=category`);
		try {
			await stream.next(event => event.event === "ready");
			const editor = await provider().token({ subject: "dave@example.com", claims: EDITOR });
			expect((await api().send("PUT", "/category", { name: "By dave" }, undefined, bearer(editor))).status).toBe(200);
			const change = await stream.next(event => event.data.record?.name === "By dave");
			expect(change.data).toMatchObject({ type: "created", kind: "category" });
			expect(change.data).not.toHaveProperty("subject");
		} finally {
			stream.close();
		}
	});
});
