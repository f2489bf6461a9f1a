import type { Service } from "moleculer";
import type { Browser, Page } from "playwright-core";
import { chromiumRuns, launchChromium } from "../support/chromium";
import { actionCounter } from "../support/calls";
import { startCatalogue, type Catalogue } from "../support/catalogue";
import { IdentityProvider, signingKey } from "../support/identity-provider";

// The docs page (GET /docs) in a real headless Chromium: it loads without a console error or a
// failed request under its Content-Security-Policy, lists every operation of /openapi.json, and
// its "Try it out" reaches the service. Debian's chromium (`apt-get install chromium`; .ci/run
// installs it). Without it this suite cannot run: it says so, and fails under CI=true.

/** Everything that went wrong on the page: console errors, uncaught exceptions, failed or refused requests. */
function watch(page: Page): string[] {
	const problems: string[] = [];
	page.on("console", message => {
		if (message.type() === "error" || message.type() === "warning") problems.push(`console ${message.type()}: ${message.text()}`);
	});
	page.on("pageerror", error => problems.push(`uncaught: ${error.message}`));
	page.on("requestfailed", request => problems.push(`failed: ${request.url()} ${request.failure()?.errorText}`));
	page.on("response", response => {
		if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
	});
	return problems;
}

describe("the docs page in Chromium", () => {
	if (!chromiumRuns("docs page browser test", "runs in Chromium")) return;

	const counter = actionCounter();
	let catalogue: Catalogue;
	let browser: Browser;

	beforeAll(async () => {
		catalogue = await startCatalogue({ topology: "one-broker", middlewares: [counter.middleware] });
		browser = await launchChromium();
	});

	afterAll(async () => {
		await browser?.close();
		await catalogue?.stop();
	});

	test("loads without errors, lists every operation of the document, and Try it out reaches the service", async () => {
		await catalogue.api.category("Eurogames");
		const document = (await catalogue.api.get<{ paths: Record<string, Record<string, unknown>> }>("/openapi.json")).body;
		const documented = Object.entries(document.paths).flatMap(([path, methods]) =>
			Object.keys(methods).map(method => `${method.toUpperCase()} ${path}`),
		);

		const page = await browser.newPage();
		// A step that hangs fails naming its locator, within the test's time.
		page.setDefaultTimeout(15_000);
		const problems = watch(page);
		// Without the trailing slash, as a developer types it.
		const answer = await page.goto(`${catalogue.api.url}/docs`);
		expect(answer?.status()).toBe(200);
		await page
			.locator(".opblock")
			.nth(documented.length - 1)
			.waitFor({ timeout: 15_000 });
		const listed = await page
			.locator(".opblock")
			.evaluateAll(blocks =>
				blocks.map(
					block =>
						`${block.querySelector(".opblock-summary-method")?.textContent} ${block.querySelector(".opblock-summary-path")?.getAttribute("data-path")}`,
				),
			);
		expect(listed.sort()).toEqual(documented.sort());
		// Without API_TOKEN or sign-in writes are open: no operation shows a lock, and there is nothing to authorize.
		expect(await page.locator(".opblock .authorization__btn").count()).toBe(0);
		expect(await page.locator(".btn.authorize").count()).toBe(0);

		const before = counter.calls.get("categories.list") ?? 0;
		const operation = page.locator(".opblock-get", { has: page.locator('.opblock-summary-path[data-path="/category"]') });
		await operation.locator(".opblock-summary").click();
		await operation.locator(".try-out__btn").click();
		await operation.locator(".execute").click();
		const shown = operation.locator(".live-responses-table .response");
		await shown.locator(".response-col_status").getByText("200").waitFor({ timeout: 15_000 });
		expect(await shown.locator(".response-col_description").innerText()).toContain('"name": "Eurogames"');
		expect(counter.calls.get("categories.list")).toBe(before + 1);

		expect(problems).toEqual([]);
	}, 60_000);

	test("Authorize takes a signed-in editor's token, and Try it out of PUT /category writes with it", async () => {
		const provider = await IdentityProvider.start([await signingKey("RS256")]);
		const seen: unknown[] = [];
		const signedIn = await startCatalogue({
			topology: "one-broker",
			settings: {
				signIn: provider.signIn(),
			},
			middlewares: [
				{
					localAction(next, action) {
						return function (this: Service, ctx) {
							if (action.name === "categories.create") seen.push((ctx.meta as { user?: unknown }).user);
							return next.call(this, ctx);
						};
					},
				},
			],
		});
		try {
			const token = await provider.token({ subject: "docs-editor", claims: { roles: ["catalogue-editor"] } });
			const page = await browser.newPage();
			// A step that hangs fails naming its locator, within the test's time.
			page.setDefaultTimeout(15_000);
			const problems = watch(page);
			await page.goto(`${signedIn.api.url}/docs/`);
			// With sign-in, reads public: a lock on each write (PUT, DELETE), none on a read.
			const locked = page.locator(".opblock", { has: page.locator(".authorization__btn") });
			await locked.first().waitFor({ timeout: 15_000 });
			const lockedMethods = await locked.locator(".opblock-summary-method").allInnerTexts();
			expect([...new Set(lockedMethods)].sort()).toEqual(["DELETE", "PUT"]);
			await page.locator(".btn.authorize").click();
			const scheme = page.locator(".auth-container", { hasText: "signIn" });
			await scheme.locator("input").fill(token);
			await scheme.locator("button.authorize").click();
			await page.locator(".btn-done, button.close-modal").first().click();

			const operation = page.locator(".opblock-put", { has: page.locator('.opblock-summary-path[data-path="/category"]') });
			await operation.locator(".opblock-summary").click();
			await operation.locator(".try-out__btn").click();
			await operation.locator("textarea.body-param__text").fill(JSON.stringify({ name: "From the docs page" }));
			await operation.locator(".execute").click();
			const shown = operation.locator(".live-responses-table .response");
			await shown.locator(".response-col_status").getByText("200").waitFor({ timeout: 15_000 });
			expect(await shown.locator(".response-col_description").innerText()).toContain('"name": "From the docs page"');
			expect(seen).toEqual([{ sub: "docs-editor", via: "identity-provider", mayWrite: true, until: expect.any(Number) }]);
			expect(problems).toEqual([]);
		} finally {
			await signedIn.stop();
			await provider.stop();
		}
	}, 90_000);
});
