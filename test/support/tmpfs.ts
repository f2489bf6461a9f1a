import { execFileSync } from "node:child_process";
import { mkdtempSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** A tmpfs of `size` (as mount takes it: `512k`, `4m`) mounted on `dir`, a disk that really fills up. */
export const mountTmpfs = (dir: string, size: string) =>
	execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "pipe" });

/** Gives the tmpfs on `dir` another size, its files kept: what an operator does who grows a full volume. */
export const resizeTmpfs = (dir: string, size: string) => execFileSync("mount", ["-o", `remount,size=${size}`, dir], { stdio: "pipe" });

/** Makes the tmpfs on `dir` read-only, its files kept: as a backup job mounts a volume. */
export const remountReadOnly = (dir: string) => execFileSync("mount", ["-o", "remount,ro", dir], { stdio: "pipe" });

export const unmount = (dir: string) => execFileSync("umount", [dir], { stdio: "pipe" });

/** Whether this process may mount a tmpfs (root, or a container with CAP_SYS_ADMIN): tried once on a folder of its own. */
export function canMountTmpfs(): boolean {
	const dir = mkdtempSync(path.join(tmpdir(), "catalogue-tmpfs-probe-"));
	try {
		mountTmpfs(dir, "64k");
		unmount(dir);
		return true;
	} catch {
		return false;
	} finally {
		rmdirSync(dir);
	}
}
