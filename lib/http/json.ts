/** Checks on a parsed JSON body, walked with a stack rather than recursion: the body may be nested as deep as its size allows. */

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
 * Removes every key naming a member of Object.prototype, at any depth: copied into the params, `__proto__` would set their
 * prototype, and a `toString` or `valueOf` that is not a function makes the object throw when turned into text.
 */
export function dropPrototypeKeys(value: unknown): void {
	for (const [item] of containers(value))
		for (const key of PROTOTYPE_KEYS) if (Object.hasOwn(item, key)) delete (item as Record<string, unknown>)[key];
}
