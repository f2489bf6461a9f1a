/** A scheme and `//`: where a URI's authority, and any credentials in it, begin. */
const SCHEME = /^([a-z][a-z0-9+.-]*:\/\/)(.*)$/is;

/** Where a list of URIs (`nats://a:4222,nats://b:4222`) has its next URI. */
const NEXT_URI = /,(?=[a-z][a-z0-9+.-]*:\/\/)/i;

/** What is shown of a value that is not a URI: it cannot be told apart from a secret. */
export const HIDDEN = "<hidden>";

/** A URI cut where its credentials are: the authority ends at its last `@`, wherever an unescaped `@` sits. */
interface UriParts {
	scheme: string;
	/** The user of `user:secret@`; none for a bare `secret@` (NATS's token login). */
	user?: string;
	/** What follows the user's colon, or the whole of a bare `secret@`; none without an `@`. */
	secret?: string;
	/** Everything after the `@` (or after `scheme://` when there is none). */
	rest: string;
}

function partsOf(uri: string): UriParts | undefined {
	const [, scheme, rest] = SCHEME.exec(uri) ?? [];
	if (scheme === undefined) return undefined;
	const at = rest.lastIndexOf("@");
	if (at < 0) return { scheme, rest };
	const credentials = rest.slice(0, at);
	const colon = credentials.indexOf(":");
	if (colon < 0) return { scheme, secret: credentials, rest: rest.slice(at + 1) };
	return { scheme, user: credentials.slice(0, colon), secret: credentials.slice(colon + 1), rest: rest.slice(at + 1) };
}

/** One URI with its credentials hidden: `user:password` keeps its user, a bare `token@` is a secret as a whole. */
function hideOne(uri: string): string {
	const parts = partsOf(uri);
	if (!parts) return HIDDEN;
	if (parts.secret === undefined) return uri;
	return `${parts.scheme}${parts.user === undefined ? "***" : `${parts.user}:***`}@${parts.rest}`;
}

/**
 * The URIs with every password and token replaced by `***`, users and hosts kept. Never parsed as a URL (several hosts, `mongodb+srv`
 * or an unescaped `@` defeat URL parsers); fails closed: a value without a `scheme://` is shown as `<hidden>`.
 */
export function hideCredentials(uris: string): string {
	return uris.split(NEXT_URI).map(hideOne).join(",");
}

/** Option names whose values are secrets, or hold them (TLS keys, NATS's nkey seed or credentials, the logger's list of secrets). */
const SECRET_NAME = /pass|token|secret|credential|creds|seed|nkey|authenticator|redact|^(key|cert|tls|sasl)$/i;

/** A copy of JSON `value` fit to leave the node: credentials in URIs hidden, and every option named like a secret replaced by `***`. */
export function withoutSecrets(value: unknown): unknown {
	if (typeof value === "string") return value.includes("://") ? hideCredentials(value) : value;
	if (Array.isArray(value)) return value.map(withoutSecrets);
	if (typeof value !== "object" || value === null) return value;
	return Object.fromEntries(Object.entries(value).map(([name, field]) => [name, SECRET_NAME.test(name) ? "***" : withoutSecrets(field)]));
}

/** The passwords and tokens in these URIs, as written and decoded: what the log must never show (lib/observability/observability.ts). */
export function secretsIn(...uris: (string | null | undefined)[]): string[] {
	const secrets = uris.flatMap(list =>
		(list ?? "").split(NEXT_URI).flatMap(uri => {
			const { scheme, user, secret } = partsOf(uri) ?? {};
			// A lone user is NATS's token; elsewhere (a MongoDB x509 user) it is only a name.
			if (scheme === undefined || secret === undefined || (user === undefined && !/^(nats|tls):/i.test(scheme))) return [];
			return [secret, safeDecode(secret)];
		}),
	);
	return [...new Set(secrets.filter(Boolean))];
}

function safeDecode(text: string): string {
	try {
		return decodeURIComponent(text);
	} catch {
		return text;
	}
}
