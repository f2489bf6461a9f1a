import { Errors } from "moleculer";
import ApiGateway from "moleculer-web";
import { CatalogueError, texts } from "../../lib/catalogue/errors";
import { toFailure } from "../../lib/http/failures";

/** An error as another node hands it back: a plain Error carrying the original's fields. */
function fromAnotherNode(err: Errors.MoleculerError): Error {
	return Object.assign(new Error(err.message), { name: err.name, code: err.code, type: err.type, data: err.data });
}

describe("toFailure", () => {
	test("a business failure answers 400 with its text", () => {
		expect(toFailure(new CatalogueError(texts.authorNotFound, "NOT_FOUND"))).toEqual({
			status: 400,
			body: { msg: "There is no author with that Id" },
		});
	});

	test("a business failure that crossed the broker keeps its answer", () => {
		expect(toFailure(fromAnotherNode(new CatalogueError(texts.authorHasGames, "IN_USE")))).toEqual({
			status: 400,
			body: { msg: "There are games related to this author" },
		});
	});

	test("a validation failure answers 400 naming the first field, with every field listed", () => {
		const err = new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", [
			{ type: "required", field: "name", message: "The 'name' field is required.", actual: undefined },
			{ type: "stringMax", field: "nationality", message: "The 'nationality' field is too long.", actual: "x" },
		]);
		expect(toFailure(err)).toEqual({
			status: 400,
			body: {
				msg: "The 'name' field is required.",
				errors: [
					{ field: "name", message: "The 'name' field is required.", type: "required" },
					{ field: "nationality", message: "The 'nationality' field is too long.", type: "stringMax" },
				],
			},
		});
	});

	test("an unknown route answers 404", () => {
		expect(toFailure(new ApiGateway.Errors.NotFoundError("NOT_FOUND"))).toEqual({ status: 404, body: { msg: texts.notFound } });
	});

	test("malformed JSON answers 400 and a too large body 413", () => {
		const parse = Object.assign(new SyntaxError("Unexpected token"), { status: 400, type: "entity.parse.failed" });
		const large = Object.assign(new Error("request entity too large"), { status: 413, type: "entity.too.large" });
		expect(toFailure(parse)).toEqual({ status: 400, body: { msg: texts.malformedJson } });
		expect(toFailure(large)).toEqual({ status: 413, body: { msg: texts.bodyTooLarge } });
	});

	test("an unavailable service answers 503 and a timeout 504", () => {
		expect(toFailure(new Errors.ServiceNotFoundError({ action: "authors.get" })).status).toBe(503);
		expect(toFailure(new Errors.ServiceNotAvailableError({ action: "authors.get" })).status).toBe(503);
		expect(toFailure(new Errors.RequestTimeoutError({ action: "authors.get" })).status).toBe(504);
		// A call its caller's time had run out for before it was made.
		expect(toFailure(new Errors.RequestSkippedError({ action: "authors.referable", nodeID: "games-1" }))).toEqual({
			status: 504,
			body: { msg: texts.unavailable },
		});
	});

	test("a node lost in the middle of a call or too busy to queue it answers 503, not its internal message", () => {
		const unavailable = { status: 503, body: { msg: texts.unavailable } };
		expect(toFailure(new Errors.RequestRejectedError({ action: "games.create", nodeID: "games-1" }))).toEqual(unavailable);
		expect(toFailure(new Errors.QueueIsFullError({ action: "games.list", nodeID: "games-1", size: 128, limit: 32 }))).toEqual(
			unavailable,
		);
	});

	test("moleculer-web's own 'service unavailable' (a route whose service was never seen) answers 503", () => {
		const fromGateway = Object.assign(new Error("Service 'categories.list' is not registered."), {
			name: "ServiceUnavailableError",
			code: 503,
		});
		expect(toFailure(fromGateway)).toEqual({ status: 503, body: { msg: texts.unavailable } });
	});

	test("moleculer-web's rate limit answers 429 and a refused origin 403, each with the catalogue's text", () => {
		expect(toFailure(new ApiGateway.Errors.RateLimitExceeded("RATE_LIMIT_EXCEEDED"))).toEqual({
			status: 429,
			body: { msg: texts.tooManyRequests },
		});
		expect(toFailure(new ApiGateway.Errors.ForbiddenError("ORIGIN_NOT_ALLOWED"))).toEqual({
			status: 403,
			body: { msg: texts.originNotAllowed },
		});
	});

	test("a write without the API token answers 401 with a Bearer challenge; a wrong token is named invalid", () => {
		const refused = (type: string) => toFailure(new Errors.MoleculerClientError(texts.tokenRequired, 401, type));
		expect(refused("NO_TOKEN")).toEqual({
			status: 401,
			body: { msg: texts.tokenRequired },
			headers: { "WWW-Authenticate": 'Bearer realm="game-catalogue"' },
		});
		expect(refused("INVALID_TOKEN").headers).toEqual({ "WWW-Authenticate": 'Bearer realm="game-catalogue", error="invalid_token"' });
	});

	test("a refused request keeps its 4xx status and text", () => {
		expect(toFailure(new Errors.MoleculerClientError(texts.urlTooLong, 414, "URL_TOO_LONG"))).toEqual({
			status: 414,
			body: { msg: texts.urlTooLong },
		});
	});

	test("anything else answers 500 without its internal message", () => {
		expect(toFailure(new TypeError("Cannot read properties of undefined (reading 'x')"))).toEqual({
			status: 500,
			body: { msg: texts.internal },
		});
		expect(toFailure(undefined)).toEqual({ status: 500, body: { msg: texts.internal } });
	});
});
