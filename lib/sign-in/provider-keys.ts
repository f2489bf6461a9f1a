import {
	createLocalJWKSet,
	createRemoteJWKSet,
	customFetch,
	errors,
	jwksCache,
	type ExportedJWKSCache,
	type FetchImplementation,
	type FlattenedJWSInput,
	type JWSHeaderParameters,
	type JWTVerifyGetKey,
	type RemoteJWKSet,
} from "jose";
import type { SignIn } from "../config/config";

/** How often the identity provider is asked, and how long for. */
export interface ProviderTiming {
	/** At most one request to the provider in this long after a failed one, or for a key it does not know. */
	refetchMs: number;
	/** Keys older than this are fetched again before they are used (and still used if the provider is down). */
	maxAgeMs: number;
	/** A request to the provider that takes longer has failed. */
	timeoutMs: number;
}

export const PROVIDER_TIMING: ProviderTiming = { refetchMs: 10_000, maxAgeMs: 10 * 60_000, timeoutMs: 5_000 };

/** The provider could not be asked, or its answer was unusable, and no key known before verifies the token. */
export class ProviderUnreachable extends Error {
	constructor(
		message: string,
		/** When the provider is asked again. */
		readonly retryAt: number,
	) {
		super(message);
		this.name = "ProviderUnreachable";
	}
}

/** The key lookups' own failures: the token names a key, or a kind of key, the provider does not publish. */
const TOKEN_FAULTS = [errors.JWKSNoMatchingKey, errors.JWKSMultipleMatchingKeys, errors.JOSENotSupported, errors.JWKInvalid];
const tokenFault = (err: unknown) => TOKEN_FAULTS.some(kind => err instanceof kind);

/**
 * The keys that verify the provider's tokens: found through the issuer's OpenID configuration (or AUTH_JWKS_URL) and kept by jose,
 * which refetches for an unknown `kid` at most once per `refetchMs`. jose forgets failures, so the fetch given to it refuses to
 * ask again within `refetchMs` of one, and the last keys keep verifying while the provider is down, even after `maxAgeMs`.
 */
export function providerKeys(signIn: SignIn, timing: ProviderTiming = PROVIDER_TIMING): JWTVerifyGetKey {
	let failedAt = Number.NEGATIVE_INFINITY;
	const retryAt = () => failedAt + timing.refetchMs;
	const unreachable = (why: string) => new ProviderUnreachable(`the identity provider ${signIn.issuer}: ${why}`, retryAt());

	const askProvider: FetchImplementation = async (url, options) => {
		if (Date.now() < retryAt()) throw unreachable("it failed moments ago");
		try {
			const response = await fetch(url, { ...options, signal: options.signal ?? AbortSignal.timeout(timing.timeoutMs) });
			if (response.status !== 200) failedAt = Date.now();
			return response;
		} catch (err) {
			failedAt = Date.now();
			throw err;
		}
	};

	/** The JWKS URL the issuer's configuration names; it must be the configuration of that very issuer. */
	async function discoverKeysUrl(): Promise<URL> {
		if (signIn.jwksUrl) return new URL(signIn.jwksUrl);
		const response = await askProvider(`${signIn.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`, {
			headers: new Headers({ accept: "application/json" }),
			method: "GET",
			redirect: "manual",
			signal: AbortSignal.timeout(timing.timeoutMs),
		});
		const found = (await response.json().catch(() => ({}))) as { issuer?: unknown; jwks_uri?: unknown };
		if (
			response.status !== 200 ||
			found.issuer !== signIn.issuer ||
			typeof found.jwks_uri !== "string" ||
			!URL.canParse(found.jwks_uri)
		) {
			failedAt = Date.now();
			throw unreachable(`its openid-configuration (status ${response.status}) does not name issuer ${signIn.issuer} and a jwks_uri`);
		}
		return new URL(found.jwks_uri);
	}

	const kept: ExportedJWKSCache | Record<string, never> = {};
	let remote: Promise<RemoteJWKSet> | null = null;
	const remoteKeys = () =>
		(remote ??= discoverKeysUrl().then(
			url =>
				createRemoteJWKSet(url, {
					cooldownDuration: timing.refetchMs,
					cacheMaxAge: timing.maxAgeMs,
					timeoutDuration: timing.timeoutMs,
					[customFetch]: askProvider,
					[jwksCache]: kept,
				}),
			err => {
				remote = null;
				throw err;
			},
		));

	/** The keys last fetched, as a key set made once per fetch (jose gives `kept` a new set each time). */
	let last: { jwks: unknown; keys: ReturnType<typeof createLocalJWKSet> } | null = null;
	const lastKeys = (jwks: ExportedJWKSCache["jwks"]) => {
		if (last?.jwks !== jwks) last = { jwks, keys: createLocalJWKSet(jwks) };
		return last.keys;
	};

	/** The keys last fetched, when jose would fetch before using them: they verify now, and new ones come in the background. */
	async function staleKeysVerify(keys: RemoteJWKSet, header: JWSHeaderParameters, token: FlattenedJWSInput) {
		if (keys.fresh || !("jwks" in kept)) return null;
		if (!keys.reloading) keys.reload().catch(() => undefined);
		return lastKeys(kept.jwks)(header, token).catch(() => null);
	}

	return async (header, token) => {
		try {
			const keys = await remoteKeys();
			return (await staleKeysVerify(keys, header, token)) ?? (await keys(header, token));
		} catch (err) {
			if (tokenFault(err)) throw err;
			// An answer jose could not use (not a key set, not JSON) is a failure too, however it came.
			if (!(err instanceof ProviderUnreachable)) failedAt = Date.now();
			if (!("jwks" in kept)) throw err instanceof ProviderUnreachable ? err : unreachable((err as Error).message);
			try {
				return await lastKeys(kept.jwks)(header, token);
			} catch (known) {
				// A kid the provider could not be asked about may be a key it has just rotated in.
				if (known instanceof errors.JWKSNoMatchingKey) throw unreachable("it could not be asked for a key it may have rotated in");
				throw known;
			}
		}
	};
}
