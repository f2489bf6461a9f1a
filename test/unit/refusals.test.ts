import type { Logger } from "moleculer";
import { RefusalLog } from "../../lib/http/refusals";

// The gateway's log of refusals (lib/http/refusals.ts): a line per kind per window, whatever the clients vary.

const WINDOW_MS = 200;

function logged() {
	const lines: string[] = [];
	const logger = { warn: (_fields: object, line: string) => lines.push(line) } as unknown as Logger;
	return { lines, log: new RefusalLog(logger, WINDOW_MS) };
}

test("a burst of one kind is one line, with the first one's reason; the next window's first line counts those between", async () => {
	const { lines, log } = logged();
	for (let i = 0; i < 1000; i++) log.note("503 The identity provider cannot be reached", `attempt ${i}`, {});
	expect(lines).toEqual(["Refused: 503 The identity provider cannot be reached: attempt 0"]);
	await new Promise(resolve => setTimeout(resolve, WINDOW_MS + 20));
	log.note("503 The identity provider cannot be reached", "attempt 1000", {});
	expect(lines[1]).toBe("Refused: 503 The identity provider cannot be reached: attempt 1000 (999 more since the last line of this kind)");
});

test("kinds are logged apart, and a reason a client varies (a token's key id) makes no line of its own", () => {
	const { lines, log } = logged();
	for (let i = 0; i < 500; i++) log.note("401 The access token was not accepted", `no key with kid "${i}"`, {});
	log.note("403 Changing the catalogue needs the role 'editor'", undefined, {});
	expect(lines).toEqual([
		'Refused: 401 The access token was not accepted: no key with kid "0"',
		"Refused: 403 Changing the catalogue needs the role 'editor'",
	]);
});

test("past the kinds it keeps, it forgets them all: memory stays bounded, and each logs once more", () => {
	const { lines, log } = logged();
	for (let i = 0; i < 10_000; i++) log.note(`kind ${i}`, undefined, {});
	expect(lines).toHaveLength(10_000);
	expect((log as unknown as { kinds: Map<string, unknown> }).kinds.size).toBeLessThanOrEqual(256);
});
