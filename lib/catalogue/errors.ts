import { Errors } from "moleculer";
import type { Context, Service, ServiceHooks } from "moleculer";

type ServiceHooksError = NonNullable<ServiceHooks["error"]>;

/** Every error text the service sends. The documented ones are quoted from the interface, once. */
export const texts = {
	authorNotFound: "There is no author with that Id",
	authorHasGames: "There are games related to this author",
	categoryNotFound: "There is no category with that Id",
	categoryHasGames: "There are games related to this category",
	gameNotFound: "There is no game with that Id",
	fetchAuthors: "Error fetching authors",
	fetchAuthor: "Error fetching author",
	createAuthor: "Error creating author",
	updateAuthor: "Error updating author",
	deleteAuthor: "Error deleting author",
	fetchAuthorsPage: "Error fetching authors page",
	fetchGames: "Error fetching games",
	fetchGamesPage: "Error fetching games page",
	createGame: "Error creating game",
	updateGame: "Error updating game",
	deleteGame: "Error deleting game",
	fetchCategories: "Error fetching categories",
	fetchCategory: "Error fetching category",
	createCategory: "Error creating category",
	updateCategory: "Error updating category",
	deleteCategory: "Error deleting category",
	countGames: "Error counting games",
	invalidTitlePattern: "The 'title' filter is not a valid pattern",
	complexTitlePattern: "The 'title' filter is too complex a pattern",
	unprintableText: "The '{field}' field must not contain control characters or invalid Unicode.",
	malformedJson: "The request body is not valid JSON",
	bodyNotDecoded: "The request body is not in the Content-Encoding it names",
	bodyNotUtf8: "The request body is not UTF-8 text: send it as UTF-8",
	bodyNotJson: "The request body is read as JSON only: send it with Content-Type: application/json",
	bodyTooLarge: "The request body is too large",
	bodyTooDeep: "The request body is nested too deeply",
	urlTooLong: "The request URL is too long",
	headersTooLarge: "The request headers are too large",
	malformedRequest: "The request is not valid HTTP",
	hostRequired: "The request has no Host header, which HTTP/1.1 requires",
	requestTooSlow: "The request took too long to arrive",
	tooManyRequests: "Too many requests from this address; try again later",
	tooManyConnections: "Too many connections are open from this address; close one before opening another",
	tokenRequired: "Changing the catalogue needs the API token: send Authorization: Bearer <token>",
	signInRequired: "Sign in first: send the identity provider's access token as Authorization: Bearer <token>",
	tokenNotAccepted: "The access token was not accepted: sign in again and send the new token as Authorization: Bearer <token>",
	writeRoleRequired: "Changing the catalogue needs the role '{role}', which this sign-in does not have",
	providerUnreachable: "The identity provider cannot be reached to check the sign-in; try again later",
	signInMisconfigured:
		"Sign-in is not set up correctly on this gateway: its operator must correct the AUTH_* settings (its log says how)",
	originNotAllowed: "Requests from this origin are not allowed",
	notFound: "Not found",
	methodNotAllowed: "This path does not answer {method}; it answers {allowed}",
	createdWithPut: "Records are created with PUT {path}, not POST; this path answers {allowed}",
	unknownSortProperty: "The 'pageable.sort' property '{actual}' is not one of {expected}.",
	unavailable: "The service is temporarily unavailable",
	writesRefused: "The store cannot store writes",
	internal: "Internal server error",
	importedTwice: "A batch of imported records names one id twice",
	importedMeanwhile: "A record with an id of the batch was stored meanwhile",
	notAPosition: "The Last-Event-ID is not a position /changes gave: open /changes without it to follow from now",
	streamsPerClient: "Too many change streams are open from this address; close one before opening another",
	streamsFull: "The gateway holds as many change streams as it may; try again later",
	startAgain:
		"The changes after your position are no longer kept: start again from a full read (GET /category, /author, /game), then follow from this event's id.",
	restored:
		"The catalogue's records of this kind were restored from a backup, undoing the changes after it: start again from a full read (GET /category, /author, /game), then apply the changes after this message.",
	outboxStalled: "The change feed has not been published for {seconds} s",
	feedOff: "This catalogue keeps no change feed (CHANGE_FEED=off): follow it by reading the lists again",
	unknownKinds: "The 'kinds' field is '{actual}'; it must list kinds of record (category, author, game), separated by commas.",
} as const;

export type ErrorText = (typeof texts)[keyof typeof texts];

/**
 * A business failure: status 400 and the text as `msg`. Named as moleculer's MoleculerClientError, so another node
 * restores it as one, with the same type and data, instead of as a plain Error.
 */
export class CatalogueError extends Errors.MoleculerClientError {
	constructor(text: ErrorText, type: string, data?: unknown) {
		super(text, 400, type, data);
		Object.defineProperty(this, "name", { value: "MoleculerClientError", configurable: true, writable: true });
	}
}

export const STORAGE_FAILURE = "STORAGE_FAILURE";

/** The type of `writesRefused`, which readiness tells apart from a store that does not answer. */
export const WRITES_REFUSED = "WRITES_REFUSED";

/** A store that answers reads but refuses writes (`reason`: the last refusal, such as ENOSPC). */
export const writesRefused = (reason: string) =>
	new Errors.MoleculerRetryableError(`${texts.writesRefused}: ${reason}`, 503, WRITES_REFUSED);

export const notFound = (text: ErrorText) => () => new CatalogueError(text, "NOT_FOUND");
export const inUse = (text: ErrorText) => new CatalogueError(text, "IN_USE");
export const storageFailure = (text: ErrorText) => new CatalogueError(text, STORAGE_FAILURE);
/** An import batch (mixins/transfer.mixin.ts) that names `id` twice: which one to keep is not the service's guess. */
export const duplicateInBatch = (id: string) => new CatalogueError(texts.importedTwice, "DUPLICATE_ID", { id });
/** An import batch with an id that another writer (an import at the same time) stored between the batch's look-up and its insert. */
export const storedMeanwhile = () => new CatalogueError(texts.importedMeanwhile, "STORED_MEANWHILE");

/** The type of the body parser's error for a body that is not UTF-8 (lib/http/http-guards.ts utf8Only). */
export const NOT_UTF8 = "entity.not.utf8";
/** The type of the 405 of a method a path does not answer (lib/http/methods.ts); its data's `allow` is the Allow header. */
export const METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED";
/** 405 for `method` on a path that answers `allowed`; a POST where `collection` creates with PUT is told so. */
export function methodNotAllowed(method: string, allowed: string[], collection?: string) {
	const allow = allowed.join(", ");
	const text =
		method === "POST" && collection !== undefined
			? texts.createdWithPut.replace("{path}", collection)
			: texts.methodNotAllowed.replace("{method}", method);
	return new Errors.MoleculerClientError(text.replace("{allowed}", allow), 405, METHOD_NOT_ALLOWED, { allow });
}

/** A request that needs a bearer token and has none (`NO_TOKEN`) or an unusable one (`INVALID_TOKEN`): 401. */
export const tokenRefused = (text: ErrorText, sent: boolean) =>
	new Errors.MoleculerClientError(text, 401, sent ? "INVALID_TOKEN" : "NO_TOKEN");
/** A signed-in user without the role that writes: 403. */
export const NO_WRITE_ROLE = "NO_WRITE_ROLE";
export const writeRoleRequired = (role: string) =>
	new Errors.MoleculerClientError(texts.writeRoleRequired.replace("{role}", role), 403, NO_WRITE_ROLE);
export const SIGN_IN_MISCONFIGURED = "SIGN_IN_MISCONFIGURED";
/** The provider answers, but not as AUTH_* says it should: asking again will not help until the configuration changes. */
export const signInMisconfigured = (reason: string) =>
	new Errors.MoleculerError(texts.signInMisconfigured, 503, SIGN_IN_MISCONFIGURED, { reason });
/** No token can be checked until the identity provider answers again, at `retryAt`: 503 with Retry-After; `reason` is for the log. */
export const PROVIDER_UNREACHABLE = "IDENTITY_PROVIDER_UNREACHABLE";
export const providerUnreachable = (retryAt: number, reason: string) =>
	new Errors.MoleculerError(texts.providerUnreachable, 503, PROVIDER_UNREACHABLE, { retryAt, reason });

/** GET /changes past the streams one client may hold (429), or past those the gateway may hold (503, with Retry-After). */
export const STREAMS_FULL = "STREAMS_FULL";
export const tooManyStreams = (ofClient: boolean) =>
	ofClient
		? new Errors.MoleculerClientError(texts.streamsPerClient, 429, "STREAMS_PER_CLIENT")
		: new Errors.MoleculerError(texts.streamsFull, 503, STREAMS_FULL);
/** A service whose changes wait to be published longer than they may (mixins/change-relay.mixin.ts): readiness says so. */
export const OUTBOX_STALLED = "OUTBOX_STALLED";
export const outboxStalled = (seconds: number, reason: string) =>
	new Errors.MoleculerRetryableError(`${texts.outboxStalled.replace("{seconds}", String(seconds))}: ${reason}`, 503, OUTBOX_STALLED);
/** GET /changes and `<service>.changes` on a catalogue started with CHANGE_FEED=off: there is no feed to follow. */
export const feedOff = () => new Errors.MoleculerClientError(texts.feedOff, 404, "FEED_OFF");
export const notAPosition = () => new CatalogueError(texts.notAPosition, "NOT_A_POSITION");

export interface FailureTexts {
	/** The error an unknown id becomes. */
	notFound: () => CatalogueError;
	/** Per action: the text a storage (or downstream) failure becomes. */
	failures: Record<string, ErrorText>;
}

/**
 * moleculer's errors for a call that never reached its service or got no answer in time: the request may be sent again,
 * so they pass on and the gateway answers 503 or 504 (lib/http/failures.ts), not 400.
 */
const UNREACHABLE = new Set([
	"ServiceNotFoundError",
	"ServiceNotAvailableError",
	"RequestRejectedError",
	"RequestTimeoutError",
	"RequestSkippedError",
	"QueueIsFullError",
]);

/** Whether an error (of any shape, possibly rebuilt from another node) is one of those. */
export const isUnreachable = (name: unknown): boolean => UNREACHABLE.has(String(name));

/**
 * A service's error hooks: moleculer-db's EntityNotFoundError becomes the entity's not-found text; business failures and
 * unreachable services pass; anything else (a storage failure) becomes the action's documented failure text.
 */
export function errorHooks({ notFound: unknownId, failures }: FailureTexts): ServiceHooksError {
	const hooks: ServiceHooksError = {};
	for (const [action, text] of Object.entries(failures)) {
		hooks[action] = function (this: Service, ctx: Context, err: Error) {
			if (err.name === "EntityNotFoundError") throw unknownId();
			if (err instanceof Errors.MoleculerClientError && err.type !== STORAGE_FAILURE) throw err;
			if (isUnreachable(err.name)) throw err;
			// With the request's id (lib/http/access-log.ts logs it on the gateway): the failure is found from it.
			this.logger.error({ requestId: ctx.requestID ?? undefined }, `${ctx.action?.name ?? action} failed:`, err.message);
			throw storageFailure(text);
		};
	}
	return hooks;
}
