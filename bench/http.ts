/** One answer as it came over the wire: what the ceiling has to repeat byte for byte. */
export interface Answer {
	status: number;
	contentType: string;
	body: Buffer;
}

export type Method = "GET" | "POST" | "PUT";

/** An error's message, with its cause's: fetch says only "fetch failed", the cause says why. */
export const describeError = (err: unknown) =>
	err instanceof Error ? (err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message) : String(err);

/**
 * One request to 127.0.0.1, bounded by `timeoutMs` (a hung server fails the call, not the
 * benchmark). It asks for the answer uncompressed, as autocannon's scenarios do: fetch would ask
 * for br and gzip, and the growth runs would time compression (docs/caching.md).
 */
export async function send(base: string, method: Method, path: string, body?: string, timeoutMs = 30_000): Promise<Answer> {
	const identity = { "Accept-Encoding": "identity" };
	const response = await fetch(base + path, {
		method,
		headers: body === undefined ? identity : { ...identity, "Content-Type": "application/json" },
		body,
		signal: AbortSignal.timeout(timeoutMs),
	});
	return {
		status: response.status,
		contentType: response.headers.get("content-type") ?? "",
		body: Buffer.from(await response.arrayBuffer()),
	};
}

/** The JSON of a 200, or an error naming the request and what came back instead. */
export async function sendJson<T>(base: string, method: Method, path: string, body?: unknown): Promise<T> {
	const answer = await send(base, method, path, body === undefined ? undefined : JSON.stringify(body));
	if (answer.status !== 200) throw new Error(`${method} ${path} answered ${answer.status} ${answer.body.toString().slice(0, 300)}`);
	return JSON.parse(answer.body.toString()) as T;
}

/** Runs `task(0)` to `task(count - 1)` with at most `concurrency` in flight; the first failure stops it. */
export async function inPool(count: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
	let next = 0;
	let failed = false;
	const worker = async () => {
		while (!failed && next < count) {
			const index = next++;
			try {
				await task(index);
			} catch (err) {
				failed = true;
				throw err;
			}
		}
	};
	await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}
