// Part of `npm run lint`: every path to a file of the repository that a comment names exists, or
// is one git ignores (a file the project writes, such as bench/results.md). A comment that points
// at a moved or deleted file misleads whoever follows it.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

const FOLDERS = "lib|services|mixins|middlewares|repl|scripts|test|bench|docs|deploy|\\.ci";
/** A path from the repository's root, as comments write them: `lib/storage/adapter.ts`, `docs/storage.md`. */
const PATH = new RegExp(`(?<![\\w./-])(?:\\.\\./)*((?:${FOLDERS})/[\\w./-]*\\w\\.(?:ts|mts|js|mjs|md|json|sh|yml|yaml|conf))`, "g");
/** Line comments and block comments; strings are not comments, and a `//` inside one is not read as one. */
const COMMENT = /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)|(\/\/[^\n]*|\/\*[\s\S]*?\*\/)/g;

const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { encoding: "utf8" })
	.split("\n")
	.filter(file => /\.(ts|mts|js|mjs)$/.test(file) && existsSync(file));

const named = [];
for (const file of files) {
	for (const [, , comment] of readFileSync(file, "utf8").matchAll(COMMENT)) {
		if (comment) for (const [, path] of comment.matchAll(PATH)) if (!existsSync(path)) named.push({ file, path });
	}
}
// Those git ignores are files the project writes (a benchmark's results), absent from a fresh clone.
const ignored = new Set(
	spawnSync("git", ["check-ignore", "--no-index", "--stdin"], { input: named.map(({ path }) => path).join("\n"), encoding: "utf8" })
		.stdout.split("\n")
		.filter(Boolean),
);
const missing = named.filter(({ path }) => !ignored.has(path)).map(({ file, path }) => `${file}: names ${path}, which does not exist`);
if (missing.length > 0) {
	console.error(missing.join("\n"));
	process.exit(1);
}
