import { monotonicFactory } from "ulid";

/**
 * A new record id: a ULID, so ids sort as text in creation order (monotonic within a process,
 * millisecond-ordered across processes) in every storage backend.
 */
export const newId: () => string = monotonicFactory();
