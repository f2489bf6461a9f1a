import type { IncomingMessage } from "node:http";
import { UnlistedOrigins } from "../../lib/http/origins";

// The warning about browser origins CORS_ORIGINS does not let through (lib/http/origins.ts): once per origin, in bounded memory.

function warnings(origins: string[] = []) {
	const lines: string[] = [];
	const clock = { now: 0 };
	const log = new UnlistedOrigins({ warn: (line: string) => lines.push(line) }, origins, () => clock.now);
	const host = "catalogue.example:3000";
	const from = (origin?: string) => log.note({ headers: origin === undefined ? { host } : { origin, host } } as IncomingMessage);
	return { lines, from, clock };
}

test("each origin is told of once, however often it calls", () => {
	const { lines, from } = warnings();
	for (let i = 0; i < 100; i++) from("http://localhost:5173");
	expect(lines).toEqual([
		"A browser at http://localhost:5173 called the API; its answers carry no Access-Control-Allow-Origin: add it to CORS_ORIGINS to let it read them",
	]);
});

test("endless distinct origins are remembered 256 at a time: the least recent is forgotten and told of again", () => {
	const { lines, from, clock } = warnings();
	for (let i = 0; i < 300; i++) {
		clock.now += 60_000;
		from(`https://site-${i}.example`);
	}
	expect(lines).toHaveLength(300);
	from("https://site-299.example");
	expect(lines).toHaveLength(300);
	clock.now += 60_000;
	from("https://site-0.example");
	expect(lines).toHaveLength(301);
});

test("a client sending a new Origin with each request gets 20 lines a minute, and the next minute's first counts the rest", () => {
	const { lines, from, clock } = warnings();
	for (let i = 0; i < 600; i++) from(`http://o${i}.example`);
	expect(lines).toHaveLength(20);
	clock.now += 60_000;
	from("http://late.example");
	expect(lines).toHaveLength(21);
	expect(lines[20]).toMatch(/^A browser at http:\/\/late\.example called .* \(580 more origins were not told of in the minute before\)$/);
	// Those not told of are told of when they call again, once lines are free.
	from("http://o599.example");
	expect(lines[21]).toContain("http://o599.example");
});

test("listed origins, *, requests without an Origin and, with CORS_ORIGINS unset, the gateway's own origin are not told of", () => {
	const listed = warnings(["https://app.example.com"]);
	listed.from("https://app.example.com");
	expect(listed.lines).toEqual([]);
	const any = warnings(["*"]);
	any.from("https://anywhere.example");
	expect(any.lines).toEqual([]);
	const unset = warnings();
	unset.from("http://catalogue.example:3000");
	unset.from(undefined);
	expect(unset.lines).toEqual([]);
});

test("with CORS_ORIGINS set, even the gateway's own origin is told of: the gateway refuses it", () => {
	const { lines, from } = warnings(["https://app.example.com"]);
	from("http://catalogue.example:3000");
	expect(lines).toEqual([
		"A browser at http://catalogue.example:3000 called the API and was refused (403): add it to CORS_ORIGINS to let it call",
	]);
});

test("an origin of any length is told of in at most 200 characters", () => {
	const { lines, from } = warnings();
	from(`https://${"a".repeat(10_000)}.example`);
	expect(lines[0].length).toBeLessThan(400);
});
