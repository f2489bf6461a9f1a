import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Api } from "../support/catalogue";
import { startNats } from "../support/nats";
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

describe("the start-up log ends with one line saying where the catalogue is", () => {
	test("an embedded start: the API's URL, its docs and the SQLite file", async () => {
		const dataDir = path.join(folder, "ready-line");
		const catalogue = await startProcess({ DATA_DIR: dataDir, STORAGE: "file", LOGLEVEL: "info" });
		try {
			const url = catalogue.api.url.replace("127.0.0.1", "localhost");
			const last = () => catalogue.output().trimEnd().split("\n").at(-1) ?? "";
			await waitFor("the ready line is printed", () => Promise.resolve(last().includes("Catalogue ready")), [catalogue]);
			expect(last()).toMatch(
				new RegExp(
					` INFO .*: Catalogue ready: ${url} \\(docs: ${url}/docs\\), data in SQLite database ${dataDir}/catalogue\\.sqlite$`,
				),
			);
		} finally {
			expect(await catalogue.stop()).toBe(0);
		}
	});

	test("a node without the gateway: its services and the data's place", async () => {
		const node = startNode({ SERVICES: "games,authors", STORAGE: "memory", LOGLEVEL: "info" });
		try {
			const last = () => node.output().trimEnd().split("\n").at(-1) ?? "";
			await waitFor("the ready line is printed", () => Promise.resolve(last().includes("ready")), [node]);
			expect(last()).toMatch(/ INFO .*: Catalogue node ready: (games, authors|authors, games), data in memory$/);
		} finally {
			expect(await node.stop()).toBe(0);
		}
	});
});

test("a gateway that starts before the data services waits for them without a warning that they are not registered", async () => {
	const nats = await startNats();
	const port = await freePort();
	const cluster = { TRANSPORTER: nats.url, NAMESPACE: `ready-${port}`, STORAGE: "memory" };
	const gateway = startNode({ ...cluster, SERVICES: "api", PORT: String(port) });
	const data = [] as ReturnType<typeof startNode>[];
	try {
		const api = new Api(`http://127.0.0.1:${port}`);
		await waitFor(
			"the gateway is not ready, waiting for the data services",
			async () => {
				const answer = await api.get("/health/ready");
				return answer.status === 503 && (answer.body as { waitingFor: string[] }).waitingFor.includes("authors");
			},
			[gateway],
		);
		data.push(startNode({ ...cluster, SERVICES: "authors,categories,games", PORT: "0" }));
		await waitFor("the gateway is ready", () => api.get("/health/ready").then(answer => answer.status === 200), [gateway, ...data]);
	} finally {
		await Promise.all([gateway, ...data].map(node => node.stop()));
		await nats.stop();
	}
	expect(gateway.output()).not.toContain("is not registered");
	expect(gateway.output().trim()).toBe("");
});
