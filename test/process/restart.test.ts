import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startProcess } from "../support/process";
import { rawRequest } from "../support/raw-http";

const dataDir = mkdtempSync(path.join(tmpdir(), "catalogue-restart-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

test("data written through HTTP survives a restart of the process on the same data folder", async () => {
	const first = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	let written;
	try {
		const category = await first.api.category("Euro");
		const kept = await first.api.author("Uwe Rosenberg", "German");
		const removed = await first.api.author("Gone", "Nowhere");
		const game = await first.api.game("Agricola", category, kept);
		expect((await first.api.put(`/author/${kept.id}`, { name: "Uwe Rosenberg", nationality: "Deutsch" })).body).toBe(1);
		expect((await first.api.delete(`/author/${removed.id}`)).status).toBe(200);
		written = {
			categories: (await first.api.get("/category")).body,
			authors: (await first.api.get("/author")).body,
			games: (await first.api.get("/game")).body,
		};
		expect(written.authors).toEqual([{ ...kept, nationality: "Deutsch" }]);
		expect(written.games.map((item: { id: string }) => item.id)).toEqual([game.id]);
	} finally {
		expect(await first.stop()).toBe(0);
	}
	// No deprecation warning on the way (moleculer-db's NeDB adapter once printed one per write).
	expect(first.output()).not.toContain("DeprecationWarning");

	const second = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
	try {
		expect((await second.api.get("/category")).body).toEqual(written.categories);
		expect((await second.api.get("/author")).body).toEqual(written.authors);
		expect((await second.api.get("/game")).body).toEqual(written.games);
		const later = await second.api.author("Later", "Any");
		const ids = (await second.api.get("/author")).body.map((author: { id: string }) => author.id);
		expect(ids).toEqual([written.authors[0].id, later.id]);
		expect(ids).toEqual([...ids].sort());
	} finally {
		expect(await second.stop()).toBe(0);
	}
});

test("an ETag handed out before the process was killed (SIGKILL) never answers 304 after a restart", async () => {
	const killedDir = mkdtempSync(path.join(tmpdir(), "catalogue-etag-"));
	const first = await startProcess({ DATA_DIR: killedDir, STORAGE: "file" });
	let tag: string;
	try {
		const empty = await first.api.get("/category");
		expect(empty.body).toEqual([]);
		tag = empty.headers.get("etag")!;
		await first.api.category("Euro");
	} finally {
		await first.kill();
	}
	// Generations start again at 0 in a new process, so the list is at its first generation again, with other records.
	const second = await startProcess({ DATA_DIR: killedDir, STORAGE: "file" });
	try {
		const before = await rawRequest(`${second.api.url}/category`, "GET", { "If-None-Match": tag });
		expect(before.status).toBe(200);
		expect(JSON.parse(before.body.toString())).toEqual([expect.objectContaining({ name: "Euro" })]);
		// The tag of what is stored now does answer 304.
		expect((await rawRequest(`${second.api.url}/category`, "GET", { "If-None-Match": before.headers.etag! })).status).toBe(304);
	} finally {
		await second.stop();
		rmSync(killedDir, { recursive: true, force: true });
	}
});

test("a SIGKILL in the middle of concurrent creates and updates loses none it acknowledged", async () => {
	const burstDir = mkdtempSync(path.join(tmpdir(), "catalogue-burst-"));
	const first = await startProcess({ DATA_DIR: burstDir, STORAGE: "file" });
	const acknowledged: string[] = [];
	let renamed = "";
	/** The names sent since the last acknowledged one: any of them may have been stored before the kill. */
	let unanswered: string[] = [];
	try {
		const category = await first.api.category("Euro");
		const author = await first.api.author("Uwe Rosenberg", "German");
		const body = { title: "Agricola", age: 12, category: { id: category.id }, author: { id: author.id } };
		let killed = false;
		// 16 clients create games one after another until the process is gone; one more renames the
		// author over and over: what is stored is its last acknowledged name, or one sent after it.
		const client = async () => {
			while (!killed) {
				const answer = await first.api.put("/game", body).catch(() => undefined);
				if (answer?.status === 200) acknowledged.push(answer.body.game.id);
			}
		};
		const renamer = async () => {
			for (let n = 1; !killed; n++) {
				const name = `Uwe ${n}`;
				unanswered.push(name);
				const answer = await first.api.put(`/author/${author.id}`, { name, nationality: "German" }).catch(() => undefined);
				if (answer?.status === 200) [renamed, unanswered] = [name, []];
			}
		};
		const renamers = [renamer()];
		const clients = Array.from({ length: 16 }, client);
		while (acknowledged.length < 1_200) await new Promise(resolve => setTimeout(resolve, 10));
		await first.kill();
		killed = true;
		await Promise.all([...clients, ...renamers]);
	} finally {
		await first.kill();
	}
	expect(renamed).not.toBe("");
	const second = await startProcess({ DATA_DIR: burstDir, STORAGE: "file" });
	try {
		const stored = new Set(((await second.api.get("/game")).body as { id: string }[]).map(game => game.id));
		expect(acknowledged.filter(id => !stored.has(id))).toEqual([]);
		expect([renamed, ...unanswered]).toContain(((await second.api.get("/author")).body as { name: string }[])[0].name);
		expect(second.output()).not.toMatch(/corrupt|damaged|malformed|FATAL/i);
	} finally {
		await second.stop();
		rmSync(burstDir, { recursive: true, force: true });
	}
}, 60_000);
