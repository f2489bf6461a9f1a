import { createServer } from "node:http";
import { text } from "node:stream/consumers";

// The ceiling: a bare node:http server that answers each scenario's request with the bytes the
// catalogue answered (status, content type, body), serialized once before it listens. Whatever
// the catalogue does beyond this (routing, validation, storage, JSON, moleculer) is the gap
// between the two in the table. Started by the benchmark with the routes on standard input:
// `node ceiling.js <port>`.

/** One route as the benchmark sends it: the body in base64. */
interface RouteJson {
	method: string;
	path: string;
	answer: { status: number; contentType: string; body: string };
}

interface Prepared {
	status: number;
	headers: Record<string, string | number>;
	body: Buffer;
}

async function main() {
	const port = Number(process.argv[2]);
	const routes = JSON.parse(await text(process.stdin)) as RouteJson[];
	const answers = new Map<string, Prepared>();
	for (const { method, path, answer } of routes) {
		const body = Buffer.from(answer.body, "base64");
		answers.set(`${method} ${path}`, {
			status: answer.status,
			headers: { "Content-Type": answer.contentType, "Content-Length": body.length },
			body,
		});
	}
	const notFound = Buffer.from(JSON.stringify({ msg: "Not found" }));
	createServer((req, res) => {
		const prepared = answers.get(`${req.method} ${req.url}`);
		if (!prepared) return res.writeHead(404, { "Content-Type": "application/json", "Content-Length": notFound.length }).end(notFound);
		// A request body is left unread: Node discards it once the answer is sent.
		res.writeHead(prepared.status, prepared.headers).end(prepared.body);
	}).listen(port, "127.0.0.1");
}

main().catch(err => {
	console.error(err);
	process.exit(1);
});
