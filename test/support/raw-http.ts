import { request, type IncomingHttpHeaders } from "node:http";

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
