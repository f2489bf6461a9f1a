import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startProcess } from "../support/process";

const folder = mkdtempSync(path.join(tmpdir(), "catalogue-start-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Preloaded into the process: on its way out, it prints every module file it loaded. */
const reporter = path.join(folder, "report-modules.js");
writeFileSync(reporter, `process.on("exit", () => process.stderr.write("LOADED " + JSON.stringify(Object.keys(require.cache)) + "\\n"));`);

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
