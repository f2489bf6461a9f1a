/**
 * One process at a time per data file. Two processes on one NeDB file each append their own
 * writes and each compact the file from their own memory, so each compaction drops the other's
 * records: `npm run import` run on the DATA_DIR of a running `npm start` would lose data. The
 * lock is `<file>.lock`, naming its holder by process id and start time: a holder killed with
 * kill -9 leaves the file behind, and it is taken over once no living process matches it (the
 * same pid reused by another process, a container's health check say, has another start time).
 * Brokers of one process share their locks (the tests run several). The processes it sees are
 * those of its machine or container: two containers on one data volume are not kept apart.
 */
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";

const held = new Map<string, number>();

/** When the process `pid` started (jiffies since boot, from /proc), or undefined where /proc does not say. */
function startedAt(pid: number): string | undefined {
	try {
		// Field 22 of /proc/<pid>/stat, counted after the command name, which may itself hold spaces.
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
	} catch {
		return undefined;
	}
}

/** The lock file's text for this process. */
const holder = (pid: number) => `${pid} ${startedAt(pid) ?? "?"}`;

/** Whether the process the lock's text names still runs. */
function living(text: string): boolean {
	const [pid, started] = text.trim().split(" ");
	const id = Number(pid);
	if (!Number.isInteger(id) || id <= 0) return false;
	if (started !== "?" && started !== undefined) return startedAt(id) === started;
	try {
		process.kill(id, 0);
		return true;
	} catch (err) {
		return (err as NodeJS.ErrnoException).code === "EPERM";
	}
}

/** The text of an existing lock, or undefined once it is gone. */
function lockText(lock: string): string | undefined {
	try {
		return readFileSync(lock, "utf8");
	} catch {
		return undefined;
	}
}

/** A data file a living process holds: what it says names that process, and the ways out. */
export class DataFileInUse extends Error {
	constructor(file: string, text: string) {
		super(inUseText(file, text));
	}
}

const inUseText = (file: string, text: string) =>
	`${file} is in use by process ${text.split(" ")[0]} (its lock: ${file}.lock). Stop that catalogue first, ` +
	"or reach it through the cluster (set TRANSPORTER) instead of opening its files. A lock left by a process " +
	"that no longer runs is taken over by itself.";

/**
 * Makes the lock holding `text`, whole or not at all: written to a file of this process's own,
 * then linked under the lock's name, which fails when the name is taken. Answers false then.
 */
function create(lock: string, text: string): boolean {
	const own = `${lock}.${process.pid}.new`;
	writeFileSync(own, text);
	try {
		linkSync(own, lock);
		return true;
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
		throw err;
	} finally {
		unlinkSync(own);
	}
}

/**
 * Removes a lock left by a process that is gone (or by this one, before a restart in place). It is
 * first renamed aside, atomically: when another process took it over meanwhile, what was renamed
 * is that process's lock, which is put back, and this one refuses.
 */
function takeOver(lock: string, stale: string, file: string): void {
	const aside = `${lock}.${process.pid}`;
	try {
		renameSync(lock, aside);
	} catch {
		return;
	}
	const taken = lockText(aside);
	if (taken !== stale) {
		renameSync(aside, lock);
		throw new DataFileInUse(file, taken ?? "?");
	}
	unlinkSync(aside);
}

/**
 * Takes `<file>.lock` for this process; throws DataFileInUse when a living process holds it, or
 * the file system's error when the lock cannot be written (a full disk). Answers its release.
 */
export function lockDataFile(file: string): () => void {
	const lock = `${file}.lock`;
	const mine = holder(process.pid);
	const count = held.get(lock) ?? 0;
	if (count === 0) {
		// Before NeDB makes the data folder on a first start.
		mkdirSync(path.dirname(file), { recursive: true });
		for (let attempt = 0; ; attempt++) {
			if (create(lock, mine)) break;
			const text = lockText(lock);
			if (text !== undefined && text !== mine && living(text)) throw new DataFileInUse(file, text);
			if (attempt > 0) throw new DataFileInUse(file, text ?? "?");
			if (text !== undefined) takeOver(lock, text, file);
		}
	}
	held.set(lock, count + 1);
	let released = false;
	return () => {
		if (released) return;
		released = true;
		const left = held.get(lock)! - 1;
		if (left > 0) return void held.set(lock, left);
		held.delete(lock);
		if (lockText(lock) === mine) unlinkSync(lock);
	};
}
