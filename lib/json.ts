/**
 * JSON.parse reviver for request bodies: drops `__proto__` keys, which would otherwise replace
 * the prototype of the params object the gateway merges the body into, and so supply fields the
 * body does not really carry.
 */
export function withoutPrototypeKeys(key: string, value: unknown): unknown {
	return key === "__proto__" ? undefined : value;
}
