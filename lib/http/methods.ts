/**
 * Which methods a path answers, read from the aliases moleculer-web made of the alias tables (services/api.routes.ts): the 405
 * of a method a path does not answer, and its `Allow` header, come from the very table that routes the requests.
 */
import type { IncomingMessage } from "node:http";
import { methodNotAllowed } from "../catalogue/errors";

/** Whether `method` reads: HEAD is a GET whose body is not sent (RFC 9110), so it takes a GET's query, conditions and tags. */
export const isRead = (method: string | undefined): boolean => method === "GET" || method === "HEAD";

/** `table` with a HEAD alias beside each GET one, to the same action: node's server leaves a HEAD answer's body out. */
export function withHead(table: Readonly<Record<string, string>>): Record<string, string> {
	const heads = Object.entries(table)
		.filter(([route]) => route.startsWith("GET "))
		.map(([route, action]): [string, string] => [`HEAD ${route.slice("GET ".length)}`, action]);
	return { ...table, ...Object.fromEntries(heads) };
}

/**
 * `path` with each segment that is not percent-encoded UTF-8 (`100%`, `%ZZ`, `%ED%A0%80`) escaped, so that an alias reads it as the
 * text it is: moleculer-web would answer a bare 400 "Bad request", where an id the catalogue cannot read is an unknown one and the
 * segment of `GET /game/{id}` is ignored (docs/http.md).
 */
export function literalSegments(path: string): string {
	if (!path.includes("%")) return path;
	const literal = (segment: string) => {
		try {
			decodeURIComponent(segment);
			return segment;
		} catch {
			return segment.replaceAll("%", "%25");
		}
	};
	return path.split("/").map(literal).join("/");
}

/** An alias as moleculer-web keeps it, in its service's `aliases`. */
export interface GatewayAlias {
	method: string;
	fullPath: string;
	match(url: string): unknown;
}

/** What moleculer-web notes on a request it routes: its service, and the path without the query or a trailing slash. */
type RoutedRequest = IncomingMessage & { $service?: { aliases?: GatewayAlias[] }; parsedUrl?: string };

/** The methods aliased at `path`, each once, in alphabetical order; none for a path no alias has. */
export const methodsAt = (aliases: readonly GatewayAlias[], path: string): string[] =>
	methodsOf(aliases.filter(alias => alias.match(path)));
const methodsOf = (aliases: readonly GatewayAlias[]) => [...new Set(aliases.map(alias => alias.method))].sort();

/** Whether the request's method is one its path answers: a request no alias takes goes on to the 404 or the 405. */
export function isRouted(req: IncomingMessage): boolean {
	const { $service, parsedUrl, method } = req as RoutedRequest;
	return parsedUrl === undefined || methodsAt($service?.aliases ?? [], parsedUrl).includes(method ?? "");
}

/**
 * The answer to a request that no alias took (moleculer-web's NotFoundError): a 405 naming the methods its path answers, when
 * some alias has the path; `err` otherwise, a 404. A POST on a collection that takes PUT is told that PUT creates. OPTIONS is
 * left to CORS (a preflight, or the 404 of lib/http/http-guards.ts optionsOnlyAsPreflight).
 */
export function unrouted(aliases: readonly GatewayAlias[], req: IncomingMessage, err: Error): Error {
	const { parsedUrl, method } = req as RoutedRequest;
	if (err.name !== "NotFoundError" || parsedUrl === undefined || !method || method === "OPTIONS") return err;
	const here = aliases.filter(alias => alias.match(parsedUrl));
	if (here.length === 0) return err;
	const allowed = methodsOf(here);
	const collection = here.find(alias => alias.method === "PUT" && !alias.fullPath.includes(":"))?.fullPath;
	return methodNotAllowed(method, allowed, collection);
}
