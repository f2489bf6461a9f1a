import { ruleSchema } from "../../lib/http/json-schema";
import { pageableRule } from "../../lib/catalogue/page";

// fastest-validator rules as JSON Schema (lib/http/json-schema.ts): what the document says a body may be.

test("an array rule that converts one item to a list documents both: the item, or a list of them", () => {
	const sort = ruleSchema(pageableRule(["id", "name"])).properties as Record<string, { oneOf?: { type?: string }[] }>;
	// Optional, so null too, as the validator takes it.
	expect(sort.sort.oneOf?.map(schema => schema.type)).toEqual(["object", "array", "null"]);
	expect(ruleSchema({ type: "array", items: { type: "string" } })).toEqual({ type: "array", items: { type: "string" } });
});
