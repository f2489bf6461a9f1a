import { randomUUID } from "node:crypto";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";
import type { SignIn } from "../../lib/config/config";

/** A key the stand-in signs with; its public half is what the JWKS publishes. */
export interface SigningKey {
	kid: string;
	alg: "RS256" | "ES256";
	privateKey: CryptoKey;
	publicKey: CryptoKey;
	publicJwk: JWK;
}

export async function signingKey(alg: SigningKey["alg"], kid: string = randomUUID()): Promise<SigningKey> {
	const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
	return { kid, alg, privateKey, publicKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

/** What a test token differs in from a valid one. */
export interface TokenOptions {
	key?: SigningKey;
	/** The `kid` the header names; the key's own by default. */
	kid?: string;
	issuer?: string;
	audience?: string;
	subject?: string;
	/** Seconds from now; negative for a token already expired. */
	expiresIn?: number;
	/** Seconds from now at which the token becomes valid. */
	notBefore?: number;
	/** Extra claims: the roles, wherever the provider puts them. */
	claims?: JWTPayload;
	/** The header's `typ`: `JWT` by default. */
	type?: string;
}

/**
 * A local stand-in for an OpenID Connect provider: an HTTP server on 127.0.0.1 that publishes
 * /.well-known/openid-configuration and a JWKS of the keys it is told to publish, counts the
 * requests for them, and signs tokens. `reachable = false` makes it drop every connection.
 */
export class IdentityProvider {
	published: SigningKey[] = [];
	reachable = true;
	/** Fields its openid-configuration gives instead of its own (an undefined one is left out), for a provider set up otherwise. */
	configured: { issuer?: unknown; jwks_uri?: unknown } = {};
	/** Requests answered, per document, and every request received (answered or dropped). */
	requests = { configuration: 0, jwks: 0, received: 0 };

	private constructor(
		private readonly server: Server,
		readonly issuer: string,
		readonly audience: string,
	) {}

	static async start(keys: SigningKey[], audience = "game-catalogue"): Promise<IdentityProvider> {
		const answering: { provider?: IdentityProvider } = {};
		const server = createServer((req, res) => answering.provider?.answer(req.url ?? "", res));
		await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
		const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/games`;
		const provider = (answering.provider = new IdentityProvider(server, issuer, audience));
		provider.published = keys;
		return provider;
	}

	/** The catalogue's sign-in settings for this provider: its issuer and audience, the roles in `roles`, reads public. */
	signIn(more: Partial<SignIn> = {}): SignIn {
		return {
			issuer: this.issuer,
			jwksUrl: null,
			audience: this.audience,
			rolesClaim: "roles",
			writeRole: "catalogue-editor",
			reads: "public",
			...more,
		};
	}

	private answer(url: string, res: ServerResponse) {
		this.requests.received++;
		if (!this.reachable) return res.socket?.destroy();
		const json = (body: unknown) => res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(body));
		if (url === "/realms/games/.well-known/openid-configuration") {
			this.requests.configuration++;
			return json({ issuer: this.issuer, jwks_uri: `${this.issuer}/protocol/openid-connect/certs`, ...this.configured });
		}
		if (url === "/realms/games/protocol/openid-connect/certs") {
			this.requests.jwks++;
			return json({ keys: this.published.map(key => key.publicJwk) });
		}
		res.writeHead(404).end();
	}

	/** A token signed as the provider signs them, valid for five minutes unless `options` say otherwise. */
	async token({
		key = this.published[0],
		kid = key.kid,
		issuer = this.issuer,
		audience = this.audience,
		subject = "alice",
		expiresIn = 300,
		notBefore,
		claims = {},
		type = "JWT",
	}: TokenOptions = {}) {
		const now = Math.floor(Date.now() / 1000);
		const jwt = new SignJWT(claims)
			.setProtectedHeader({ alg: key.alg, kid, typ: type })
			.setIssuer(issuer)
			.setAudience(audience)
			.setSubject(subject)
			.setIssuedAt(now)
			.setExpirationTime(now + expiresIn);
		if (notBefore !== undefined) jwt.setNotBefore(now + notBefore);
		return jwt.sign(key.privateKey);
	}

	/** An unsigned token (`alg: none`) with valid claims. */
	unsigned(claims: JWTPayload = {}): string {
		return new UnsecuredJWT(claims)
			.setIssuer(this.issuer)
			.setAudience(this.audience)
			.setSubject("mallory")
			.setExpirationTime("5m")
			.encode();
	}

	/** An HS256 token whose secret is the provider's RSA public key, as published: the classic algorithm confusion. */
	async signedWithPublicKey(claims: JWTPayload = {}, key: SigningKey = this.published[0]): Promise<string> {
		const secret = new TextEncoder().encode(await exportSPKI(key.publicKey));
		return new SignJWT(claims)
			.setProtectedHeader({ alg: "HS256", kid: key.kid })
			.setIssuer(this.issuer)
			.setAudience(this.audience)
			.setSubject("mallory")
			.setExpirationTime("5m")
			.sign(secret);
	}

	stop(): Promise<void> {
		return new Promise(resolve => {
			this.server.closeAllConnections();
			this.server.close(() => resolve());
		});
	}
}
