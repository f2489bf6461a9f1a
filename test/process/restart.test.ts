import { existsSync, mkdtempSync, rmSync, watch } from "node:fs";
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
	// moleculer-db's NeDB update warned on every write (lib/storage/adapter.ts, useNeDbPromises).
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

test("a SIGKILL in the middle of a burst of creates loses none it acknowledged, across the compactions it set off", async () => {
	const burstDir = mkdtempSync(path.join(tmpdir(), "catalogue-burst-"));
	const first = await startProcess({ DATA_DIR: burstDir, STORAGE: "file" });
	const acknowledged: string[] = [];
	try {
		const category = await first.api.category("Euro");
		const author = await first.api.author("Uwe Rosenberg", "German");
		const body = { title: "Agricola", age: 12, category: { id: category.id }, author: { id: author.id } };
		let killed = false;
		// 16 clients create games one after another until the process is gone: each create appends
		// two lines, so games.db is compacted (and reopened) after the first 500 or so.
		const client = async () => {
			while (!killed) {
				const answer = await first.api.put("/game", body).catch(() => undefined);
				if (answer?.status === 200) acknowledged.push(answer.body.game.id);
			}
		};
		const clients = Array.from({ length: 16 }, client);
		while (acknowledged.length < 1_200) await new Promise(resolve => setTimeout(resolve, 10));
		await first.kill();
		killed = true;
		await Promise.all(clients);
	} finally {
		await first.kill();
	}
	const second = await startProcess({ DATA_DIR: burstDir, STORAGE: "file" });
	try {
		const stored = new Set(((await second.api.get("/game")).body as { id: string }[]).map(game => game.id));
		expect(acknowledged.filter(id => !stored.has(id))).toEqual([]);
		expect(second.output()).not.toMatch(/corrupt|damaged|torn/i);
	} finally {
		await second.stop();
		rmSync(burstDir, { recursive: true, force: true });
	}
}, 60_000);

test("a SIGKILL while a compaction writes the new file (games.db~) loses no create acknowledged before it", async () => {
	const burstDir = mkdtempSync(path.join(tmpdir(), "catalogue-compacting-"));
	const acknowledged: string[] = [];
	/** Creates from 16 clients until a compaction's new file appears beside games.db; then SIGKILL. Whether the file was still there. */
	const burstUntilCompaction = async (category: { id: string }, author: { id: string }) => {
		const node = await startProcess({ DATA_DIR: burstDir, STORAGE: "file" });
		const body = { title: "Agricola", age: 12, category, author };
		const before = acknowledged.length;
		let killed = false;
		let copyLeft = false;
		const watcher = watch(burstDir, (_event, name) => {
			if (name !== "games.db~" || acknowledged.length - before < 2_000 || killed) return;
			killed = true;
			node.child.kill("SIGKILL");
			copyLeft = existsSync(path.join(burstDir, "games.db~"));
		});
		const client = async () => {
			while (!killed) {
				const answer = await node.api.put("/game", body).catch(() => undefined);
				if (answer?.status === 200) acknowledged.push(answer.body.game.id);
			}
		};
		try {
			await Promise.all(Array.from({ length: 16 }, client));
		} finally {
			watcher.close();
			await node.kill();
		}
		return copyLeft;
	};
	const setUp = await startProcess({ DATA_DIR: burstDir, STORAGE: "file" });
	const category = { id: (await setUp.api.category("Euro")).id };
	const author = { id: (await setUp.api.author("Uwe Rosenberg", "German")).id };
	await setUp.stop();
	// A compaction writes its new file in a few milliseconds; the signal may land after the rename. Then again, on the same data.
	let caught = false;
	for (let attempt = 0; attempt < 4 && !caught; attempt++) caught = await burstUntilCompaction(category, author);
	expect(caught).toBe(true);
	const second = await startProcess({ DATA_DIR: burstDir, STORAGE: "file" });
	try {
		const stored = new Set(((await second.api.get("/game")).body as { id: string }[]).map(game => game.id));
		expect(acknowledged.filter(id => !stored.has(id))).toEqual([]);
		expect(second.output()).not.toMatch(/corrupt|damaged|torn/i);
		expect(existsSync(path.join(burstDir, "games.db~"))).toBe(false);
	} finally {
		await second.stop();
		rmSync(burstDir, { recursive: true, force: true });
	}
}, 180_000);
