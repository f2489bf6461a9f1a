import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root } from "../support/process";

// The tree as docs/architecture.md and the folder READMEs describe it: layers that import only
// downwards, without a cycle, and every folder and file named where a reader looks for it.

const CODE_FOLDERS = ["lib", "mixins", "middlewares", "services", "repl", "scripts"];

/** The TypeScript files under `folder`, from the repository's root. */
function sources(folder: string): string[] {
	return readdirSync(path.join(root, folder), { recursive: true, encoding: "utf8" })
		.filter(file => file.endsWith(".ts"))
		.map(file => path.join(folder, file));
}

const files = [...CODE_FOLDERS.flatMap(sources), "moleculer.config.ts"];

/** The repository's files that `file` imports (types included), resolved. */
function importsOf(file: string): string[] {
	const text = readFileSync(path.join(root, file), "utf8");
	const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)].map(([, spec]) => spec);
	return specs.map(spec => {
		const target = path.normalize(path.join(path.dirname(file), spec)).replace(/\.js$/, "");
		return existsSync(path.join(root, `${target}.ts`)) ? `${target}.ts` : path.join(target, "index.ts");
	});
}

const graph = new Map(files.map(file => [file, importsOf(file)]));
const layer = (file: string) => file.split(path.sep)[0];

test("lib/ imports nothing from the folders built on it, and mixins/ only services' types", () => {
	const upward = [...graph].flatMap(([file, imports]) =>
		imports
			.filter(target =>
				layer(file) === "lib"
					? ["mixins", "middlewares", "services", "repl", "scripts"].includes(layer(target))
					: layer(file) === "mixins" && layer(target) === "services" && !target.endsWith(".types.ts"),
			)
			.map(target => `${file} -> ${target}`),
	);
	expect(upward).toEqual([]);
	// The check reads imports: lib/ files do import each other.
	expect(graph.get("lib/catalogue/kinds.ts")).toContain("lib/catalogue/kind.ts");
});

test("no module imports itself through others", () => {
	const cycles: string[] = [];
	const state = new Map<string, "open" | "done">();
	const visit = (file: string, trail: string[]) => {
		if (state.get(file) === "done") return;
		if (state.get(file) === "open") return void cycles.push([...trail.slice(trail.indexOf(file)), file].join(" -> "));
		state.set(file, "open");
		for (const target of graph.get(file) ?? []) visit(target, [...trail, file]);
		state.set(file, "done");
	};
	for (const file of graph.keys()) visit(file, []);
	expect(cycles).toEqual([]);
});

/** The folders directly under `folder`. */
const folders = (folder: string) =>
	readdirSync(path.join(root, folder)).filter(name => statSync(path.join(root, folder, name)).isDirectory());

test("lib/README.md's table and docs/architecture.md list every folder of lib/, and nothing else", () => {
	const libFolders = folders("lib").sort();
	const table = readFileSync(path.join(root, "lib/README.md"), "utf8");
	expect([...table.matchAll(/^\| `([\w-]+)\/` \|/gm)].map(([, name]) => name).sort()).toEqual(libFolders);
	const architecture = readFileSync(path.join(root, "docs/architecture.md"), "utf8");
	const libRow = architecture.split("\n").find(line => line.startsWith("| [lib/]"))!;
	expect([...libRow.matchAll(/\(\.\.\/lib\/([\w-]+)\/\)/g)].map(([, name]) => name).sort()).toEqual(libFolders);
});

/**
 * Whether a README names `file`: as itself (`db.mixin`), or by its pattern and its own name
 * (`<name>.service.ts` and `authors`).
 */
function named(readme: string, file: string): boolean {
	const [first, ...rest] = file.replace(/\.(ts|mjs)$/, "").split(".");
	if (readme.includes([first, ...rest].join("."))) return true;
	return rest.length > 0 && readme.includes(`<name>.${rest.join(".")}`) && readme.includes(`\`${first}\``);
}

test("docs/architecture.md's table names every folder of code, and each one's README names each of its files", () => {
	const architecture = readFileSync(path.join(root, "docs/architecture.md"), "utf8");
	for (const folder of [...CODE_FOLDERS, "test", "bench", "deploy"])
		expect([folder, architecture.includes(`${folder}/`)]).toEqual([folder, true]);
	const described = ["mixins", "middlewares", "services", "repl", "scripts", ...folders("lib").map(name => `lib/${name}`)];
	const unnamed = described.flatMap(folder => {
		const readme = readFileSync(path.join(root, folder, "README.md"), "utf8");
		return readdirSync(path.join(root, folder))
			.filter(name => /\.(ts|mjs)$/.test(name))
			.filter(name => !named(readme, name))
			.map(name => `${folder}/${name}`);
	});
	expect(unnamed).toEqual([]);
});

test("`npm run lint` refuses a comment that names a file that does not exist, and takes one that does or that git ignores", () => {
	const repository = mkdtempSync(path.join(tmpdir(), "catalogue-paths-"));
	try {
		execFileSync("git", ["init", "-q"], { cwd: repository });
		mkdirSync(path.join(repository, "lib"));
		writeFileSync(path.join(repository, ".gitignore"), "lib/written.md\n");
		writeFileSync(
			path.join(repository, "lib/here.ts"),
			'// Beside lib/here.ts; it writes lib/written.md.\nexport const url = "lib/gone.ts in a string is not a comment";\n',
		);
		writeFileSync(path.join(repository, "lib/stale.ts"), "/** Reads lib/gone.ts (moved). */\nexport const x = 1;\n");
		const check = () =>
			execFileSync(process.execPath, [path.join(root, "scripts/comment-paths.mjs")], { cwd: repository, stdio: "pipe" });
		expect(check).toThrow("lib/stale.ts: names lib/gone.ts, which does not exist");
		writeFileSync(path.join(repository, "lib/stale.ts"), "/** Reads lib/here.ts. */\nexport const x = 1;\n");
		expect(check().toString()).toBe("");
	} finally {
		rmSync(repository, { recursive: true, force: true });
	}
});
