import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { NODE_FLAGS } from "../../lib/config/node-flags";
import { dockerfileStages } from "../support/dockerfile";
import { root } from "../support/process";

// `npm start` and the image start Node with the flags of lib/config/node-flags.ts; the TypeScript launchers import them.
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

describe("Node's flags for a catalogue node", () => {
	it("are taken by this Node, and keep V8's young generation within two halves of 16 MB", () => {
		// Objects that live a while, as the games of a list being made do, grow the young generation to its bound.
		const churn = `const kept = [];
			for (let i = 0; i < 3e6; i++) { kept.push({ i, title: "game " + i }); if (kept.length > 200000) kept.splice(0, 100000); }
			const young = require("node:v8").getHeapSpaceStatistics().find(space => space.space_name === "new_space");
			console.log(young.space_size);`;
		const run = spawnSync(process.execPath, [...NODE_FLAGS, "-e", churn], { encoding: "utf8" });
		expect(run.stderr).toBe("");
		expect(Number(run.stdout)).toBeGreaterThan(0);
		expect(Number(run.stdout)).toBeLessThanOrEqual(32 * 1_048_576);
	});

	it("leave V8 one thread for its background work, so a major collection's helpers do not take the loop's core in turns", () => {
		const threads = `const { readdirSync, readFileSync } = require("node:fs");
			console.log(readdirSync("/proc/self/task").map(task => readFileSync(\`/proc/self/task/\${task}/comm\`, "utf8").trim()).join(","));`;
		const run = spawnSync(process.execPath, [...NODE_FLAGS, "-e", threads], { encoding: "utf8" });
		expect(run.stderr).toBe("");
		// Node names V8's platform threads so; it starts four of them without the flag.
		expect(
			run.stdout
				.trim()
				.split(",")
				.filter(name => name === "V8Worker"),
		).toHaveLength(1);
	});

	it("are those of `npm start`, right before moleculer-runner", () => {
		const start = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts.start;
		expect(start).toContain(`node ${NODE_FLAGS.join(" ")} node_modules/moleculer/bin/moleculer-runner.js `);
	});

	it("are those of the image's CMD, right before moleculer-runner", () => {
		const image = dockerfileStages(read("Dockerfile")).at(-1)!;
		const cmd = image.filter(([keyword]) => keyword === "CMD").at(-1)!;
		const args = JSON.parse(cmd[1]) as string[];
		expect(args.slice(0, NODE_FLAGS.length + 2)).toEqual(["node", ...NODE_FLAGS, "node_modules/moleculer/bin/moleculer-runner.js"]);
	});
});
