/**
 * What the OpenAPI document says of sign-in: the schemes the running gateway accepts, and which
 * operations need them (the very rule the gateway applies: services/api.routes.ts needOf).
 */
import { texts } from "../catalogue/errors";
import type { SignIn } from "../config/config";
import type { Need } from "../sign-in/sign-in";
import type { JsonSchema } from "./json-schema";

/** The gateway's sign-in, as the document describes it. */
export interface SignInDoc {
	/** Whether API_TOKEN is set. */
	apiToken: boolean;
	/** The identity provider (AUTH_*), if any. */
	provider: SignIn | null;
	/** What a request through an alias needs of its sender. */
	need(alias: { method: string; action: string }): Need;
}

/** The methods that change the catalogue (POST /author is a search): with API_TOKEN or sign-in set they need it. */
export const WRITE_METHODS: ReadonlySet<string> = new Set(["PUT", "DELETE"]);

const failure = (description: string, messages: string[], headers: JsonSchema): JsonSchema => ({
	description,
	headers,
	content: {
		"application/json": {
			schema: { $ref: "#/components/schemas/Failure" },
			...(messages.length === 1
				? { example: { msg: messages[0] } }
				: { examples: Object.fromEntries(messages.map(text => [text, { summary: text, value: { msg: text } }])) }),
		},
	},
});

const challenge = { "WWW-Authenticate": { description: "The Bearer challenge (RFC 6750).", schema: { type: "string" } } };

/** The answers of a refused sender, referred to by the operations that check senders; none when no operation does. */
export function signInResponses({ apiToken, provider }: SignInDoc): Record<string, JsonSchema> {
	if (!apiToken && !provider) return {};
	return {
		Unauthorized: failure(
			provider
				? "No bearer token, or one that is not accepted (expired, for another audience, not signed by the identity provider): sign in again."
				: "A PUT or DELETE without the right `Authorization: Bearer <token>`, when the gateway runs with API_TOKEN.",
			provider ? [texts.signInRequired, texts.tokenNotAccepted] : [texts.tokenRequired],
			challenge,
		),
		...(provider && {
			Forbidden: failure(
				`A signed-in user without the role \`${provider.writeRole}\` (in the token's \`${provider.rolesClaim}\`).`,
				[texts.writeRoleRequired.replace("{role}", provider.writeRole)],
				challenge,
			),
		}),
	};
}

/**
 * The schemes the running gateway accepts: API_TOKEN as a bearer token when it is set, the provider's access tokens (JWTs) when
 * sign-in is on. With neither there is none, and the docs page has no "Authorize".
 */
export function securitySchemes({ apiToken, provider }: SignInDoc): Record<string, JsonSchema> {
	return {
		...(apiToken && {
			bearerToken: {
				type: "http",
				scheme: "bearer",
				description: "API_TOKEN, which this gateway runs with: PUT and DELETE need it.",
			},
		}),
		...(provider && {
			signIn: {
				type: "http",
				scheme: "bearer",
				bearerFormat: "JWT",
				description:
					`An access token from the identity provider ${provider.issuer} for the audience \`${provider.audience}\`. ` +
					`PUT and DELETE need the role \`${provider.writeRole}\` in its \`${provider.rolesClaim}\` claim` +
					(provider.reads === "user" ? "; reads need a signed-in user." : "; reads are public."),
			},
		}),
	};
}

/**
 * An operation's `security`, and the refusals it may answer: only where the running gateway asks a credential for it (a lock on the
 * docs page), so with neither API_TOKEN nor sign-in no operation has one.
 */
export function operationSecurity(
	sign: SignInDoc,
	method: string,
	action: string,
): { security?: JsonSchema[]; responses: Record<number, JsonSchema> } {
	const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
	const need = sign.need({ method: method.toUpperCase(), action });
	if (need === "nothing") return { responses: {} };
	const schemes = [...(sign.apiToken ? ["bearerToken"] : []), ...(sign.provider ? ["signIn"] : [])];
	return {
		security: schemes.map(name => ({ [name]: [] })),
		responses: need === "writer" && sign.provider ? { 401: ref("Unauthorized"), 403: ref("Forbidden") } : { 401: ref("Unauthorized") },
	};
}
