import { createServer, type RequestListener, type Server } from "node:http";
import type { Socket } from "node:net";
import type { ConnectionBounds } from "../config/config";
import { texts } from "../catalogue/errors";

/** How often Node checks the connections' headers and request timeouts (its default, 30 s, would let headers take up to 35 s). */
const CHECK_EVERY_MS = 1000;

/**
 * The gateway's HTTP server, bounded (docs/security.md, "Connections"): a request's headers must arrive within
 * `headersTimeoutMs` and the whole request within `requestTimeoutMs` (then a 408, lib/http/http-guards.ts), an idle kept-alive
 * connection is closed after `keepAliveTimeoutMs`, and past `total` connections Node closes each new one at once.
 */
export function boundedServer(bounds: ConnectionBounds, requestTimeoutMs: number, handler: RequestListener): Server {
	const server = createServer(
		{
			headersTimeout: bounds.headersTimeoutMs,
			requestTimeout: requestTimeoutMs,
			connectionsCheckingInterval: CHECK_EVERY_MS,
		},
		handler,
	);
	server.keepAliveTimeout = bounds.keepAliveTimeoutMs;
	server.maxConnections = bounds.total;
	return server;
}

/**
 * Holds each client address to `perClient` connections at once: one more is answered 429 and closed before any of its request is
 * read. The addresses `exempt` names are not counted: a trusted proxy carries many clients (RATE_LIMIT counts those one by one).
 * `refused` hears of each, for the log.
 */
export function limitConnectionsPerClient(
	server: Server,
	perClient: number,
	exempt: (address: string) => boolean,
	refused: (address: string) => void,
): void {
	const open = new Map<string, number>();
	// Before Node's own listener: a refused socket is paused first, so its request is never parsed.
	server.prependListener("connection", (socket: Socket) => {
		const address = socket.remoteAddress ?? "";
		if (exempt(address)) return;
		const count = open.get(address) ?? 0;
		if (count >= perClient) {
			socket.pause();
			const body = JSON.stringify({ msg: texts.tooManyConnections });
			socket.write(
				`HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
					`Retry-After: 1\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
			);
			// Closed once written, whether the client reads or not.
			socket.destroySoon();
			refused(address);
			return;
		}
		open.set(address, count + 1);
		socket.once("close", () => {
			const left = open.get(address)! - 1;
			if (left > 0) open.set(address, left);
			else open.delete(address);
		});
	});
}
