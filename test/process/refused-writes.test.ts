import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { texts } from "../../lib/catalogue/errors";
import { startProcess, type RunningCatalogue } from "../support/process";

// A write refused for an id of a shape the service never issues is refused before anything is
// stored: a draft game stored and then removed for a 90 KB category id would write 90 KB twice
// to the database's log for each such request.

const dataDir = mkdtempSync(path.join(tmpdir(), "catalogue-refused-"));
let node: RunningCatalogue;
beforeAll(async () => (node = await startProcess({ DATA_DIR: dataDir, STORAGE: "file" })));
afterAll(async () => {
	await node?.stop();
	rmSync(dataDir, { recursive: true, force: true });
});

const FILES = ["catalogue.sqlite", "catalogue.sqlite-wal"];
const sizes = () => FILES.map(file => statSync(path.join(dataDir, file)).size);

/**
 * The files' sizes once the log's last commits are checkpointed into the database file (a thread
 * does it every 100 ms): the same for half a second.
 */
async function settledSizes(): Promise<number[]> {
	for (let seen = sizes(); ;) {
		await new Promise(resolve => setTimeout(resolve, 500));
		const now = sizes();
		if (now.every((size, index) => size === seen[index])) return now;
		seen = now;
	}
}

/** As large as a body may be (BODY_LIMIT, 100 KB), and as a URL may carry. */
const HUGE = "x".repeat(90_000);
const LONG = "y".repeat(4_000);

test("200 creates with a 90 KB category id, and every other write with a malformed id, answer 400 and leave every file as it was", async () => {
	const { api } = node;
	const category = await api.category("Euro");
	const author = await api.author("Uwe Rosenberg", "German");
	const game = await api.game("Agricola", category, author);
	const before = await settledSizes();
	const body = (categoryId: string, authorId: string) => ({
		title: "Spam",
		age: 10,
		category: { id: categoryId },
		author: { id: authorId },
	});

	const creates = await Promise.all(Array.from({ length: 200 }, () => api.put("/game", body(HUGE, author.id))));
	expect(new Set(creates.map(answer => `${answer.status} ${answer.body.msg}`))).toEqual(new Set([`400 ${texts.categoryNotFound}`]));

	const refused: [Promise<{ status: number; body: { msg: string } }>, string][] = [
		[api.put("/game", body(category.id, HUGE)), texts.authorNotFound],
		[api.put(`/game/${game.id}`, body(HUGE, author.id)), texts.categoryNotFound],
		[api.put(`/game/${LONG}`, body(category.id, author.id)), texts.gameNotFound],
		[api.delete(`/game/${LONG}`), texts.gameNotFound],
		[api.put(`/author/${LONG}`, { name: "Mallory", nationality: "Nowhere" }), texts.authorNotFound],
		[api.delete(`/author/${LONG}`), texts.authorNotFound],
		[api.put(`/category/${LONG}`, { name: "Spam" }), texts.categoryNotFound],
		[api.delete(`/category/${LONG}`), texts.categoryNotFound],
	];
	for (const [answer, msg] of refused) expect(await answer).toMatchObject({ status: 400, body: { msg } });

	expect(await settledSizes()).toEqual(before);
	expect((await api.get("/game")).body).toEqual([{ ...game, category, author }]);
}, 60_000);
