import {
	isUnreachable,
	METHOD_NOT_ALLOWED,
	NO_WRITE_ROLE,
	NOT_UTF8,
	PROVIDER_UNREACHABLE,
	SIGN_IN_MISCONFIGURED,
	STREAMS_FULL,
	texts,
} from "../catalogue/errors";

interface FieldError {
	field: string;
	message: string;
	type: string;
}

export interface Failure {
	status: number;
	body: { msg: string; errors?: FieldError[] };
	/** Headers the status calls for, beyond Content-Type. */
	headers?: Record<string, string>;
}

/** RFC 6750: what a client refused for want of a token, or of a better one, is told to send. */
const BEARER_ERRORS: Record<string, string> = { INVALID_TOKEN: "invalid_token", [NO_WRITE_ROLE]: "insufficient_scope" };
const bearerChallenge = (type: unknown) => {
	const error = BEARER_ERRORS[String(type)];
	return `Bearer realm="game-catalogue"${error ? `, error="${error}"` : ""}`;
};

/** The 401 texts a token's refusal may carry; anything else that says 401 gets the API token's. */
const TOKEN_TEXTS = new Set<string>([texts.tokenRequired, texts.signInRequired, texts.tokenNotAccepted]);

/** Whole seconds from now until `retryAt` (ms), at least 1. */
const secondsUntil = (retryAt: unknown) => String(Math.max(1, Math.ceil((Number(retryAt) - Date.now()) / 1000) || 1));

/** What an error carries that decides its answer; it may have crossed the broker as plain data. */
interface ErrorLike {
	name?: string;
	message?: string;
	code?: unknown;
	status?: unknown;
	type?: unknown;
	data?: unknown;
}

/** The codes of zlib's failures to inflate: gzip's and deflate's (`Z_DATA_ERROR`, `Z_BUF_ERROR`), Brotli's and Zstandard's. */
const ZLIB_FAILURE = /^(Z_[A-Z_]+|ERR__ERROR_[A-Z0-9_]+|ZSTD_error_[a-z_]+)$/;

function fieldErrors(data: unknown): FieldError[] | undefined {
	if (!Array.isArray(data)) return undefined;
	const errors = data
		.filter((item: Partial<FieldError> | null): item is FieldError => typeof item?.message === "string")
		.map(({ field, message, type }) => ({ field: String(field), message, type: String(type) }));
	return errors.length > 0 ? errors : undefined;
}

/**
 * The HTTP answer for any error that reaches the gateway: business failures keep their text at
 * 400, validation failures name the first offending field, and nothing internal leaks.
 */
export function toFailure(error: unknown): Failure {
	const err = (error ?? {}) as ErrorLike;
	const errors = fieldErrors(err.data);
	switch (true) {
		case err.name === "ValidationError" && errors !== undefined:
			return { status: 400, body: { msg: errors[0].message, errors } };
		case err.type === "entity.parse.failed":
			return { status: 400, body: { msg: texts.malformedJson } };
		case err.type === NOT_UTF8:
			return { status: 400, body: { msg: texts.bodyNotUtf8 } };
		// zlib's, for a body the body parser could not inflate: moleculer-web passes its code on as the error's code.
		case typeof err.code === "string" && ZLIB_FAILURE.test(err.code):
			return { status: 400, body: { msg: texts.bodyNotDecoded } };
		case err.type === "entity.too.large":
			return { status: 413, body: { msg: texts.bodyTooLarge } };
		// moleculer-web's, for the route's rate limit and for an origin CORS_ORIGINS does not list.
		case err.name === "RateLimitExceeded":
			return { status: 429, body: { msg: texts.tooManyRequests } };
		case err.name === "ForbiddenError" && err.type === "ORIGIN_NOT_ALLOWED":
			return { status: 403, body: { msg: texts.originNotAllowed } };
		case err.code === 401: {
			const msg = TOKEN_TEXTS.has(String(err.message)) ? String(err.message) : texts.tokenRequired;
			return { status: 401, body: { msg }, headers: { "WWW-Authenticate": bearerChallenge(err.type) } };
		}
		case err.code === 403 && err.type === NO_WRITE_ROLE:
			return { status: 403, body: { msg: String(err.message) }, headers: { "WWW-Authenticate": bearerChallenge(err.type) } };
		case err.type === PROVIDER_UNREACHABLE:
			return {
				status: 503,
				body: { msg: texts.providerUnreachable },
				headers: { "Retry-After": secondsUntil((err.data as { retryAt?: unknown } | undefined)?.retryAt) },
			};
		case err.type === SIGN_IN_MISCONFIGURED:
			return { status: 503, body: { msg: texts.signInMisconfigured } };
		case err.type === STREAMS_FULL:
			return { status: 503, body: { msg: texts.streamsFull }, headers: { "Retry-After": "5" } };
		case err.code === 405 && err.type === METHOD_NOT_ALLOWED:
			return {
				status: 405,
				body: { msg: String(err.message) },
				headers: { Allow: (err.data as { allow?: string } | undefined)?.allow ?? "" },
			};
		case err.name === "NotFoundError":
			return { status: 404, body: { msg: texts.notFound } };
		// Skipped: its caller's time had run out before the call was made.
		case err.name === "RequestTimeoutError" || err.name === "RequestSkippedError":
			return { status: 504, body: { msg: texts.unavailable } };
		// moleculer's, and moleculer-web's own for a route whose service it has never seen.
		case isUnreachable(err.name) || err.name === "ServiceUnavailableError":
			return { status: 503, body: { msg: texts.unavailable } };
	}
	const status = typeof err.code === "number" ? err.code : typeof err.status === "number" ? err.status : 500;
	if (status >= 400 && status < 500 && typeof err.message === "string" && err.message !== "")
		return { status, body: errors ? { msg: err.message, errors } : { msg: err.message } };
	return { status: 500, body: { msg: texts.internal } };
}
