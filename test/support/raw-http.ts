import { request, type IncomingHttpHeaders } from "node:http";
import { connect } from "node:net";

export interface RawAnswer {
	status: number;
	headers: IncomingHttpHeaders;
	body: Buffer;
}

/**
 * A request with exactly these headers, its body as received. fetch would add headers of its own
 * (an Accept-Encoding, and Cache-Control: no-cache beside any If-None-Match) and decode the body.
 */
export function rawRequest(url: string, method = "GET", headers: Record<string, string> = {}, body?: unknown): Promise<RawAnswer> {
	const payload = body === undefined ? undefined : JSON.stringify(body);
	const sentHeaders = payload === undefined ? headers : { "Content-Type": "application/json", ...headers };
	return new Promise((resolve, reject) => {
		const sent = request(url, { method, headers: sentHeaders }, response => {
			const chunks: Buffer[] = [];
			response.on("data", chunk => chunks.push(chunk));
			response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }));
			response.on("error", reject);
		});
		sent.on("error", reject);
		sent.end(payload);
	});
}

/**
 * The status, headers and first bytes of an answer that may never end (a stream), asked with exactly these headers; then the request
 * is ended. Rejects when neither a byte nor the answer's end comes within `ms`.
 */
export function rawStart(
	url: string,
	headers: Record<string, string> = {},
	ms = 5000,
): Promise<Omit<RawAnswer, "body"> & { first: string }> {
	return new Promise((resolve, reject) => {
		const sent = request(url, { headers, timeout: ms }, response => {
			const done = (first: string) => {
				resolve({ status: response.statusCode!, headers: response.headers, first });
				sent.destroy();
			};
			response.once("data", (chunk: Buffer) => done(chunk.toString()));
			response.once("end", () => done(""));
		});
		sent.on("timeout", () => sent.destroy(new Error(`no byte of ${url} within ${ms} ms`)));
		sent.on("error", reject);
		sent.end();
	});
}

/** What the server at `url` answers to `text`, sent as it is on a connection of its own, up to its close; rejects after `ms`. */
export function rawExchange(url: string, text: string, ms = 5000): Promise<string> {
	const { hostname, port } = new URL(url);
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		const socket = connect(Number(port), hostname, () => socket.end(text));
		socket.setTimeout(ms, () => socket.destroy(new Error(`${url} did not close within ${ms} ms`)));
		socket.on("data", (chunk: Buffer) => chunks.push(chunk));
		socket.on("close", () => resolve(Buffer.concat(chunks).toString()));
		socket.on("error", reject);
	});
}
