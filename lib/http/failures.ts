import { isUnreachable, texts } from "../catalogue/errors";

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

/** RFC 6750: what a client refused for want of the API token is told to send. */
const bearerChallenge = (type: unknown) => `Bearer realm="game-catalogue"${type === "INVALID_TOKEN" ? ', error="invalid_token"' : ""}`;

/** What an error carries that decides its answer; it may have crossed the broker as plain data. */
interface ErrorLike {
	name?: string;
	message?: string;
	code?: unknown;
	status?: unknown;
	type?: unknown;
	data?: unknown;
}

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
		case err.type === "entity.too.large":
			return { status: 413, body: { msg: texts.bodyTooLarge } };
		// moleculer-web's, for the route's rate limit and for an origin CORS_ORIGINS does not list.
		case err.name === "RateLimitExceeded":
			return { status: 429, body: { msg: texts.tooManyRequests } };
		case err.name === "ForbiddenError" && err.type === "ORIGIN_NOT_ALLOWED":
			return { status: 403, body: { msg: texts.originNotAllowed } };
		case err.code === 401:
			return { status: 401, body: { msg: texts.tokenRequired }, headers: { "WWW-Authenticate": bearerChallenge(err.type) } };
		case err.name === "NotFoundError":
			return { status: 404, body: { msg: texts.notFound } };
		case err.name === "RequestTimeoutError":
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
