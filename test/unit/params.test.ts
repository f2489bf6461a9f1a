import Validator from "fastest-validator";
import { texts } from "../../lib/catalogue/errors";
import { newId } from "../../lib/catalogue/ids";
import { idOf, referenceTo, text, wholeNumber } from "../../lib/catalogue/params";

const validator = new Validator({ useNewCustomCheckerFunction: true });
const check = (rule: object, value: unknown) => {
	const data: Record<string, unknown> = { value };
	const result = validator.compile({ value: rule })(data);
	return { result, value: data.value };
};

describe("wholeNumber", () => {
	test.each([
		[7, 7],
		["7", 7],
		[" 12 ", 12],
		[0, 0],
		[99, 99],
	])("accepts %p as %p", (input, number) => {
		expect(check(wholeNumber(0, 99), input)).toEqual({ result: true, value: number });
	});

	test.each([
		[12.5, "numberInteger"],
		["12.5", "numberInteger"],
		["abc", "number"],
		["", "number"],
		["0x10", "number"],
		["1e2", "number"],
		[true, "number"],
		[[5], "number"],
		[{}, "number"],
		[-1, "numberMin"],
		["-1", "numberMin"],
		[100, "numberMax"],
		[Number.MAX_VALUE, "numberMax"],
	])("refuses %p (%s)", (input, type) => {
		const { result } = check(wholeNumber(0, 99), input);
		expect(result).toEqual([expect.objectContaining({ type, field: "value", message: expect.stringContaining("'value'") })]);
	});

	test("is required, and a missing value is reported once", () => {
		expect(check(wholeNumber(0, 99), undefined).result).toEqual([expect.objectContaining({ type: "required" })]);
		expect(check(wholeNumber(0, 99), null).result).toEqual([expect.objectContaining({ type: "required" })]);
	});

	test.each([
		[0, 99],
		[0, 1000],
		[0, 5],
		[0, undefined],
		[1000, 2100],
	])("as text, the OpenAPI document's pattern takes what the rule takes from %p to %p, and nothing else", (min, max) => {
		const rule = wholeNumber(min, max);
		const pattern = new RegExp(rule.wholeNumber.text, "u");
		const numbers = [...Array(2300).keys()].flatMap(n => [String(n), String(-n)]);
		const written = numbers.flatMap(n => [n, `0${n}`, ` ${n} `, `${n}.0`, `${n}.00`, `${n}.5`, `${n}.`, `+${n}`, `${n}e0`]);
		const differ = written.filter(sent => pattern.test(sent) !== (check(rule, sent).result === true));
		expect(differ).toEqual([]);
		expect(written.filter(sent => pattern.test(sent)).length).toBeGreaterThan(0);
	});
});

describe("text", () => {
	test("trims, and refuses what is empty after trimming or too long", () => {
		expect(check(text(5), "  ab ")).toEqual({ result: true, value: "ab" });
		expect(check(text(5), "   ").result).toEqual([expect.objectContaining({ type: "stringEmpty" })]);
		expect(check(text(5), "abcdef").result).toEqual([expect.objectContaining({ type: "stringMax" })]);
	});

	test.each(["Zoë Ødegård", "王小明", "😀 family 👨‍👩‍👧", "שלום", "e\u0301", "zero\u200bwidth"])("accepts the Unicode text %p", name => {
		expect(check(text(200), name)).toEqual({ result: true, value: name });
	});

	test.each([
		["a NUL", "A\u0000n"],
		["a newline inside", "A\nB"],
		["a tab inside", "A\tB"],
		["DEL", "A\u007f"],
		["a C1 control", "A\u0085"],
		["a lone high surrogate", "A\ud800"],
		["a lone low surrogate", "\udc00A"],
	])("refuses %s, naming the field", (_case, name) => {
		expect(check(text(200), name).result).toEqual([
			expect.objectContaining({
				type: "stringPattern",
				field: "value",
				message: "The 'value' field must not contain control characters or invalid Unicode.",
			}),
		]);
	});
});

const ISSUED = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

describe("ids and references", () => {
	const unknown = { type: "stringPattern", message: "There is no author with that Id" };

	test("a reference keeps only its id, trimmed, of the shape the service issues", () => {
		const reference = referenceTo(texts.authorNotFound);
		expect(check(reference, { id: ` ${ISSUED} `, extra: 1 })).toEqual({ result: true, value: { id: ISSUED } });
		expect(check(reference, { id: "" }).result).not.toBe(true);
		expect(check(reference, { id: 1 }).result).not.toBe(true);
		expect(check(reference, "a").result).not.toBe(true);
	});

	test.each([
		["a word", "noExist"],
		["a lower-case ULID", ISSUED.toLowerCase()],
		["a ULID with a letter Crockford leaves out", `${ISSUED.slice(0, 25)}U`],
		["one character too many", `${ISSUED}0`],
		["90 KB", "0".repeat(90_000)],
	])("any other shape (%s) is the record's 'There is no ... with that Id'", (_shape, id) => {
		expect(check(referenceTo(texts.authorNotFound), { id }).result).toEqual([expect.objectContaining(unknown)]);
		expect(check(idOf(texts.authorNotFound), id).result).toEqual([expect.objectContaining(unknown)]);
	});

	test("the ids lib/catalogue/ids.ts issues have that shape", () => {
		for (let i = 0; i < 100; i++) expect(check(idOf(texts.authorNotFound), newId()).result).toBe(true);
	});
});
