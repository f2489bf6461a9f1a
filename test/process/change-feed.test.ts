import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { texts } from "../../lib/catalogue/errors";
import { startProcess } from "../support/process";
import { openStream } from "../support/sse";

// The change feed of the embedded layout (docs/followers.md) across a SIGKILL landing among concurrent writes: every write a
// client was told succeeded has exactly one change, a write refused has none, and the feed read afresh after the restart ends
// where GET /game is.

const dataDir = mkdtempSync(path.join(tmpdir(), "catalogue-feed-kill-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const FROM_THE_START = "authors:0,categories:0,games:0";

test("each acknowledged write is one change after a kill -9 among writes; refused ones none", async () => {
	const first = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	const acknowledged = new Set<string>();
	const refused = new Set<string>();
	let category: { id: string };
	let author: { id: string };
	try {
		category = await first.api.category("Killed");
		author = await first.api.author("Killed");
		const send = async (index: number) => {
			const requestId = `write-${index}`;
			const body =
				index % 10 === 9 ? { title: "", age: 10, category, author } : { title: `Game ${index}`, age: 10, category, author };
			const answer = await first.api.send("PUT", "/game", body, undefined, { "X-Request-ID": requestId }).catch(() => undefined);
			if (answer?.status === 200) acknowledged.add(requestId);
			else if (answer?.status === 400) refused.add(requestId);
		};
		const writing = Promise.all(
			Array.from({ length: 400 }, (_, index) => new Promise(resolve => setTimeout(resolve, index)).then(() => send(index))),
		);
		await new Promise(resolve => setTimeout(resolve, 150));
		await first.kill();
		await writing;
	} finally {
		await first.kill();
	}
	expect(acknowledged.size).toBeGreaterThan(10);
	expect(refused.size).toBeGreaterThan(0);

	const second = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	try {
		const stream = await openStream(`${second.api.url}/changes?kinds=game`, { "Last-Event-ID": FROM_THE_START });
		await stream.next(event => event.event === "ready", 10_000);
		stream.close();
		const changes = stream.events.filter(event => event.event === "message").map(event => event.data);
		const byRequest = new Map<string, number>();
		for (const change of changes) byRequest.set(change.requestId, (byRequest.get(change.requestId) ?? 0) + 1);
		for (const requestId of acknowledged) expect([requestId, byRequest.get(requestId)]).toEqual([requestId, 1]);
		for (const requestId of refused) expect(byRequest.has(requestId)).toBe(false);
		expect(new Set(changes.map(change => change.id)).size).toBe(changes.length);
		expect(changes.map(change => change.seq)).toEqual(changes.map((_, index) => index + 1));
		const listed = (await second.api.get("/game")).body.map((game: { id: string }) => game.id).sort();
		expect(changes.map(change => change.record.id).sort()).toEqual(listed);
	} finally {
		expect(await second.stop()).toBe(0);
	}
}, 60_000);

test("CHANGE_FEED=off: writes as before, /changes answers 404 with its msg, and the feed turned on again holds none of those writes", async () => {
	const off = await startProcess({ DATA_DIR: dataDir, STORAGE: "file", CHANGE_FEED: "off" });
	let before: number;
	try {
		before = (await off.api.get("/game")).body.length;
		const category = await off.api.category("Unfollowed");
		const author = await off.api.author("Unfollowed");
		await off.api.game("Unfollowed", category, author);
		expect((await off.api.get("/game")).body).toHaveLength(before + 1);
		const refused = await openStream(`${off.api.url}/changes`);
		refused.close();
		expect({ status: refused.status, body: refused.refusal }).toEqual({ status: 404, body: { msg: texts.feedOff } });
	} finally {
		expect(await off.stop()).toBe(0);
	}

	const on = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	try {
		const stream = await openStream(`${on.api.url}/changes?kinds=game`, { "Last-Event-ID": FROM_THE_START });
		const ready = await stream.next(event => event.event === "ready", 10_000);
		const seen = stream.events.filter(event => event.event === "message").map(event => event.data.record.title);
		expect(seen).not.toContain("Unfollowed");
		expect(seen).toHaveLength(before);
		const [game] = (await on.api.get("/game")).body;
		expect((await on.api.put(`/game/${game.id}`, { ...game, title: `${game.title}!` })).status).toBe(200);
		const next = await stream.next(event => event.event === "message", 5000);
		expect(next.data.record.title).toBe(`${game.title}!`);
		expect(next.data.seq).toBe(Number(/games:(\d+)/.exec(ready.id!)![1]) + 1);
		stream.close();
	} finally {
		expect(await on.stop()).toBe(0);
	}
}, 60_000);
