import { setTimeout as sleep } from "node:timers/promises";
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
	/** At most one request to the provider in this long after a failed one. */
	refetchMs: number;
	/**
	 * At most one request to the provider in this long for a key id it does not know: a token that names one sooner waits for that
	 * request (this long at most) instead of being refused, so invented key ids cannot hold back a key the provider rotates in.
	 */
	kidCooldownMs: number;
	/** The keys are fetched again this often, in the background: a key published before it signs is known before it is used. */
	refreshMs: number;
	/** Keys older than this are fetched again before they are used (and still used if the provider is down). */
	maxAgeMs: number;
	/** A request to the provider that takes longer has failed. */
	timeoutMs: number;
}

export const PROVIDER_TIMING: ProviderTiming = {
	refetchMs: 10_000,
	kidCooldownMs: 1000,
	refreshMs: 60_000,
	maxAgeMs: 10 * 60_000,
	timeoutMs: 5_000,
};

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

/**
 * The provider answers, but not as the configuration says: its openid-configuration names another issuer, or no key set. The
 * message names the variable to change and what the provider gave.
 */
export class SignInMisconfigured extends Error {
	constructor(message: string) {
		super(message);
		this.name = "SignInMisconfigured";
	}
}

/** The key lookups' own failures: the token names a key, or a kind of key, the provider does not publish. */
const TOKEN_FAULTS = [errors.JWKSNoMatchingKey, errors.JWKSMultipleMatchingKeys, errors.JOSENotSupported, errors.JWKInvalid];
const tokenFault = (err: unknown) => TOKEN_FAULTS.some(kind => err instanceof kind);

/**
 * The keys that verify the provider's tokens: found through the issuer's OpenID configuration (or AUTH_JWKS_URL), kept by jose and
 * fetched again every `refreshMs`. jose refetches for an unknown `kid` at most once per `kidCooldownMs`; a token that comes sooner
 * waits for the next fetch. jose forgets failures, so the fetch given to it refuses to ask again within `refetchMs` of one, and the
 * last keys keep verifying while the provider is down, even after `maxAgeMs`.
 */
export function providerKeys(
	signIn: SignIn,
	timing: ProviderTiming = PROVIDER_TIMING,
): JWTVerifyGetKey & { check(): Promise<void>; stop(): void } {
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

	/** What the provider's own configuration said was wrong with ours, until a discovery succeeds: each try within refetchMs says it. */
	let misconfigured: SignInMisconfigured | null = null;

	/** The JWKS URL the issuer's configuration names; it must be the configuration of that very issuer. */
	async function discoverKeysUrl(): Promise<URL> {
		if (signIn.jwksUrl) return new URL(signIn.jwksUrl);
		const configuration = `${signIn.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
		const response = await askProvider(configuration, {
			headers: new Headers({ accept: "application/json" }),
			method: "GET",
			redirect: "manual",
			signal: AbortSignal.timeout(timing.timeoutMs),
		});
		const found = (await response.json().catch(() => null)) as { issuer?: unknown; jwks_uri?: unknown } | null;
		if (response.status !== 200 || found === null || typeof found !== "object") {
			failedAt = Date.now();
			throw unreachable(`${configuration} answered ${response.status}${found === null ? ", not JSON" : ""}`);
		}
		const mistake =
			found.issuer !== signIn.issuer
				? `AUTH_ISSUER is "${signIn.issuer}", but ${configuration} names the issuer ${JSON.stringify(found.issuer)}: set AUTH_ISSUER to exactly that`
				: typeof found.jwks_uri !== "string" || !URL.canParse(found.jwks_uri)
					? `${configuration} names no key set (jwks_uri: ${JSON.stringify(found.jwks_uri)}): set AUTH_JWKS_URL to the provider's key set URL`
					: null;
		if (mistake) {
			failedAt = Date.now();
			throw (misconfigured = new SignInMisconfigured(mistake));
		}
		misconfigured = null;
		return new URL(found.jwks_uri as string);
	}

	const kept: ExportedJWKSCache | Record<string, never> = {};
	let remote: Promise<RemoteJWKSet> | null = null;
	const remoteKeys = () =>
		(remote ??= discoverKeysUrl().then(
			url =>
				refreshed(
					createRemoteJWKSet(url, {
						cooldownDuration: timing.kidCooldownMs,
						cacheMaxAge: timing.maxAgeMs,
						timeoutDuration: timing.timeoutMs,
						[customFetch]: askProvider,
						[jwksCache]: kept,
					}),
				),
			err => {
				remote = null;
				throw err;
			},
		));

	let refreshing: NodeJS.Timeout | undefined;
	/** `keys`, fetched again every `refreshMs` from now on until `stop()` (a failure is met again at the next use). */
	function refreshed(keys: RemoteJWKSet): RemoteJWKSet {
		refreshing = setInterval(() => void keys.reload().catch(() => undefined), timing.refreshMs);
		refreshing.unref();
		return keys;
	}

	/**
	 * `keys` verifying the token; for a key id jose does not know while it may not ask the provider again (`kidCooldownMs` after
	 * its last fetch), once more when it may: the waiting tokens share that one fetch.
	 */
	async function verifiedWaitingForKeys(keys: RemoteJWKSet, header: JWSHeaderParameters, token: FlattenedJWSInput) {
		try {
			return await keys(header, token);
		} catch (err) {
			if (!(err instanceof errors.JWKSNoMatchingKey) || !keys.coolingDown || !("uat" in kept)) throw err;
			await sleep(kept.uat + timing.kidCooldownMs - Date.now() + 1);
			return keys(header, token);
		}
	}

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

	const getKey: JWTVerifyGetKey = async (header, token) => {
		try {
			const keys = await remoteKeys();
			return (await staleKeysVerify(keys, header, token)) ?? (await verifiedWaitingForKeys(keys, header, token));
		} catch (err) {
			if (tokenFault(err) || err instanceof SignInMisconfigured) throw err;
			if (misconfigured) throw misconfigured;
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

	/** Fetches the keys once if none is known yet: the check at start. Throws SignInMisconfigured, ProviderUnreachable, or jose's error. */
	async function check(): Promise<void> {
		const keys = await remoteKeys().catch((err: unknown) => {
			throw misconfigured ?? err;
		});
		if (!("jwks" in kept)) await keys.reload();
	}

	return Object.assign(getKey, { check, stop: () => clearInterval(refreshing) });
}
