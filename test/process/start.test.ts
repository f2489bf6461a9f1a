import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Api } from "../support/catalogue";
import { freePort, startNode, startProcess, waitFor } from "../support/process";

const folder = mkdtempSync(path.join(tmpdir(), "catalogue-start-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Preloaded into the process: on its way out, it prints every module file it loaded. */
const reporter = path.join(folder, "report-modules.js");
writeFileSync(reporter, `process.on("exit", () => process.stderr.write("LOADED " + JSON.stringify(Object.keys(require.cache)) + "\\n"));`);

/** The module files a stopped node printed, by the reporter. */
function loadedBy(output: string): string[] {
	const line = output.split("\n").find(text => text.startsWith("LOADED "));
	return JSON.parse(line!.slice("LOADED ".length)) as string[];
}

test("an embedded start loads neither the MongoDB driver nor Swagger UI's bundle, which it does not run", async () => {
	const catalogue = await startProcess({ DATA_DIR: path.join(folder, "data"), NODE_OPTIONS: `--require ${reporter}` });
	try {
		expect((await catalogue.api.get("/category")).status).toBe(200);
		// The docs page's script is served as a file, not loaded.
		expect((await fetch(`${catalogue.api.url}/docs/swagger-ui-bundle.js`)).status).toBe(200);
	} finally {
		expect(await catalogue.stop()).toBe(0);
	}
	const line = catalogue
		.output()
		.split("\n")
		.find(text => text.startsWith("LOADED "));
	const loaded = JSON.parse(line!.slice("LOADED ".length)) as string[];
	// What did load, so that the check below cannot pass on a list of nothing.
	expect(loaded.some(file => file.includes("/node_modules/moleculer-db/"))).toBe(true);
	expect(loaded.some(file => file.endsWith("swagger-ui-dist/absolute-path.js"))).toBe(true);
	expect(loaded.filter(file => /\/node_modules\/(mongodb|moleculer-db-adapter-mongo)\/|swagger-ui-bundle/.test(file))).toEqual([]);
});

test("a gateway node loads neither moleculer-db nor a store, nor the data services' code", async () => {
	const port = await freePort();
	const gateway = startNode({ SERVICES: "api", PORT: String(port), NODE_OPTIONS: `--require ${reporter}` });
	try {
		const api = new Api(`http://127.0.0.1:${port}`);
		await waitFor("the gateway answers", () => api.get("/health/live").then(answer => answer.status === 200), [gateway]);
		expect((await fetch(`${api.url}/openapi.json`)).status).toBe(200);
	} finally {
		expect(await gateway.stop()).toBe(0);
	}
	const loaded = loadedBy(gateway.output());
	expect(loaded.some(file => file.includes("/node_modules/moleculer-web/"))).toBe(true);
	const dataLayer =
		/\/node_modules\/(moleculer-db|moleculer-db-adapter-mongo|mongodb)\/|\/lib\/storage\/(adapter|backup|sqlite-\w+|nedb-migration)\.js|\/mixins\/(db|transfer|referenced)\.mixin|\/services\/(authors|categories|games)\.service/;
	expect(loaded.filter(file => dataLayer.test(file))).toEqual([]);
});
