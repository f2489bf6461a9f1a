import { createServer, request, Agent, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { drain, trackAnswers } from "../../middlewares/drain.middleware";
import { stillPending } from "../support/catalogue";

// drain() on a plain Node HTTP server: what the gateway does with its connections on SIGTERM.

let server: Server;
let port: number;
let answer: () => void;
let agent: Agent;

beforeEach(async () => {
	// Each request is answered when the test calls `answer`.
	server = createServer((_request, response) => {
		answer = () => response.end("done");
	});
	trackAnswers(server);
	await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
	port = (server.address() as AddressInfo).port;
	agent = new Agent({ keepAlive: true, maxSockets: 1 });
});

afterEach(() => {
	agent.destroy();
	server.closeAllConnections();
	server.close();
});

interface Reply {
	status?: number;
	connection?: string;
	body?: string;
	error?: string;
}

/** A GET over the keep-alive agent: the answer, or the socket error's code. */
function get(): Promise<Reply> {
	return new Promise(resolve => {
		const sent = request({ port, host: "127.0.0.1", agent }, (response: IncomingMessage) => {
			let body = "";
			response.on("data", chunk => (body += chunk));
			response.on("end", () => resolve({ status: response.statusCode, connection: response.headers.connection, body }));
		});
		sent.on("error", (err: NodeJS.ErrnoException) => resolve({ error: err.code }));
		sent.end();
	});
}

/** Waits until the server has received a request. */
async function received(): Promise<void> {
	answer = undefined as unknown as () => void;
	while (!answer) await new Promise(resolve => setTimeout(resolve, 5));
}

test("a request in flight is answered in full, with Connection: close, and drain resolves after it", async () => {
	const inFlight = get();
	await received();
	const drained = drain(server, 5000);
	expect(await stillPending(drained)).toBe(true);
	answer();
	expect(await inFlight).toEqual({ status: 200, connection: "close", body: "done" });
	await drained;
});

test("once draining, a new connection is refused at connect, so the client knows nothing was done", async () => {
	const drained = drain(server, 5000);
	await drained;
	expect(await get()).toEqual({ error: "ECONNREFUSED" });
});

test("an idle keep-alive connection is closed, so drain does not wait for the client", async () => {
	const first = get();
	await received();
	answer();
	expect(await first).toMatchObject({ status: 200, connection: "keep-alive" });
	await drain(server, 5000);
	expect(server.listening).toBe(false);
});

test("a request that never gets an answer is cut after the time limit", async () => {
	const stuck = get();
	await received();
	const started = Date.now();
	await drain(server, 300);
	expect(Date.now() - started).toBeGreaterThanOrEqual(250);
	expect(await stuck).toEqual({ error: "ECONNRESET" });
});
