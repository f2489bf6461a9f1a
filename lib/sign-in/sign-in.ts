import { jwtVerify } from "jose";
import type { Logger } from "moleculer";
import { providerUnreachable, signInMisconfigured, texts, tokenRefused, writeRoleRequired } from "../catalogue/errors";
import type { CatalogueConfig } from "../config/config";
import { bearerOf, carriesToken } from "../http/http-guards";
import { rolesOf } from "./claims";
import { PROVIDER_TIMING, providerKeys, ProviderUnreachable, SignInMisconfigured, type ProviderTiming } from "./provider-keys";
import { checkSignInAtStart, type SignInCheck } from "./start-check";

/** Who sent a request, as `ctx.meta.user` carries it to every service it reaches. */
export interface SignedIn {
	/** The token's `sub`, or `api-token` for a service that sent API_TOKEN. */
	sub: string;
	via: "identity-provider" | "api-token";
	/** Whether the sender may change the catalogue: it has AUTH_WRITE_ROLE, or it sent API_TOKEN. */
	mayWrite: boolean;
	/** When the token stops being accepted (its `exp` and the clock's leeway), in ms; API_TOKEN does not expire. */
	until?: number;
}

/** What a request needs: nothing, a signed-in user (reads with AUTH_READS=user), or one who may write. */
export type Need = "nothing" | "user" | "writer";

/**
 * Asymmetric signatures only: a provider signs with its private key and publishes the public one.
 * `none` and the HS* family (a shared secret, which a public key would become) are refused.
 */
export const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

/** The header types of an access token: RFC 9068's `at+jwt`, or the plain `JWT` most providers write. */
const ACCESS_TOKEN_TYPES = new Set(["jwt", "at+jwt", "application/at+jwt"]);

/**
 * Whether a token the provider signed for this audience is an access token, not another of its tokens: an ID token, a refresh
 * token or a logout token (Keycloak says which in the payload's `typ`; a logout token says so in its header's).
 */
const isAccessToken = (headerType: unknown, payloadType: unknown) =>
	(headerType === undefined || (typeof headerType === "string" && ACCESS_TOKEN_TYPES.has(headerType.toLowerCase()))) &&
	(payloadType === undefined || payloadType === "Bearer");

/** Seconds of disagreement between the provider's clock and ours that `exp` and `nbf` forgive. */
const CLOCK_LEEWAY_S = 30;

const API_TOKEN_USER: SignedIn = { sub: "api-token", via: "api-token", mayWrite: true };

/** Why a token was refused, for the gateway's refusal line (lib/http/refusals.ts); the client is told only to sign in again. */
export type RefusalNote = (reason: string) => void;

/**
 * The gateway's checks of who sends a request, in moleculer-web's two steps: `signedIn` reads the
 * bearer token (API_TOKEN, or a JWT the provider signed), `admit` decides whether that is enough.
 */
export function signInGate({ apiToken, signIn }: Pick<CatalogueConfig, "apiToken" | "signIn">, timing: ProviderTiming = PROVIDER_TIMING) {
	const providerKeySet = signIn ? providerKeys(signIn, timing) : null;

	async function verified(token: string, note: RefusalNote): Promise<SignedIn> {
		if (!signIn || !providerKeySet) throw tokenRefused(texts.tokenRequired, true);
		try {
			const { payload, protectedHeader } = await jwtVerify(token, providerKeySet, {
				issuer: signIn.issuer,
				audience: signIn.audience,
				algorithms: ALGORITHMS,
				clockTolerance: CLOCK_LEEWAY_S,
				requiredClaims: ["exp", "sub"],
			});
			if (!isAccessToken(protectedHeader.typ, payload.typ))
				throw new Error(`not an access token (typ ${JSON.stringify([protectedHeader.typ, payload.typ])})`);
			return {
				sub: String(payload.sub),
				via: "identity-provider",
				mayWrite: rolesOf(payload, signIn.rolesClaim).includes(signIn.writeRole),
				until: (Number(payload.exp) + CLOCK_LEEWAY_S) * 1000,
			};
		} catch (err) {
			if (err instanceof ProviderUnreachable) throw providerUnreachable(err.retryAt, err.message);
			if (err instanceof SignInMisconfigured) throw signInMisconfigured(err.message);
			note((err as { code?: string }).code ?? (err as Error).message);
			throw tokenRefused(texts.tokenNotAccepted, true);
		}
	}

	let startCheck: SignInCheck | null = null;

	return {
		/** The gateway has started: the provider's configuration and keys are fetched now (lib/sign-in/start-check.ts), not at the first token. */
		start(logger: Logger): void {
			if (signIn && providerKeySet) startCheck = checkSignInAtStart(() => providerKeySet.check(), signIn, logger, timing.refetchMs);
		},

		/** Whether a token can be checked without waiting for the provider: no sign-in, or its keys fetched once. */
		keysFetched: (): boolean => !signIn || startCheck?.fetched() === true,

		/** The gateway has stopped: no more checks at start, nor fetches of the keys in the background. */
		stop(): void {
			startCheck?.stop();
			providerKeySet?.stop();
		},

		/** Who sent the request, when it needs anyone: null without a bearer token; throws 401 for a bad one, 503 when it cannot be checked. */
		async signedIn(authorization: string | undefined, need: Need, note: RefusalNote = () => undefined): Promise<SignedIn | null> {
			if (need === "nothing" || authorization === undefined) return null;
			const token = bearerOf(authorization);
			if (token === null) throw tokenRefused(signIn ? texts.tokenNotAccepted : texts.tokenRequired, true);
			if (apiToken !== null && carriesToken(authorization, apiToken)) return API_TOKEN_USER;
			return verified(token, note);
		},

		/** Resolves when `user` may do what the request needs; throws 401 with no one signed in, 403 without the write role. */
		admit(user: SignedIn | null | undefined, need: Need): void {
			if (need === "nothing") return;
			if (!user) throw tokenRefused(signIn ? texts.signInRequired : texts.tokenRequired, false);
			if (need === "writer" && !user.mayWrite) throw writeRoleRequired(signIn?.writeRole ?? "");
		},
	};
}
