import type { Browser, Page } from "playwright-core";
import { chromiumRuns, launchChromium } from "../support/chromium";
import { startCatalogue, type Catalogue } from "../support/catalogue";

// GET /changes in a real headless Chromium (docs/followers.md): two pages of the catalogue follow the feed with EventSource, and an
// edit made in one appears in the other within one second.
/** Opens the docs page (the gateway's own origin) and follows /changes from it; resolves once the stream is caught up. */
async function following(page: Page, url: string): Promise<void> {
	await page.goto(`${url}/docs`);
	await page.evaluate(
		() =>
			new Promise<void>((resolve, reject) => {
				const seen: { record: { name?: string }; at: number }[] = [];
				Object.assign(window, { seen });
				const changes = new EventSource("/changes?kinds=category");
				changes.onmessage = event =>
					seen.push({ ...(JSON.parse(event.data as string) as { record: { name?: string } }), at: Date.now() });
				changes.addEventListener("ready", () => resolve());
				changes.onerror = () => reject(new Error("the stream failed"));
			}),
	);
}

describe("GET /changes in Chromium", () => {
	if (!chromiumRuns("change feed browser test", "follows the feed in Chromium")) return;

	let catalogue: Catalogue;
	let browser: Browser;

	beforeAll(async () => {
		catalogue = await startCatalogue({ topology: "one-broker" });
		browser = await launchChromium();
	});
	afterAll(async () => {
		await browser?.close();
		await catalogue?.stop();
	});

	test("two pages open: an edit in one appears in the other within one second", async () => {
		const [editor, watcher] = [await browser.newPage(), await browser.newPage()];
		await Promise.all([following(editor, catalogue.api.url), following(watcher, catalogue.api.url)]);
		// Timed from the edit's answer, when the editor knows it is made: the feed's part, not the write's (a fresh catalogue's first
		// write, on a machine that CI loads with other suites and a Docker build, once took 1.6 s by itself).
		const sentAt = await editor.evaluate(async () => {
			const answer = await fetch("/category", {
				method: "PUT",
				headers: { "Content-Type": "application/json" },
				body: JSON.stringify({ name: "Edited in a browser" }),
			});
			if (answer.status !== 200) throw new Error(`PUT /category answered ${answer.status}`);
			return Date.now();
		});
		const seenAt = await watcher.waitForFunction(
			() =>
				(window as unknown as { seen: { record: { name?: string }; at: number }[] }).seen.find(
					change => change.record.name === "Edited in a browser",
				)?.at,
			undefined,
			{ timeout: 1000 },
		);
		expect((await seenAt.jsonValue()) as number).toBeLessThan(sentAt + 1000);
	}, 30_000);
});
