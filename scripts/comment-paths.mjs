// Part of `npm run lint`: every path to a file of the repository that a comment names exists.
// A comment that points at a moved or deleted file misleads whoever follows it.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

const FOLDERS = "lib|services|mixins|middlewares|repl|scripts|test|bench|docs|deploy|\\.ci";
/** A path from the repository's root, as comments write them: `lib/storage/adapter.ts`, `docs/storage.md`. */
const PATH = new RegExp(`(?<![\\w./-])(?:\\.\\./)*((?:${FOLDERS})/[\\w./-]*\\w\\.(?:ts|mts|js|mjs|md|json|sh|yml|yaml|conf))`, "g");
/** Line comments and block comments; strings are not comments, and a `//` inside one is not read as one. */
const COMMENT = /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)|(\/\/[^\n]*|\/\*[\s\S]*?\*\/)/g;

const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { encoding: "utf8" })
	.split("\n")
	.filter(file => /\.(ts|mts|js|mjs)$/.test(file) && existsSync(file));

const missing = [];
for (const file of files) {
	const source = readFileSync(file, "utf8");
	for (const [, , comment] of source.matchAll(COMMENT)) {
		if (!comment) continue;
		for (const [, named] of comment.matchAll(PATH))
			if (!existsSync(named)) missing.push(`${file}: names ${named}, which does not exist`);
	}
}
if (missing.length > 0) {
	console.error(missing.join("\n"));
	process.exit(1);
}
