import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "moleculer";
import type { SignIn } from "../config/config";
import { SignInMisconfigured } from "./provider-keys";

/** The longest wait between two checks of a provider that does not answer. */
const MAX_RETRY_MS = 60_000;

export interface SignInCheck {
	/** Whether the provider's keys have been fetched once: the gateway is not ready before (`sign-in`). */
	fetched(): boolean;
	stop(): void;
}

/**
 * Sign-in checked at start (docs/security.md, "Sign-in checked at start"): the provider's configuration and keys are fetched once,
 * again after `firstRetryMs`, twice that, ... up to a minute while that fails, never fatally. Each failure is one log line without a
 * stack: an error naming the variable to change and what the provider gave, or a warning that the provider does not answer yet.
 */
export function checkSignInAtStart(check: () => Promise<void>, signIn: SignIn, logger: Logger, firstRetryMs: number): SignInCheck {
	let fetched = false;
	const stopping = new AbortController();
	void (async () => {
		for (let wait = firstRetryMs; !stopping.signal.aborted; wait = Math.min(wait * 2, MAX_RETRY_MS)) {
			try {
				await check();
				fetched = true;
				logger.info(`Sign-in: the keys of ${signIn.issuer} are fetched`);
				return;
			} catch (err) {
				const again = `checked again in ${wait / 1000} s`;
				if (err instanceof SignInMisconfigured) logger.error(`Sign-in is misconfigured: ${err.message} (${again})`);
				else
					logger.warn(
						`Sign-in: the identity provider of AUTH_ISSUER=${signIn.issuer} does not answer yet: ${(err as Error).message} (${again})`,
					);
			}
			await sleep(wait, undefined, { signal: stopping.signal }).catch(() => undefined);
		}
	})();
	return { fetched: () => fetched, stop: () => stopping.abort() };
}
