import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { texts } from "../../lib/catalogue/errors";
import { runsWith } from "../support/not-run";
import { startProcess, type RunningCatalogue } from "../support/process";
import { canMountTmpfs, mountTmpfs, resizeTmpfs, unmount } from "../support/tmpfs";

// DATA_DIR on a real 512 KB tmpfs, filled through HTTP until the disk refuses creates: a game the
// disk refused is never listed, readiness says the games' store refuses writes while reads go on,
// and a restart finds exactly the games that were acknowledged (docs/storage.md, "A full disk").
// Space freed brings readiness and writes back without a restart.

const NOT_RUN = "The full-disk process test did NOT run: it mounts a small tmpfs, which needs root (or CAP_SYS_ADMIN)";

interface Created {
	status: number;
	title: string;
	id?: string;
	msg?: string;
}

/** `clients` clients create games titled `Game <n>` until `refusals` creates have been refused in all. */
async function createUntilFull(node: RunningCatalogue, body: (title: string) => object, clients = 8, refusals = 16): Promise<Created[]> {
	const answers: Created[] = [];
	let next = 0;
	const refused = () => answers.filter(answer => answer.status !== 200).length;
	const client = async () => {
		while (refused() < refusals) {
			const title = `Game ${next++}`;
			const { status, body: answer } = await node.api.put("/game", body(title));
			answers.push({ status, title, id: answer.game?.id, msg: answer.msg });
		}
	};
	await Promise.all(Array.from({ length: clients }, client));
	return answers;
}

const ids = (games: { id: string }[]) => games.map(game => game.id).sort();

describe("a full disk under DATA_DIR (a real tmpfs)", () => {
	if (!runsWith(canMountTmpfs(), { notRun: NOT_RUN, hint: "Run the tests as root, as CI does.", name: "fills a real tmpfs" })) return;

	const dataDir = mkdtempSync(path.join(tmpdir(), "catalogue-full-disk-"));
	// Space an operator frees once the disk is full.
	const ballast = path.join(dataDir, "ballast");
	let node: RunningCatalogue | undefined;
	beforeAll(() => {
		mountTmpfs(dataDir, "2m");
		writeFileSync(ballast, Buffer.alloc(256 * 1024));
	});
	afterAll(async () => {
		await node?.kill();
		unmount(dataDir);
		rmSync(dataDir, { recursive: true, force: true });
	});

	test("refused creates are never listed, readiness says so while reads go on, and a restart finds exactly the acknowledged games", async () => {
		node = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
		const { api } = node;
		const category = await api.category("Euro");
		const author = await api.author("Uwe Rosenberg", "German");
		const body = (title: string) => ({ title, age: 12, category: { id: category.id }, author: { id: author.id } });

		const answers = await createUntilFull(node, body);
		const acknowledged = answers.filter(answer => answer.status === 200);
		const refused = answers.filter(answer => answer.status !== 200);
		// Storage failures keep the contract's status and text.
		expect(new Set(refused.map(answer => `${answer.status} ${answer.msg}`))).toEqual(new Set([`400 ${texts.createGame}`]));
		expect(acknowledged.length).toBeGreaterThan(10);

		const listed = await api.get("/game");
		expect(listed.status).toBe(200);
		expect(ids(listed.body)).toEqual(ids(acknowledged as { id: string }[]));
		const titles = new Set((listed.body as { title: string }[]).map(game => game.title));
		expect(refused.filter(answer => titles.has(answer.title))).toEqual([]);

		// An update's line is longer than a create's, which the disk already refused.
		const first = listed.body[0] as { id: string; title: string };
		const update = await api.put(`/game/${first.id}`, { ...body("U".repeat(200)) });
		expect(update).toMatchObject({ status: 400, body: { msg: texts.updateGame } });
		expect((await api.get("/game")).body[0]).toMatchObject({ id: first.id, title: first.title });

		const notReady = await api.get("/health/ready");
		expect(notReady).toMatchObject({ status: 503, body: { status: "not ready", waitingFor: ["games storage"] } });
		expect((await api.get("/game?title=Game 1")).status).toBe(200);
		expect((await api.get("/author")).status).toBe(200);

		// Space comes back: readiness says so before any write is tried, and writes are taken again.
		rmSync(ballast);
		expect((await api.get("/health/ready")).status).toBe(200);
		const later = await api.put("/game", body("Later"));
		expect(later.status).toBe(200);
		const stored = [...ids(acknowledged as { id: string }[]), later.body.game.id].sort();
		expect(ids((await api.get("/game")).body)).toEqual(stored);
		expect(await node.stop()).toBe(0);

		// SQLite needs room for its log beside the database (-wal, -shm) to open it: on a disk still
		// full, the start stops saying so. With room, a restart finds exactly the acknowledged games.
		resizeTmpfs(dataDir, "8m");
		node = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" });
		expect(ids((await node.api.get("/game")).body)).toEqual(stored);
		expect(node.output()).not.toMatch(/corrupt|malformed|FATAL/i);
	}, 120_000);
});
