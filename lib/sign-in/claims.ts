/** What a verified token says about its bearer: its subject and its roles, wherever the identity provider puts them. */

/** A claims object: a token's payload, or an object within it. */
type Claims = Record<string, unknown>;

const isClaims = (value: unknown): value is Claims => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The value at a dotted path such as `realm_access.roles`. A claim's own name may hold dots (Auth0's
 * namespaced `https://catalogue.example.com/roles`), so at each level the longest name present wins.
 */
export function claimAt(claims: unknown, path: string): unknown {
	const parts = path.split(".");
	let value: unknown = claims;
	let next = 0;
	while (next < parts.length) {
		if (!isClaims(value)) return undefined;
		const here = value;
		const end = [...Array(parts.length - next).keys()]
			.map(offset => parts.length - offset)
			.find(last => Object.hasOwn(here, parts.slice(next, last).join(".")));
		if (end === undefined) return undefined;
		value = here[parts.slice(next, end).join(".")];
		next = end;
	}
	return value;
}

/**
 * The roles a token grants: the claim's array of strings, or a string of space-separated names (as
 * OAuth's `scope`); anything else grants none.
 */
export function rolesOf(claims: unknown, path: string): string[] {
	const value = claimAt(claims, path);
	if (typeof value === "string") return value.split(/\s+/).filter(Boolean);
	if (Array.isArray(value)) return value.filter((role): role is string => typeof role === "string");
	return [];
}
