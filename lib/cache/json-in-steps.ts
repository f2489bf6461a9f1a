import { inSteps } from "../async/steps";

/** Items of a list serialized between two turns of the event loop. */
const JSON_STEP = 2000;

/**
 * Parts of a long list's JSON copied into the answer between two turns of the event loop: the copy is what first touches the answer's
 * memory, a page fault per page.
 */
const COPY_STEP = 8;

const OPEN = Buffer.from("[");
const COMMA = Buffer.from(",");
const CLOSE = Buffer.from("]");

/**
 * The bytes of `JSON.stringify(value)`, an array of more than `step` items serialized `step` at a time, then copied into one buffer a
 * few steps at a time, with a turn of the event loop between, so a long list does not hold the loop. Undefined where JSON.stringify
 * answers undefined.
 */
export async function jsonInSteps(value: unknown, step = JSON_STEP): Promise<Buffer | undefined> {
	if (!Array.isArray(value) || value.length <= step) {
		const json = JSON.stringify(value);
		return json === undefined ? undefined : Buffer.from(json);
	}
	const parts = [OPEN];
	for await (const slice of inSteps(value, step)) {
		if (parts.length > 1) parts.push(COMMA);
		// Without the brackets of the slice's own array: one byte each at either end.
		parts.push(Buffer.from(JSON.stringify(slice)).subarray(1, -1));
	}
	parts.push(CLOSE);
	const json = Buffer.allocUnsafe(parts.reduce((length, part) => length + part.length, 0));
	let at = 0;
	for await (const slice of inSteps(parts, COPY_STEP)) for (const part of slice) at += part.copy(json, at);
	return json;
}
