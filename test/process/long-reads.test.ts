import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startProcess, type RunningCatalogue } from "../support/process";
import { runTool, writeSyntheticExport } from "../support/transfer";
import type { ListedGame } from "../../services/games.types";

// Read-your-writes beside a long list, on a DATA_DIR as `npm start` keeps one (docs/storage.md): a list is read a slice at a time
// with turns of the event loop between, and a list begun after a write's answer must hold the write, though a longer list begun
// before it is still being read. Both lists would otherwise read one SQLite snapshot, and the second be cached as current.

/** Enough games that the first list is still being read when the write and the second list have come and gone. */
const GAMES = 50_000;

let folder: string;
let node: RunningCatalogue | undefined;

beforeAll(async () => {
	folder = mkdtempSync(path.join(tmpdir(), "catalogue-long-reads-"));
	const file = path.join(folder, "catalogue.jsonl");
	await writeSyntheticExport(file, { categories: 2, authors: 2, games: GAMES });
	const dataDir = path.join(folder, "data");
	const imported = await runTool("import", [file], { env: { DATA_DIR: dataDir, STORAGE: "file" } });
	expect({ code: imported.code, output: imported.output }).toMatchObject({ code: 0 });
	node = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
}, 120_000);

afterAll(async () => {
	await node?.kill();
	rmSync(folder, { recursive: true, force: true });
});

test("a list begun after a write's answer holds the write while a longer list begun before it is still being read", async () => {
	const { api } = node!;
	const [game] = (await api.post("/game", { pageable: { pageNumber: 0, pageSize: 1 } })).body.content as ListedGame[];
	const title = `Renamed while ${GAMES} games are listed`;
	let firstAnswered = false;
	const first = api.get("/game").then(answer => ((firstAnswered = true), answer));
	const renamed = await api.put(`/game/${game.id}`, { ...game, title });
	expect(renamed.status).toBe(200);
	// The second list reads every game (the title is tested outside SQLite), begun once the write is answered.
	const second = await api.get(`/game?title=${encodeURIComponent(title)}`);
	const firstStillRunning = !firstAnswered;
	expect(second.status).toBe(200);
	expect((second.body as ListedGame[]).map(({ id, title: listed }) => ({ id, title: listed }))).toEqual([{ id: game.id, title }]);
	const listed = await first;
	expect(listed.status).toBe(200);
	expect(listed.body).toHaveLength(GAMES);
	// The case this test is about: the first list was still on its way when the second was answered.
	expect(firstStillRunning).toBe(true);
}, 60_000);
