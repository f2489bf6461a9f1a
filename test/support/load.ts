import { Agent, request } from "node:http";

// A steady load of writes through the gateway, for the fault tests: every outcome is recorded with
// its timing, and every write carries a name of its own, so a failed write can be looked for. And a
// load of reads, which only keeps a gateway busy and counts its answers.

/** No answer within this is a hang. */
export const HANG_MS = 10_000;

export type Write = "author" | "game";
export type Ref = { id: string };

export interface Outcome {
	write: Write;
	/** The author's name or the game's title: unique to this write. */
	name: string;
	writer: number;
	started: number;
	ended: number;
	status?: number;
	body?: any;
	/** The socket error when no complete answer came: ECONNREFUSED, ECONNRESET, HANG... */
	error?: string;
	/** Whether its connection was ever open: a request that never connected was never read. */
	connected?: boolean;
}

const parse = (text: string) => {
	try {
		return JSON.parse(text);
	} catch {
		return text;
	}
};

/** One request, bounded by HANG_MS; `agent: false` gives it a connection of its own. */
export function send(
	base: string,
	method: string,
	path: string,
	body?: unknown,
	agent: Agent | false = false,
): Promise<Pick<Outcome, "status" | "body" | "error" | "connected">> {
	return new Promise(resolve => {
		let connected = false;
		const req = request(base + path, { method, agent, headers: { "Content-Type": "application/json" } }, res => {
			let text = "";
			res.setEncoding("utf8").on("data", chunk => (text += chunk));
			res.on("end", () => resolve({ status: res.statusCode, body: parse(text) }));
			res.on("error", (err: NodeJS.ErrnoException) => resolve({ error: `${err.code ?? err.message} mid-answer` }));
		});
		const timer = setTimeout(() => req.destroy(Object.assign(new Error("no answer"), { code: "HANG" })), HANG_MS);
		req.on("socket", socket => (socket.connecting ? socket.once("connect", () => (connected = true)) : (connected = true)));
		req.on("error", (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, connected }));
		req.on("close", () => clearTimeout(timer));
		req.end(body === undefined ? "" : JSON.stringify(body));
	});
}

/** `writers` concurrent loops of the `writes` in turn, each pausing `pauseMs` after a 200 (50 ms after anything else). */
export class Load {
	readonly outcomes: Outcome[] = [];
	inFlight = 0;
	private running = true;
	private readonly keepAlive = new Agent({ keepAlive: true });
	private readonly loops: Promise<void>[];

	/** `prefix` starts every name, for loads that run side by side. */
	constructor(
		base: string,
		{ category, author }: { category: Ref; author: Ref },
		writers: number,
		pauseMs: number,
		writes: Write[],
		prefix = "",
	) {
		this.loops = Array.from({ length: writers }, async (_, writer) => {
			for (let n = 0; this.running && n < 5000; n++) {
				const write = writes[(writer + n) % writes.length];
				const name = `${prefix}${write} ${writer}.${n}`;
				const body = write === "author" ? { name, nationality: "Testish" } : { title: name, age: 10, category, author };
				const started = Date.now();
				this.inFlight++;
				const answer = await send(base, "PUT", `/${write}`, body, writer % 2 === 1 && this.keepAlive);
				this.inFlight--;
				this.outcomes.push({ write, name, writer, started, ended: Date.now(), ...answer });
				await new Promise(resolve => setTimeout(resolve, answer.status === 200 ? pauseMs : 50));
			}
		});
	}

	/** Outcomes of the writes begun at or after `time` (and before `until`). */
	since = (time: number, until = Infinity) => this.outcomes.filter(o => o.started >= time && o.started < until);
	/** Until every writer has finished `count` writes begun at or after `time`. */
	eachWriterFinished = (time: number, count: number) => async () =>
		this.loops.every((_, writer) => this.since(time).filter(o => o.writer === writer).length >= count);
	/** How many `write`s got a 200. */
	succeeded = (write: Write) => this.outcomes.filter(o => o.write === write && o.status === 200).length;
	/** Whether writes are in flight and none has been answered for `ms`: they are held somewhere. */
	stalled = (ms: number) => async () => this.inFlight > 0 && Date.now() - Math.max(0, ...this.outcomes.map(o => o.ended)) >= ms;

	async stop(): Promise<Outcome[]> {
		this.running = false;
		await Promise.all(this.loops);
		this.keepAlive.destroy();
		return this.outcomes;
	}
}

export const show = (o: Outcome) => `${o.name} +${o.ended - o.started}ms ${o.status ?? o.error} ${JSON.stringify(o.body ?? "")}`;

/**
 * `connections` keep-alive connections, each sending GET `path` again as soon as the answer has
 * arrived, until `stop()` or for `durationMs` at most. Bodies are read and dropped: the load costs
 * the test process as little as it can, and its answers are only counted.
 */
export class ReadLoad {
	/** 200s received. */
	answered = 0;
	/** Other statuses, and requests that got no answer. */
	failed = 0;
	private running = true;
	private readonly agent: Agent;
	private readonly loops: Promise<void>[];

	constructor(
		readonly base: string,
		readonly path: string,
		connections: number,
		durationMs: number,
	) {
		this.agent = new Agent({ keepAlive: true, maxSockets: connections });
		const until = Date.now() + durationMs;
		this.loops = Array.from({ length: connections }, async () => {
			while (this.running && Date.now() < until) {
				if (await this.read()) this.answered++;
				else {
					this.failed++;
					await new Promise(resolve => setTimeout(resolve, 50));
				}
			}
		});
	}

	/** One GET, bounded by HANG_MS: whether it answered 200. */
	private read(): Promise<boolean> {
		return new Promise(resolve => {
			const req = request(this.base + this.path, { agent: this.agent }, res => {
				res.resume();
				res.on("end", () => resolve(res.statusCode === 200));
				res.on("error", () => resolve(false));
			});
			const timer = setTimeout(() => req.destroy(new Error("no answer")), HANG_MS);
			req.on("error", () => resolve(false));
			req.on("close", () => clearTimeout(timer));
			req.end();
		});
	}

	/** Stops sending; resolves once every connection's last answer is in. */
	async stop(): Promise<void> {
		this.running = false;
		await Promise.all(this.loops);
		this.agent.destroy();
	}

	toString = () => `GET ${this.path} at ${this.base}: ${this.answered} answered, ${this.failed} failed`;
}
