import { randomFillSync, randomUUID } from "node:crypto";
import { monotonicFactory } from "ulid";

/** Random bytes drawn from the operating system a page at a time, handed out one by one. */
const pool = Buffer.alloc(4096);
let drawn = pool.length;

/**
 * A number in [0, 1) from one random byte, as ulid's own generator makes it, without a call into crypto per character.
 * ulid turns it into one of 32 characters: byte / 256 * 32, exactly uniform.
 */
function pooledRandom(): number {
	if (drawn === pool.length) {
		randomFillSync(pool);
		drawn = 0;
	}
	return pool[drawn++] / 256;
}

/** A new record id: a ULID, so ids sort as text in creation order in every storage backend (monotonic within a process). */
export const newId: () => string = monotonicFactory(pooledRandom);

/** A claim's token (lib/integrity/write-claims.ts): unique, never sorted. Cheaper than a ULID, whose 16 random characters are drawn one by one. */
export const newToken: () => string = randomUUID;
