import { createServer, type RequestListener, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { ConnectionBounds } from "../config/config";
import { texts } from "../catalogue/errors";
import { rateLimitClient } from "./rate-limit";

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
			// Node's own check answers a bare 400, with no body and before any listener logs it.
			requireHostHeader: false,
		},
		noteAnswers(hostRequired(handler)),
	);
	// An `Expect` other than 100-continue is served as if it were not there, which RFC 9110 allows, rather than Node's bare 417:
	// as a request, so that every listener of one (the headers, the log) hears of it.
	server.on("checkExpectation", (req, res) => server.emit("request", req, res));
	server.keepAliveTimeout = bounds.keepAliveTimeoutMs;
	server.maxConnections = bounds.total;
	return server;
}

/** The answer under way on each connection of the gateway's server, from its request until it is sent. */
const answering = new WeakMap<Duplex, ServerResponse>();

/**
 * Whether an answer has begun on `socket` (an event stream, say, whose request's body never came): a failure of the connection
 * cannot be answered on it then, where another status line would land inside that answer.
 */
export function answerBegun(socket: Duplex): boolean {
	return answering.get(socket)?.headersSent === true;
}

/** `handler`, with each answer noted in `answering` until it is sent. */
function noteAnswers(handler: RequestListener): RequestListener {
	return (req, res) => {
		answering.set(req.socket, res);
		// A pipelined request's answer may be noted before the one ahead of it is sent.
		res.once("finish", () => answering.get(req.socket) === res && answering.delete(req.socket));
		handler(req, res);
	};
}

/** HTTP/1.1 requires a Host header (RFC 9112, section 3.2): a request without one is a 400 with a `msg`, logged as any other. */
function hostRequired(handler: RequestListener): RequestListener {
	return (req, res) => {
		if (req.headers.host !== undefined || req.httpVersion !== "1.1") return handler(req, res);
		const body = JSON.stringify({ msg: texts.hostRequired });
		res.writeHead(400, {
			"Content-Type": "application/json; charset=utf-8",
			"Content-Length": Buffer.byteLength(body),
			Connection: "close",
		});
		res.end(body);
	};
}

/**
 * Holds each client address (an IPv6 client's /64, as the rate limit counts it) to `perClient` connections at once: one more is answered 429 and closed before any of its request is
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
		const client = rateLimitClient(address);
		const count = open.get(client) ?? 0;
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
		open.set(client, count + 1);
		socket.once("close", () => {
			const left = open.get(client)! - 1;
			if (left > 0) open.set(client, left);
			else open.delete(client);
		});
	});
}
