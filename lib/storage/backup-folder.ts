/**
 * A backup's folder written so that it never holds a torn file, whatever stops the writing (a
 * full disk, a kill -9, a power cut): the NeDB files of lib/storage/backup.ts and its manifest.
 */
import { mkdir, open, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { DATA_SERVICE_NAMES, type DataServiceName } from "../catalogue/services";
import { dataFile } from "./adapter";

/** The file written last into a backup's folder: a folder without it holds no finished backup. */
export const MANIFEST = "backup.json";

/** Writes each file as `<file>.partial`, flushed to the disk; a failure leaves none of them. */
async function writePartials(files: [string, Buffer | string][]): Promise<void> {
	try {
		for (const [file, bytes] of files) await writeFile(`${file}.partial`, bytes, { flush: true });
	} catch (err) {
		for (const [file] of files) await rm(`${file}.partial`, { force: true });
		throw err;
	}
}

/** Flushes a folder's entries (the renames and removals in it) to the disk. */
export async function syncFolder(dir: string): Promise<void> {
	const handle = await open(dir, "r");
	await handle.sync().finally(() => handle.close());
}

/**
 * Writes the copies into `to` (made if missing) as `<collection>.db`, each first as a `.partial`
 * flushed to the disk, all renamed into place once all are written (the file of a collection not
 * copied removed), then `manifest` as backup.json the same way. A failure before the renames
 * leaves the folder as it was, the backup before included; after, a folder without backup.json.
 */
export async function writeBackupFolder(
	to: string,
	copies: { collection: DataServiceName; bytes: Buffer }[],
	manifest: object,
): Promise<void> {
	await mkdir(to, { recursive: true });
	await writePartials(copies.map(copy => [dataFile(to, copy.collection), copy.bytes]));
	const manifestFile = path.join(to, MANIFEST);
	// From here until the new manifest, the folder holds no finished backup.
	await rm(manifestFile, { force: true });
	await syncFolder(to);
	for (const name of DATA_SERVICE_NAMES)
		if (copies.some(copy => copy.collection === name)) await rename(`${dataFile(to, name)}.partial`, dataFile(to, name));
		else await rm(dataFile(to, name), { force: true });
	await writePartials([[manifestFile, `${JSON.stringify(manifest, null, 2)}\n`]]);
	await rename(`${manifestFile}.partial`, manifestFile);
	await syncFolder(to);
}
