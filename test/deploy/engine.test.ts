import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { runsWith } from "../support/not-run";
import { root } from "../support/process";
import { runCommand } from "../support/stack";

// deploy/local-docker/engine.sh stop, after what a killed run or a reboot leaves under its folder
// (CATALOGUE_DOCKER_ROOT): a PID file whose number another process now has, and mounts dockerd
// made under its exec root. Neither needs a dockerd.

const engine = (folder: string) =>
	runCommand(
		"bash",
		[path.join(root, "deploy/local-docker/engine.sh"), "stop"],
		{ PATH: process.env.PATH, CATALOGUE_DOCKER_ROOT: folder },
		20_000,
	);

let folder: string;
beforeEach(() => (folder = mkdtempSync(path.join(tmpdir(), "catalogue-engine-"))));
afterEach(() => rmSync(folder, { recursive: true, force: true }));

test("stop leaves alone the process a stale PID file names now, and forgets the file", async () => {
	const other = spawn("sleep", ["30"]);
	try {
		await new Promise(resolve => other.once("spawn", resolve));
		writeFileSync(path.join(folder, "dockerd.pid"), String(other.pid));
		const { code, output } = await engine(folder);
		expect({ code, output }).toEqual({ code: 0, output: "" });
		expect(other.exitCode).toBeNull();
		expect(other.signalCode).toBeNull();
		expect(existsSync(path.join(folder, "dockerd.pid"))).toBe(false);
	} finally {
		other.kill("SIGKILL");
	}
});

describe("mounts dockerd left", () => {
	if (
		!runsWith(process.getuid?.() === 0, {
			notRun: "engine.sh's unmount test NOT RUN: mounting needs root",
			hint: "Run it as root, as the compose stack's suite is.",
			name: "stop unmounts what dockerd left under its exec root",
		})
	)
		return;

	test("stop unmounts what dockerd left under its exec root, so the folder can be removed", async () => {
		const netns = path.join(folder, "exec/netns");
		mkdirSync(netns, { recursive: true });
		writeFileSync(path.join(netns, "default"), "");
		execFileSync("mount", ["--bind", "/proc/self/ns/net", path.join(netns, "default")]);
		const mounted = () => readFileSync("/proc/self/mounts", "utf8").includes(` ${folder}/`);
		try {
			expect(mounted()).toBe(true);
			const { code, output } = await engine(folder);
			expect(code).toBe(0);
			expect(output).toContain(`engine: unmounted ${netns}/default, left by dockerd`);
			expect(mounted()).toBe(false);
		} finally {
			if (mounted()) execFileSync("umount", ["--lazy", path.join(netns, "default")]);
		}
	});
});
