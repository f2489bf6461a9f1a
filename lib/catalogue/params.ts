/** Validation rules shared by the services' action `params` (fastest-validator). */

import { texts, type ErrorText } from "./errors";

type ValidationErrors = { type: string; actual?: unknown; expected?: unknown }[];

const NUMERIC_TEXT = /^-?\d+(\.\d+)?$/;

/** No control character (C0, DEL, C1) and no lone surrogate, which is not Unicode text at all. */
const PRINTABLE = /^[^\p{Cc}\p{Cs}]*$/u;

/**
 * Of a string rule: at most `maxCharacters` characters, counted as code points, as JSON Schema's `maxLength` counts them
 * (fastest-validator's `max` counts UTF-16 units: 🎲 would count twice). Too long gets fastest-validator's own `stringMax` message.
 */
const atMostCharacters = (maxCharacters: number) => ({
	maxCharacters,
	custom(value: unknown, errors: ValidationErrors): unknown {
		if (typeof value !== "string" || value.length <= maxCharacters) return value;
		const characters = [...value].length;
		if (characters > maxCharacters) errors.push({ type: "stringMax", expected: maxCharacters, actual: characters });
		return value;
	},
});

/** A required text: trimmed, non-empty, at most `max` characters, printable (a NUL, newline or half a surrogate pair is refused). */
export const text = (max: number) =>
	({
		type: "string",
		trim: true,
		empty: false,
		...atMostCharacters(max),
		pattern: PRINTABLE,
		messages: { stringPattern: texts.unprintableText },
	}) as const;

/**
 * An optional text filter (query string), of at most `max` characters. A `literal` one, compared with stored text (not a pattern),
 * refuses what no stored text holds, as `text` does: MongoDB's driver throws on a NUL in a pattern where SQLite finds nothing.
 */
export const filter = (max: number, literal: boolean) =>
	({
		type: "string",
		optional: true,
		...atMostCharacters(max),
		...(literal && { pattern: PRINTABLE, messages: { stringPattern: texts.unprintableText } }),
	}) as const;

/** The shape of every id the service issues (lib/catalogue/ids.ts): a ULID, 26 characters of Crockford's base 32. */
export const ID_SHAPE = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * A required id of the records `unknown` speaks of. Any other shape is answered with that text before a store is asked,
 * so a write with a huge or hostile id stores nothing.
 */
export const idOf = (unknown: ErrorText) => ({ type: "string", pattern: ID_SHAPE, messages: { stringPattern: unknown } }) as const;

/** `{ id }` pointing at a record of the kind `unknown` speaks of; extra keys are dropped. */
export const referenceTo = (unknown: ErrorText) =>
	({
		type: "object",
		strict: "remove",
		props: { id: { type: "string", trim: true, empty: false, pattern: ID_SHAPE, messages: { stringPattern: unknown } } },
	}) as const;

/** A pattern of the decimal numbers from 0 to `max`, written without leading zeros: shorter ones, then each prefix of `max`. */
function upTo(max: number): string {
	const digits = String(max);
	const any = (count: number) => (count === 0 ? "" : `\\d{${count}}`);
	const shorter = digits.length === 1 ? [] : ["\\d", ...(digits.length > 2 ? [`[1-9]\\d{1,${digits.length - 2}}`] : [])];
	const below = [...digits].flatMap((digit, at) => {
		const lowest = at === 0 && digits.length > 1 ? 1 : 0;
		const top = Number(digit) - 1;
		return top < lowest ? [] : [`${digits.slice(0, at)}[${lowest}-${top}]${any(digits.length - at - 1)}`];
	});
	return [...shorter, ...below, digits].join("|");
}

/**
 * The pattern of the text `wholeNumber(min, max)` reads as a number in range (NUMERIC_TEXT, trimmed), for the OpenAPI document:
 * leading zeros and a zero fraction are read, and `-0` is 0.
 */
function wholeNumberText(min: number, max?: number): string {
	if (min < 0) throw new Error("wholeNumber's text is written for ranges from 0 up");
	const number = (bound?: number) => `0*(?:${bound === undefined ? "\\d+" : upTo(bound)})(?:\\.0+)?`;
	const notBelow = min > 0 ? `(?!${number(min - 1)}\\s*$)` : "";
	const negativeZero = min === 0 ? "|-0+(?:\\.0+)?" : "";
	return `^\\s*${notBelow}(?:${number(max)}${negativeZero})\\s*$`;
}

/**
 * A whole number given as a JSON number or a numeric string, converted to a number; anything else fails with fastest-validator's
 * messages. Without `max`, any whole number from `min` up. `wholeNumber` tells readers of the rule (lib/http/openapi.ts documents it
 * from there); fastest-validator ignores it.
 */
export function wholeNumber(min: number, max?: number) {
	return {
		type: "any",
		wholeNumber: { min, ...(max !== undefined && { max }), text: wholeNumberText(min, max) },
		custom(value: unknown, errors: ValidationErrors): unknown {
			// A missing value is already reported as required by the rule itself.
			if (value === undefined || value === null) return value;
			const number =
				typeof value === "number"
					? value
					: typeof value === "string" && NUMERIC_TEXT.test(value.trim())
						? Number(value)
						: Number.NaN;
			if (!Number.isFinite(number)) errors.push({ type: "number", actual: value });
			else if (!Number.isInteger(number)) errors.push({ type: "numberInteger", actual: value });
			else if (number < min) errors.push({ type: "numberMin", expected: min, actual: value });
			else if (max !== undefined && number > max) errors.push({ type: "numberMax", expected: max, actual: value });
			return number;
		},
	};
}
