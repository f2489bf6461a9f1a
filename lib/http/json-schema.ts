/**
 * fastest-validator rules (the services' action `params`) as JSON Schema 2020-12, the dialect of
 * OpenAPI 3.1: the document says what the validation does because it is read from the same rules.
 */

export type JsonSchema = { [key: string]: unknown };

/** A rule as the services write them: a type name, a rule object, or a list of alternatives. */
export type Rule = string | RuleObject | readonly Rule[];

export interface RuleObject {
	type: string;
	optional?: boolean;
	empty?: boolean;
	trim?: boolean;
	min?: number;
	max?: number;
	/** lib/catalogue/params.ts text: at most this many characters (code points). */
	maxCharacters?: number;
	pattern?: RegExp | string;
	props?: Params;
	items?: Rule;
	values?: readonly unknown[];
	/** An array rule's: a single value is taken as a list of one. */
	convert?: boolean;
	/** lib/catalogue/params.ts wholeNumber: a whole number min..max, or the same as text. */
	wholeNumber?: { min: number; max?: number; text: string };
}

/** An action's `params`; `$$` keys (`$$strict`) are options of the validator, not fields. */
export type Params = { readonly [field: string]: Rule | string | boolean };

const fields = (params: Params) => Object.entries(params).filter(([name]) => !name.startsWith("$$")) as [string, Rule][];

const asObject = (rule: Rule): RuleObject | undefined =>
	typeof rule === "string" ? { type: rule } : Array.isArray(rule) ? undefined : (rule as RuleObject);

/** Whether a field may be left out: every alternative of a list must allow it. */
export function isOptional(rule: Rule): boolean {
	if (Array.isArray(rule)) return rule.every(isOptional);
	return asObject(rule)?.optional === true;
}

function stringSchema(rule: RuleObject): JsonSchema {
	const minLength = rule.empty === false ? Math.max(1, rule.min ?? 1) : rule.min;
	const maxLength = rule.max ?? rule.maxCharacters;
	const pattern = rule.pattern instanceof RegExp ? rule.pattern.source : rule.pattern;
	return {
		type: "string",
		...(minLength !== undefined && { minLength }),
		...(maxLength !== undefined && { maxLength }),
		...(pattern !== undefined && { pattern }),
		...(rule.trim && { description: "Leading and trailing white space is removed before the checks." }),
	};
}

/** `schema` or null: fastest-validator takes an optional field's null as its absence. */
function orNull(schema: JsonSchema): JsonSchema {
	if (Array.isArray(schema.oneOf)) return { ...schema, oneOf: [...(schema.oneOf as JsonSchema[]), { type: "null" }] };
	if (Array.isArray(schema.enum)) return { ...schema, enum: [...(schema.enum as unknown[]), null] };
	if (typeof schema.type === "string") return { ...schema, type: [schema.type, "null"] };
	return { anyOf: [schema, { type: "null" }] };
}

/**
 * `{ properties, required }` of the fields of `params`; other keys are dropped by the service (`strict: "remove"`). An optional field
 * may be null.
 */
export function objectSchema(params: Params): JsonSchema {
	const entries = fields(params);
	const required = entries.filter(([, rule]) => !isOptional(rule)).map(([name]) => name);
	const schemaOf = (rule: Rule) => (isOptional(rule) ? orNull(ruleSchema(rule)) : ruleSchema(rule));
	return {
		type: "object",
		properties: Object.fromEntries(entries.map(([name, rule]) => [name, schemaOf(rule)])),
		...(required.length > 0 && { required }),
	};
}

/** The JSON Schema of one rule; a rule of a type this catalogue does not use throws, so none is documented wrong. */
export function ruleSchema(rule: Rule): JsonSchema {
	if (Array.isArray(rule)) return { oneOf: rule.map(ruleSchema) };
	const object = asObject(rule)!;
	if (object.wholeNumber) {
		const { min, max, text } = object.wholeNumber;
		return {
			description: `A whole number ${max === undefined ? `from ${min} up` : `from ${min} to ${max}`}, as a JSON number or as text ("12").`,
			oneOf: [
				{ type: "integer", minimum: min, ...(max !== undefined && { maximum: max }) },
				{ type: "string", pattern: text },
			],
		};
	}
	switch (object.type) {
		case "string":
			return stringSchema(object);
		case "boolean":
			return { type: "boolean" };
		case "enum":
			return { enum: [...(object.values ?? [])] };
		case "object":
			return objectSchema(object.props ?? {});
		case "array": {
			const array = {
				type: "array",
				...(object.items !== undefined && { items: ruleSchema(object.items) }),
				...(object.max !== undefined && { maxItems: object.max }),
			};
			// Converted, one item is as good as the list of it.
			return object.convert && object.items !== undefined ? { oneOf: [ruleSchema(object.items), array] } : array;
		}
	}
	throw new Error(`lib/http/json-schema.ts cannot document a fastest-validator rule of type "${object.type}"`);
}

/**
 * The rule as a query string or path segment can carry it: text only. A rule with no text
 * alternative (a boolean, a list of ids) cannot be sent there and is left out (undefined).
 */
export function textRuleSchema(rule: Rule): JsonSchema | undefined {
	const texts = (Array.isArray(rule) ? rule : [rule]).map(ruleSchema).filter(schema => schema.type === "string");
	return texts.length === 0 ? undefined : texts.length === 1 ? texts[0] : { oneOf: texts };
}

/** The fields of `params` other than `except`, as [name, rule]. */
export function ruleFields(params: Params, except: string[] = []): [string, Rule][] {
	return fields(params).filter(([name]) => !except.includes(name));
}
