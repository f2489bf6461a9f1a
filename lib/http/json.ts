/**
 * Checks on a parsed JSON body. Both walk with a stack of their own rather than recursing, since
 * the body may be nested as deep as its size allows (JSON.parse itself does not recurse; its
 * reviver would).
 */

/** Arrays and objects `value` holds, each with its depth (`{}` alone is depth 1). */
function* containers(value: unknown): Generator<[object, number]> {
	const pending: [unknown, number][] = [[value, 1]];
	while (pending.length > 0) {
		const [item, depth] = pending.pop()!;
		if (item === null || typeof item !== "object") continue;
		yield [item, depth];
		for (const child of Object.values(item)) pending.push([child, depth + 1]);
	}
}

/** Whether arrays or objects are nested more than `max` deep in `value` (a scalar is depth 0). */
export function isNestedDeeperThan(value: unknown, max: number): boolean {
	for (const [, depth] of containers(value)) if (depth > max) return true;
	return false;
}

/** `__proto__`, `constructor`, `toString`, `valueOf`, `hasOwnProperty`...: what every object inherits. */
const PROTOTYPE_KEYS = Object.getOwnPropertyNames(Object.prototype);

/**
 * Removes every key that names a member of Object.prototype, at any depth. No field of the
 * catalogue is named so, and each is an attack: JSON.parse makes `__proto__` an own property, but
 * copying the body into the params object (Object.assign, as the gateway does) would set that
 * object's prototype instead and lend it fields the body does not carry; a `toString` or `valueOf`
 * that is not a function makes the object throw wherever it is turned into text (fastest-validator
 * does so to quote a wrong value in its message).
 */
export function dropPrototypeKeys(value: unknown): void {
	for (const [item] of containers(value))
		for (const key of PROTOTYPE_KEYS) if (Object.hasOwn(item, key)) delete (item as Record<string, unknown>)[key];
}
