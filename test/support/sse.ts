/** A Server-Sent Events client for tests: the events of a stream as they arrive, parsed as the EventSource standard says. */
import type { Change } from "../../lib/feed/changes";

/** An update of one game as the games feed keeps it, at `seq`. */
export const gameChange = (seq: number, title = `Title ${seq}`): Change => ({
	id: `change-${seq}`,
	kind: "game",
	type: "updated",
	seq,
	at: "2026-11-26T16:00:00.000Z",
	requestId: null,
	record: { id: "game-1", title },
});

export interface SseEvent {
	event: string;
	id?: string;
	data: any;
}

export interface SseStream {
	status: number;
	headers: Headers;
	/** The answer's JSON when it is not a stream (a refusal). */
	refusal?: { msg: string };
	/** Every event read so far. */
	events: SseEvent[];
	/** The first event after those already taken that `matches`, waiting up to `ms`. */
	next(matches?: (event: SseEvent) => boolean, ms?: number): Promise<SseEvent>;
	/** Whether the server has ended the stream. */
	ended(): boolean;
	close(): void;
}

export async function openStream(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
	const abort = new AbortController();
	const response = await fetch(url, { headers: { Accept: "text/event-stream", ...headers }, signal: abort.signal });
	const events: SseEvent[] = [];
	let taken = 0;
	let done = false;
	let wake: (() => void) | undefined;
	const base = { status: response.status, headers: response.headers, events, close: () => abort.abort(), ended: () => done };
	if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
		const refusal = (await response.json()) as { msg: string };
		return { ...base, refusal, next: () => Promise.reject(new Error(`not a stream: ${JSON.stringify(refusal)}`)) };
	}
	void (async () => {
		const decoder = new TextDecoder();
		let text = "";
		try {
			for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
				text += decoder.decode(chunk, { stream: true });
				for (let end = text.indexOf("\n\n"); end >= 0; end = text.indexOf("\n\n")) {
					const block = text.slice(0, end);
					text = text.slice(end + 2);
					const fields = block.split("\n").filter(line => line !== "" && !line.startsWith(":"));
					const field = (name: string) =>
						fields
							.find(line => line.startsWith(`${name}:`))
							?.slice(name.length + 1)
							.trimStart();
					const data = field("data");
					if (data === undefined) continue;
					events.push({ event: field("event") ?? "message", id: field("id"), data: JSON.parse(data) });
					wake?.();
				}
			}
		} catch {
			// Closed by the test.
		}
		done = true;
		wake?.();
	})();
	async function next(matches: (event: SseEvent) => boolean = () => true, ms = 5000): Promise<SseEvent> {
		const until = Date.now() + ms;
		for (;;) {
			while (taken < events.length) {
				const event = events[taken++];
				if (matches(event)) return event;
			}
			if (done) throw new Error(`the stream ended; events: ${JSON.stringify(events)}`);
			const left = until - Date.now();
			if (left <= 0) throw new Error(`no such event within ${ms} ms; events: ${JSON.stringify(events)}`);
			await new Promise<void>(resolve => {
				wake = resolve;
				setTimeout(resolve, left);
			});
		}
	}
	return { ...base, next };
}
