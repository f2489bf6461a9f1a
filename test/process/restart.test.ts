import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startProcess } from "../support/process";

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
	// moleculer-db's NeDB update warned on every write (mixins/db.mixin.ts, useNeDbPromises).
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
