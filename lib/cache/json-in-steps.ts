import { setImmediate as nextTurn } from "node:timers/promises";
import { inSteps } from "../async/steps";

/** Items of a list serialized between two turns of the event loop. */
const JSON_STEP = 2000;

/**
 * Bytes of a long list's JSON copied into the answer between two turns of the event loop: the copy is what first touches the answer's
 * memory, a page fault per page.
 */
const COPY_BYTES = 2 * 1024 * 1024;

/** The JSON of a list's items, without the brackets of its own array: one byte each at either end. */
export const jsonItems = (items: unknown[]): Buffer => Buffer.from(JSON.stringify(items)).subarray(1, -1);

/**
 * The bytes of a JSON array whose items are `parts` (each made by `jsonItems` of at least one item) in order, copied into one buffer
 * `copyBytes` at a time with a turn of the event loop between.
 */
export async function joinedInSteps(parts: Buffer[], copyBytes = COPY_BYTES): Promise<Buffer> {
	const json = Buffer.allocUnsafe(parts.reduce((length, part) => length + part.length, 0) + Math.max(parts.length - 1, 0) + 2);
	json[0] = 0x5b; // [
	let at = 1;
	let copied = 0;
	for (const [i, part] of parts.entries()) {
		if (i > 0) json[at++] = 0x2c; // ,
		at += part.copy(json, at);
		copied += part.length;
		if (copied >= copyBytes && i < parts.length - 1) {
			copied = 0;
			await nextTurn();
		}
	}
	json[at] = 0x5d; // ]
	return json;
}

/**
 * The bytes of `JSON.stringify(value)`, an array of more than `step` items serialized `step` at a time, then copied into one buffer in
 * steps, with a turn of the event loop between, so a long list does not hold the loop. Undefined where JSON.stringify answers undefined.
 */
export async function jsonInSteps(value: unknown, step = JSON_STEP): Promise<Buffer | undefined> {
	if (!Array.isArray(value) || value.length <= step) {
		const json = JSON.stringify(value);
		return json === undefined ? undefined : Buffer.from(json);
	}
	const parts: Buffer[] = [];
	for await (const slice of inSteps(value, step)) parts.push(jsonItems(slice));
	return joinedInSteps(parts);
}
