import { randomUUID } from "node:crypto";
import { monotonicFactory } from "ulid";

/**
 * A new record id: a ULID, so ids sort as text in creation order (monotonic within a process,
 * millisecond-ordered across processes) in every storage backend.
 */
export const newId: () => string = monotonicFactory();

/** A claim's token (lib/claims.ts): unique, never sorted. Cheaper than a ULID, whose 16 random characters are drawn one by one. */
export const newToken: () => string = randomUUID;
