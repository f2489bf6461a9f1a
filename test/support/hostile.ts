/**
 * Hostile requests for every route of the gateway's alias table, as fast-check arbitraries, and
 * what it takes to put them on the wire byte for byte (test/contract/hostile.test.ts).
 */
import http from "node:http";
import fc from "fast-check";
import { unknownIds } from "./catalogue";

type RecordKind = "category" | "author" | "game";

/** The id of a record of the running catalogue, picked when the request is sent: records come and go during a run. */
class KnownId {
	constructor(
		readonly kind: RecordKind,
		readonly pick: number,
	) {}

	[fc.toStringMethod](): string {
		return `new KnownId(${JSON.stringify(this.kind)}, ${this.pick})`;
	}
}

/** JSON text sent as it is, where JSON.stringify cannot write it: a 400-digit number, `-0`, 5,000 levels of nesting, no JSON at all. */
class RawJson {
	constructor(readonly text: string) {}

	[fc.toStringMethod](): string {
		return `new RawJson(${JSON.stringify(this.text)})`;
	}
}

/** A JSON value as a hostile client writes it; objects may have own `__proto__` keys (made by Object.fromEntries). */
type Hostile = null | boolean | number | string | KnownId | RawJson | Hostile[] | { [key: string]: Hostile };

/** A request body: a JSON value, bytes that are not UTF-8, or none. */
type Body = Hostile | Uint8Array | undefined;

/** One query parameter as written in the URL: key and value already percent-encoded (or left raw on purpose). */
type QueryPair = [key: string, value: string | KnownId];

export interface HostileRequest {
	/** The route aimed at, as the gateway's alias table writes it: "PUT /author/:id". */
	alias: string;
	/** The path's last segment for routes that have one: percent-encoded text, or a known record's id. */
	segment?: string | KnownId;
	query: QueryPair[];
	body: Body;
	contentType?: string;
}

/** The ids of the records each kind has right now; a KnownId picks among them. */
export type Ids = Record<RecordKind, string[]>;

export interface WireRequest {
	method: string;
	path: string;
	body?: Buffer;
	contentType?: string;
}

export interface Reply {
	status: number;
	contentType: string | undefined;
	text: string;
}

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** `bytes` as %XX escapes, unreserved ASCII kept. */
function percentEncodeBytes(bytes: Uint8Array): string {
	return Array.from(bytes, byte => {
		const char = String.fromCharCode(byte);
		return UNRESERVED.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
	}).join("");
}

/** `text` percent-encoded as UTF-8; unlike encodeURIComponent it never throws (a lone surrogate becomes U+FFFD). */
const percentEncode = (text: string): string => percentEncodeBytes(Buffer.from(text, "utf8"));

function idFor(id: KnownId, ids: Ids): string {
	const candidates = ids[id.kind];
	return candidates.length === 0 ? "" : candidates[id.pick % candidates.length];
}

/** The JSON text of `value`, written by hand so own `__proto__` keys and raw number literals survive. */
function jsonText(value: Hostile, ids: Ids): string {
	if (value instanceof RawJson) return value.text;
	if (value instanceof KnownId) return JSON.stringify(idFor(value, ids));
	if (Array.isArray(value)) return `[${value.map(item => jsonText(item, ids)).join(",")}]`;
	if (value !== null && typeof value === "object")
		return `{${Object.entries(value)
			.map(([key, item]) => `${JSON.stringify(key)}:${jsonText(item, ids)}`)
			.join(",")}}`;
	return JSON.stringify(value);
}

/** The request as bytes on the wire, known ids resolved against the records of the moment. */
export function toWire(request: HostileRequest, ids: Ids): WireRequest {
	const [method, route] = request.alias.split(" ");
	const base = route.replace(/\/:\w+$/, "");
	const segment = request.segment instanceof KnownId ? percentEncode(idFor(request.segment, ids)) : request.segment;
	const query = request.query
		.map(([key, value]) => `${key}=${value instanceof KnownId ? percentEncode(idFor(value, ids)) : value}`)
		.join("&");
	const path = `${base}${segment === undefined ? "" : `/${segment}`}${query === "" ? "" : `?${query}`}`;
	const { body } = request;
	const bytes =
		body === undefined ? undefined : body instanceof Uint8Array ? Buffer.from(body) : Buffer.from(jsonText(body, ids), "utf8");
	return { method, path, body: bytes, contentType: bytes === undefined ? undefined : request.contentType };
}

/**
 * How a wire request reads in a failure report: method, path (its unprintable characters as
 * \u{..}, so that a raw DEL shows), content type, body (long ones cut).
 */
export function describeWire({ method, path, body, contentType }: WireRequest, limit = 600): string {
	const cut = (text: string) => (text.length > limit ? `${text.slice(0, limit)}… (${text.length} characters)` : text);
	const shownPath = path.replace(/[^\x21-\x7e]/g, char => `\\u{${char.charCodeAt(0).toString(16)}}`);
	const shownBody = body === undefined ? "no body" : `body ${cut(JSON.stringify(body.toString("utf8")))} (${body.length} bytes)`;
	return `${method} ${cut(shownPath)} [Content-Type: ${contentType ?? "none"}] ${shownBody}`;
}

/**
 * Sends `wire` exactly as written (node:http, unlike fetch, leaves `..` and bad escapes in the
 * path alone), on a connection of its own; rejects after `timeoutMs`, so a hang fails the run.
 */
export function sendWire(baseUrl: string, wire: WireRequest, timeoutMs = 10_000): Promise<Reply> {
	const { hostname, port } = new URL(baseUrl);
	const headers: Record<string, string> = {};
	if (wire.contentType !== undefined) headers["Content-Type"] = wire.contentType;
	if (wire.body !== undefined) headers["Content-Length"] = String(wire.body.length);
	return new Promise((resolveReply, reject) => {
		const request = http.request(
			{ hostname, port, method: wire.method, path: wire.path, headers, agent: false, signal: AbortSignal.timeout(timeoutMs) },
			response => {
				const chunks: Buffer[] = [];
				response.on("data", (chunk: Buffer) => chunks.push(chunk));
				response.on("error", reject);
				response.on("end", () =>
					resolveReply({
						status: response.statusCode ?? 0,
						contentType: response.headers["content-type"],
						text: Buffer.concat(chunks).toString("utf8"),
					}),
				);
			},
		);
		request.on("error", reject);
		request.end(wire.body);
	});
}

// Hostile values, one arbitrary per kind.

const objectOf = (entries: [string, Hostile][]): Hostile => Object.fromEntries(entries);

const word = fc.constantFrom("Knizia", "Catan", "Strategy", "German");

const controlCharacter = fc
	.oneof(fc.integer({ min: 0x00, max: 0x1f }), fc.integer({ min: 0x7f, max: 0x9f }))
	.map(code => String.fromCharCode(code));

const loneSurrogate = fc
	.oneof(fc.integer({ min: 0xd800, max: 0xdbff }), fc.integer({ min: 0xdc00, max: 0xdfff }))
	.map(code => String.fromCharCode(code));

/** Text that the layers may each read differently: emoji sequences, right-to-left, combining marks, invisible characters. */
const trickyText = fc.constantFrom(
	"\u{1F3B2}\u{1F9E9}",
	"\u{1F468}\u200D\u{1F469}\u200D\u{1F467}\u200D\u{1F466}",
	"\u0645\u0631\u062D\u0628\u0627",
	"\u05E9\u05DC\u05D5\u05DD Knizia",
	"\u202Eaizinki\u202C",
	"e\u0301\u0301\u0301\u0301",
	"Z\u0334\u0321\u031Ba\u0338\u032A\u034Cl\u0337\u031C\u0313",
	"\u200B",
	"\u200B\u200C\u200D\u2060\uFEFF",
	"\u00A0Knizia\u3000",
	"\u2028\u2029",
	"\uFFFD\uFFFF\uFFFE",
	"\u{1D542}\u{1D55F}\u{1D55A}\u{1D56B}",
	"\u0130\u00DF\u01C5\u216B",
);

/** Full Unicode, printable or not, control characters and lone surrogates included. */
const unicodeText: fc.Arbitrary<string> = fc.oneof(
	fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
	fc.string({ unit: "binary", minLength: 1, maxLength: 30 }),
	trickyText,
	fc.string({ unit: controlCharacter, minLength: 1, maxLength: 4 }),
	// Inside a word: trimming never removes them.
	fc.tuple(word, fc.oneof(controlCharacter, loneSurrogate), word).map(parts => parts.join("")),
	fc.tuple(loneSurrogate, word).map(parts => parts.join("")),
);

/** Texts around the length limits (100 and 200) and far beyond them, up to `maxLength` UTF-16 units. */
const longText = (maxLength: number): fc.Arbitrary<string> =>
	fc
		.tuple(
			fc.oneof(fc.constantFrom(99, 100, 101, 199, 200, 201), fc.integer({ min: 202, max: maxLength })),
			fc.oneof(
				fc.constantFrom("a", "\u00E9", "\u{1F600}", "e\u0301", " ", "\u200B", "\u0000"),
				fc.string({ unit: "binary", minLength: 1, maxLength: 3 }),
			),
		)
		.map(([length, unit]) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length));

/** Strings that a lax number parser takes for numbers, or for something else. */
const numericText = fc.constantFrom(
	"NaN",
	"Infinity",
	"-Infinity",
	"1e400",
	"0x10",
	" 12 ",
	"12abc",
	"",
	" ",
	"-0",
	"+1",
	"1_000",
	"0b11",
	"1e2",
	"12.0",
	".5",
	"00012",
	"\u0663",
	"\uFF11\uFF12",
	"9".repeat(400),
);

/** Numbers at and beyond the edges of doubles; RawJson for literals JSON.stringify cannot write. */
const hugeNumber = fc.constantFrom<Hostile>(
	1e308,
	-1e308,
	2 ** 53 + 2,
	Number.MAX_VALUE,
	Number.MIN_VALUE,
	"9".repeat(400),
	new RawJson("9".repeat(400)),
	new RawJson(`-${"9".repeat(400)}`),
	new RawJson("9007199254740993"),
	new RawJson("-0"),
	new RawJson("1e400"),
	new RawJson("-1e400"),
	new RawJson("1e-400"),
	new RawJson("12.0"),
	new RawJson("1E1"),
);

/** Query operators of the stores, where an id or a text belongs. */
const operatorObject = fc.constantFrom<Hostile>(
	{ $ne: null },
	{ $gt: "" },
	{ $regex: ".*" },
	{ $where: "sleep(1000)" },
	{ $exists: true },
	{ $in: [] },
);

/** A value of the wrong type for whatever field it lands in. */
const wrongType: fc.Arbitrary<Hostile> = fc.oneof(
	fc.integer(),
	fc.double(),
	fc.boolean(),
	fc.constant(null),
	fc.constant<Hostile>([]),
	fc.constant<Hostile>({}),
	fc.array(fc.string(), { maxLength: 3 }),
	fc.constantFrom("true", "false", "null", "undefined", "[object Object]", "[]", "{}"),
	operatorObject,
);

const prototypeKey = fc.constantFrom("__proto__", "constructor", "prototype");

/** What a pollution attempt tries to put on Object.prototype; the test looks for any new key. */
const pollutionMark: Hostile = { fuzzPolluted: "yes", isAdmin: true };

/**
 * `inner` under a `__proto__`, `constructor.prototype` or `prototype` key: a careless merge walks
 * into Object.prototype, or takes the fields from the prototype that the body does not carry.
 */
const underPrototypeKey = (inner: fc.Arbitrary<Hostile>): fc.Arbitrary<Hostile> =>
	fc
		.tuple(prototypeKey, inner)
		.map(([key, value]) => objectOf([[key, key === "constructor" ? objectOf([["prototype", value]]) : value]]));

/** 10 to 5,000 levels of `[` or `{"a":` (31 to 33 around the expected limit of 32), closed or not, well under the 100 kB body limit. */
const deepNesting: fc.Arbitrary<RawJson> = fc
	.tuple(
		fc.oneof(fc.constantFrom(31, 32, 33), fc.integer({ min: 10, max: 5000 })),
		fc.constantFrom(["[", "]"], ['{"a":', "}"], ['{"a":[', "]}"]),
		fc.boolean(),
	)
	.map(([levels, [open, close], closed]) => new RawJson(open.repeat(levels) + "1" + (closed ? close.repeat(levels) : "")));

const fieldNames = fc.constantFrom(
	"id",
	"name",
	"nationality",
	"title",
	"age",
	"category",
	"author",
	"pageable",
	"pageNumber",
	"pageSize",
	"sort",
	"property",
	"direction",
);

const anyKey = fc.oneof(
	prototypeKey,
	fieldNames,
	fc.constantFrom("", "$ne", "$where", "0", "length", "toString", "hasOwnProperty", "valueOf"),
	fc.string({ maxLength: 6 }),
);

/** Random JSON whose keys are prototype keys, field names or anything. */
const hostileJson: fc.Arbitrary<Hostile> = fc.letrec<{ node: Hostile }>(tie => ({
	node: fc.oneof(
		{ depthSize: "small", withCrossShrink: true },
		fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)),
		fc.array(tie("node"), { maxLength: 3 }),
		fc.array(fc.tuple(anyKey, tie("node")), { maxLength: 3 }).map(objectOf),
	),
})).node;

/** Anything hostile a field may receive. */
const hostileValue: fc.Arbitrary<Hostile> = fc.oneof(
	wrongType,
	hugeNumber,
	numericText,
	unicodeText,
	longText(20_000),
	underPrototypeKey(fc.constant(pollutionMark)),
	deepNesting,
	hostileJson,
);

/** A field's value: mostly what the field expects, so the request gets past validation to the records; otherwise anything hostile. */
const field = (expected: fc.Arbitrary<Hostile>): fc.Arbitrary<Hostile> =>
	fc.oneof({ weight: 3, arbitrary: expected }, { weight: 1, arbitrary: hostileValue });

/** An array where an object belongs: `category: [{ id }]`, a top-level `[{ name, nationality }]`. */
const asArray = (arbitrary: fc.Arbitrary<Hostile>): fc.Arbitrary<Hostile> => arbitrary.map(value => [value]);

/**
 * An object with `fields`, each sometimes missing, sometimes joined by extra fields (prototype keys
 * among them), and sometimes sent only under a prototype key.
 */
function hostileObject(fields: Record<string, fc.Arbitrary<Hostile>>): fc.Arbitrary<Hostile> {
	const entries = Object.entries(fields).map(([key, value]) =>
		fc.option(value, { nil: undefined, freq: 8 }).map(present => [key, present] as [string, Hostile | undefined]),
	);
	const extra = fc.array(fc.tuple(anyKey, fc.oneof(hostileValue, underPrototypeKey(fc.constant(pollutionMark)))), {
		minLength: 1,
		maxLength: 2,
	});
	const object = fc
		.tuple(
			fc.tuple(...entries),
			fc.oneof({ weight: 4, arbitrary: fc.constant<[string, Hostile][]>([]) }, { weight: 1, arbitrary: extra }),
		)
		.map(([own, more]) => objectOf([...own.filter((entry): entry is [string, Hostile] => entry[1] !== undefined), ...more]));
	return fc.oneof({ weight: 10, arbitrary: object }, { weight: 1, arbitrary: underPrototypeKey(object) });
}

const knownId = (kind: RecordKind): fc.Arbitrary<KnownId> => fc.nat({ max: 1000 }).map(pick => new KnownId(kind, pick));

/** Ids no record has: the shapes of catalogue.ts, prototype names, operators, full Unicode, numbers, long ones. */
const strangeId: fc.Arbitrary<string> = fc.oneof(
	fc.constantFrom(
		...unknownIds.map(([, id]) => id),
		"__proto__",
		"constructor",
		"prototype",
		"toString",
		"hasOwnProperty",
		"valueOf",
		"$ne",
		" ",
		"null",
	),
	unicodeText,
	numericText,
	longText(3000),
);

/** Names, nationalities and titles: plain ones (which must work) and ones in every corner of Unicode. */
const plausibleText: fc.Arbitrary<string> = fc.oneof(
	{
		weight: 3,
		arbitrary: fc.constantFrom("Reiner Knizia", "German", "Tigris & Euphrates", "Strategy", "  padded  ", 'O\'Brien "Bob" <b>&amp;'),
	},
	{ weight: 2, arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }) },
	{ weight: 2, arbitrary: unicodeText },
	{ weight: 1, arbitrary: longText(20_000) },
);

const plausibleAge: fc.Arbitrary<Hostile> = fc.oneof(
	fc.integer({ min: -2, max: 101 }),
	fc.integer({ min: -2, max: 101 }).map(String),
	fc.constantFrom(0, 99, 100, "7", " 8 ", 12.5, "12.5", -0.0, 1e-9),
);

/** The id of a category or an author in a game: mostly one that exists, else a strange one. */
const referencedId = (kind: RecordKind): fc.Arbitrary<Hostile> =>
	fc.oneof({ weight: 4, arbitrary: knownId(kind) }, { weight: 1, arbitrary: strangeId });

const reference = (kind: RecordKind): fc.Arbitrary<Hostile> => fc.record({ id: referencedId(kind) });

/** A reference gone wrong: a hostile `{ id }`, `[{ id }]`, the bare id where the object belongs, `{ id }` under a prototype key. */
const hostileReference = (kind: RecordKind): fc.Arbitrary<Hostile> =>
	fc.oneof(hostileObject({ id: field(referencedId(kind)) }), asArray(reference(kind)), knownId(kind), underPrototypeKey(reference(kind)));

/** Mostly a field of the author, else a stored field, another record's, a prototype key, an operator. */
const sortProperty = fc.oneof(
	{ weight: 3, arbitrary: fc.constantFrom("id", "name", "nationality") },
	{ weight: 1, arbitrary: fc.constantFrom("_id", "age", "NAME", "__proto__", "constructor", "deleting", "$where", "") },
);
const sortDirection = fc.constantFrom("asc", "desc", "DESC", "Desc", "", "-1", "1", "descending");
const sortOrder = fc.record({ property: sortProperty, direction: sortDirection }, { requiredKeys: [] });
const hostileSortOrder = hostileObject({ property: field(sortProperty), direction: field(sortDirection) });

const pageNumber = fc.oneof(
	fc.integer({ min: -2, max: 5 }),
	fc.constantFrom("0", "1", " 3 ", 1.5, 999_999_999, 1_000_000_000, 1_000_000_001, 2 ** 31),
);
const pageSize = fc.oneof(fc.integer({ min: -2, max: 10 }), fc.constantFrom("5", "0", 999, 1000, 1001, 2 ** 31));
/** `sort` as an object, or a list of them (longer than 3 too). */
const sort = fc.oneof(sortOrder, fc.array(sortOrder, { maxLength: 6 }));
const pageable = fc.record({ pageNumber, pageSize, sort }, { requiredKeys: ["pageNumber", "pageSize"] });
/** A game page's `pageable`: mostly sorted on a field of the game, else on anything an author page may be sent. */
const gameSortOrder = fc.record(
	{
		property: fc.oneof({ weight: 3, arbitrary: fc.constantFrom("id", "title", "age") }, { weight: 1, arbitrary: sortProperty }),
		direction: sortDirection,
	},
	{ requiredKeys: [] },
);
const gamePageable = fc.record(
	{ pageNumber, pageSize, sort: fc.oneof(gameSortOrder, fc.array(gameSortOrder, { maxLength: 6 })) },
	{ requiredKeys: ["pageNumber", "pageSize"] },
);
const hostilePageable = fc.oneof(
	{
		weight: 6,
		arbitrary: hostileObject({
			pageNumber: field(pageNumber),
			pageSize: field(pageSize),
			sort: field(fc.oneof(hostileSortOrder, fc.array(hostileSortOrder, { maxLength: 6 }))),
		}),
	},
	{ weight: 1, arbitrary: fc.constant<Hostile>([]) },
	{ weight: 1, arbitrary: asArray(pageable) },
);

/** Bytes that are not UTF-8: random ones, and inside an otherwise valid author body. */
const notUtf8: fc.Arbitrary<Uint8Array> = fc.oneof(
	fc.uint8Array({ minLength: 1, maxLength: 40 }),
	fc
		.constantFrom([0xc0, 0xaf], [0xff, 0xfe], [0xed, 0xa0, 0x80], [0xe0, 0xa4])
		.map(bad =>
			Uint8Array.from([
				...Buffer.from('{"name":"'),
				...bad,
				...Buffer.from('","nationality":"x","title":"t","pageable":{"pageNumber":0,"pageSize":5}}'),
			]),
		),
);

/** Text that is not JSON, or JSON that parsers disagree on (a byte-order mark, duplicate keys, escaped lone surrogates). */
const notJson: fc.Arbitrary<RawJson> = fc
	.oneof(
		fc.constantFrom(
			"{",
			"not json",
			"{'name': 'x'}",
			'{"name":"a",}',
			"",
			" ",
			"\u0000",
			"nul",
			'{"a":1} trailing',
			'\uFEFF{"name":"Knizia","nationality":"German"}',
			'{"name":"a","name":"b","nationality":"c","nationality":{"__proto__":1}}',
			'{"name":"\\ud800","nationality":"\\udfff","title":"\\ud800"}',
			'{"name":"\\u0000","nationality":"\\u0085","title":"\\u001f"}',
			'"\\ud800"',
		),
		fc.string({ unit: "binary", maxLength: 20 }),
	)
	.map(text => new RawJson(text));

/** A request body: mostly the object the route expects, else an array of it, none, another JSON value, broken JSON, non-UTF-8 bytes or deep nesting. */
const body = (expected: fc.Arbitrary<Hostile>): fc.Arbitrary<Body> =>
	fc.oneof(
		{ weight: 12, arbitrary: expected },
		{ weight: 1, arbitrary: asArray(expected) },
		{ weight: 1, arbitrary: fc.constant(undefined) },
		{ weight: 1, arbitrary: hostileValue },
		{ weight: 1, arbitrary: notJson },
		{ weight: 1, arbitrary: notUtf8 },
		{ weight: 1, arbitrary: deepNesting },
	);

/**
 * A body with `expected` fields: half the time every field there and of its kind (so the request
 * reaches the records, carrying texts from every corner of Unicode and numbers around the limits),
 * half the time the `hostile` fields, each perhaps missing, of any type, joined by extra ones.
 */
const bodyOf = (expected: Record<string, fc.Arbitrary<Hostile>>, hostile: Record<string, fc.Arbitrary<Hostile>>): fc.Arbitrary<Body> =>
	body(fc.oneof(fc.record(expected), hostileObject(hostile)));

const categoryBody = bodyOf({ name: plausibleText }, { name: field(plausibleText) });
const authorBody = bodyOf(
	{ name: plausibleText, nationality: plausibleText },
	{ name: field(plausibleText), nationality: field(plausibleText) },
);
const gameBody = bodyOf(
	{ title: plausibleText, age: plausibleAge, category: reference("category"), author: reference("author") },
	{
		title: field(plausibleText),
		age: field(plausibleAge),
		category: field(hostileReference("category")),
		author: field(hostileReference("author")),
	},
);
const authorPageBody = bodyOf({ pageable }, { pageable: field(hostilePageable) });

/** moleculer-db's own parameters (fields, populate, mapping, query...), which a body may try to slip into a read. */
const storageParams = body(
	hostileObject({
		id: field(strangeId),
		mapping: field(fc.boolean()),
		fields: field(fc.constantFrom<Hostile>("_id deleting change draft", ["_id", "deleting", "change", "draft"])),
		populate: field(fc.constantFrom<Hostile>("category", ["author", "category"])),
		query: field(operatorObject),
		limit: field(fc.constantFrom(-1, 0, 1e9)),
	}),
);

/** A body where the route expects none: sometimes one of any route's bodies. */
const strayBody: fc.Arbitrary<Body> = fc.oneof(
	{ weight: 4, arbitrary: fc.constant(undefined) },
	{ weight: 1, arbitrary: fc.oneof(categoryBody, authorBody, gameBody, authorPageBody, storageParams) },
);

/** Regular expressions for the game list's title filter: catastrophic backtracking, syntax RE2 refuses, broken ones, random ones, long ones. */
const titlePattern: fc.Arbitrary<string> = fc.oneof(
	fc.constantFrom(
		"(a+)+$",
		"(a|aa)+$",
		"((a*)*)*b",
		"(a|a?)+$",
		"(.*a){25}",
		"(\\w+\\s?)+$",
		"(a)\\1",
		"(?<x>a)\\k<x>",
		"(?=a)a",
		"(?!b)a",
		"(?<=a)b",
		"(?<!a)b",
		"[",
		"(",
		")",
		"[a-",
		"a{1000}{1000}",
		"(a{1000}){1000}",
		"a{100000}",
		"\\",
		"*",
		"a**",
		"(?i)A",
		"\\p{L}+",
		"[[:alpha:]]",
		"\\Q.*\\E",
		"\\x{10FFFF}",
		"\\C",
		"(?P<n>a)",
		"^$",
		"|",
		"[^]",
		"[]",
		"x{2,1}",
		"\\8",
		".*".repeat(100),
		"(".repeat(1000),
		`${"(?:".repeat(100)}a${")".repeat(100)}`,
		"\\ud800",
		// Legal, linear in RE2, yet the costliest per title: bounded repeats of large classes.
		"\\p{L}{1000}",
		"[\\s\\S]{1000}",
		"(?:\\pL|\\pN){1000}x",
		"(\\p{Greek}|\\p{Han}|\\p{L}|\\p{N}){1000}",
	),
	fc.string({ unit: fc.constantFrom(..."()[]{}*+?|^$\\.aA-:=!<>,019wdsbkpPQEz"), maxLength: 40 }),
	unicodeText,
	longText(2000),
);

/** Query keys that qs turns into objects, prototype paths, moleculer-db parameters, or body fields (the query overrides the body). */
const hostileQueryKey = fc.constantFrom(
	"__proto__[fuzzPolluted]",
	"constructor[prototype][fuzzPolluted]",
	"__proto__",
	"prototype",
	"%5F%5Fproto%5F%5F[fuzzPolluted]",
	"title[__proto__]",
	"title[]",
	"title[0]",
	"title[a][b]",
	"title[constructor][prototype][fuzzPolluted]",
	"title[999]",
	"idCategory[$ne]",
	"name[$regex]",
	"name",
	"nationality",
	"title",
	"age",
	"category[id]",
	"author[__proto__][id]",
	"pageable[pageNumber]",
	"pageable[pageSize]",
	"pageable[sort][0][property]",
	"pageable[__proto__][pageSize]",
	"id",
	"mapping",
	"fields",
	"populate",
	"query",
	"sort",
	"limit",
	"",
	"%",
	"%E0%A4%A",
);

/** Query values: strange text percent-encoded, and escapes that do not decode. */
const queryValue: fc.Arbitrary<string> = fc.oneof(
	fc.oneof(strangeId, titlePattern).map(percentEncode),
	fc.constantFrom("%", "%E0%A4%A", "%00", "%zz", "%ED%A0%80", "", "=", "a&b", "+", "[", "]", "caf\u00E9", "\u007F", '"<>'),
);

/** A query string: none, or up to four parameters, the route's own (`named`, most of them) and hostile ones, repeats included. */
const query = (named: Record<string, fc.Arbitrary<string | KnownId>> = {}): fc.Arbitrary<QueryPair[]> => {
	const own = Object.entries(named).map(([key, value]) => fc.tuple(fc.constant(key), value));
	const hostile = fc.tuple(hostileQueryKey, queryValue);
	const pair = own.length === 0 ? hostile : fc.oneof({ weight: 3, arbitrary: fc.oneof(...own) }, { weight: 1, arbitrary: hostile });
	const none = fc.constant<QueryPair[]>([]);
	const some = fc.array(pair, { minLength: 1, maxLength: 4 });
	return own.length === 0
		? fc.oneof({ weight: 3, arbitrary: none }, { weight: 1, arbitrary: some })
		: fc.oneof({ weight: 1, arbitrary: none }, { weight: 3, arbitrary: some });
};

/** POST /game: a page request, with the game list's filters in the body. */
const gamePageBody = body(
	fc.oneof(
		fc.record({ pageable: gamePageable, title: titlePattern, idCategory: referencedId("category") }, { requiredKeys: ["pageable"] }),
		hostileObject({ pageable: field(hostilePageable), title: field(titlePattern), idCategory: field(referencedId("category")) }),
	),
);

const gameFilter = query({
	title: titlePattern.map(percentEncode),
	idCategory: fc.oneof(knownId("category"), strangeId.map(percentEncode)),
});

/**
 * Path segments that are not ids: dot segments, encoded slashes, NUL, escapes that do not decode,
 * overlong UTF-8, and unescaped characters (bytes 0x7F to 0xFF are the most Node's client still sends).
 */
const rawSegment = fc.constantFrom(
	"..",
	".",
	"%2e%2e",
	"%2F",
	"%2f..%2f..%2fetc%2fpasswd",
	"a%2Fb",
	"%00",
	"a%00b",
	"%E0%A4%A",
	"%",
	"%zz",
	"%C0%AF",
	"%FF",
	"%ED%A0%80",
	"%EF%BB%BF",
	"a;b=c",
	"%3F",
	"#",
	"%23",
	"%20",
	"+",
	"a:b",
	"%5B%5D",
	"%24ne",
	"%5F%5Fproto%5F%5F",
	"",
	"\\",
	"a\u007Fb",
	"caf\u00E9",
	"\u00FF",
	'a"b',
	"a<b>",
	"a{b}|c^d`e",
);

/** A path's last segment: mostly a record's id (`kind`), else strange ids (up to ~3,000 characters), raw segments, random bytes. */
const segment = (kind?: RecordKind): fc.Arbitrary<string | KnownId> => {
	const strange = fc.oneof(
		strangeId.map(percentEncode),
		rawSegment,
		fc.uint8Array({ minLength: 1, maxLength: 30 }).map(percentEncodeBytes),
	);
	return kind
		? fc.oneof({ weight: 1, arbitrary: knownId(kind) }, { weight: 1, arbitrary: strange })
		: fc.oneof(strange, titlePattern.map(percentEncode));
};

/** Mostly JSON; else no type, another type, a charset body-parser does not read. */
const contentType = fc.oneof(
	{ weight: 12, arbitrary: fc.constant("application/json") },
	{
		weight: 1,
		arbitrary: fc.constantFrom(
			undefined,
			"text/plain",
			"application/json; charset=utf-16",
			"application/json; charset=latin1",
			"application/x-www-form-urlencoded",
			"multipart/form-data; boundary=x",
			"APPLICATION/JSON",
			"application/vnd.api+json",
		),
	},
);

interface RouteParts {
	segment?: fc.Arbitrary<string | KnownId>;
	query?: fc.Arbitrary<QueryPair[]>;
	body?: fc.Arbitrary<Body>;
}

const route = (alias: string, parts: RouteParts): fc.Arbitrary<HostileRequest> =>
	fc.record({
		alias: fc.constant(alias),
		segment: parts.segment ?? fc.constant(undefined),
		query: parts.query ?? query(),
		body: parts.body ?? strayBody,
		contentType,
	});

/** One request arbitrary per route of the alias table (services/api.service.ts). */
export const requestsByAlias: Record<string, fc.Arbitrary<HostileRequest>> = {
	"PUT /category": route("PUT /category", { body: categoryBody }),
	"PUT /category/:id": route("PUT /category/:id", { segment: segment("category"), body: categoryBody }),
	"GET /category": route("GET /category", { query: query({ name: fc.oneof(plausibleText, titlePattern).map(percentEncode) }) }),
	"GET /category/:id": route("GET /category/:id", { segment: segment("category") }),
	"DELETE /category/:id": route("DELETE /category/:id", { segment: segment("category") }),

	"PUT /author": route("PUT /author", { body: authorBody }),
	"PUT /author/:id": route("PUT /author/:id", { segment: segment("author"), body: authorBody }),
	"GET /author": route("GET /author", {}),
	"POST /author": route("POST /author", { body: authorPageBody }),
	"GET /author/:id": route("GET /author/:id", { segment: segment("author") }),
	"DELETE /author/:id": route("DELETE /author/:id", { segment: segment("author") }),

	"PUT /game": route("PUT /game", { body: gameBody }),
	"PUT /game/:id": route("PUT /game/:id", { segment: segment("game"), body: gameBody }),
	"GET /game": route("GET /game", { query: gameFilter }),
	"GET /game/:id": route("GET /game/:id", { segment: segment(), query: gameFilter }),
	"POST /game": route("POST /game", { body: gamePageBody }),
	"DELETE /game/:id": route("DELETE /game/:id", { segment: segment("game") }),

	"GET /health/live": route("GET /health/live", {}),
	"GET /health/ready": route("GET /health/ready", {}),
	"GET /openapi.json": route("GET /openapi.json", {}),
	"GET /asyncapi.json": route("GET /asyncapi.json", {}),
};

/** A hostile request to any route. */
export const hostileRequest: fc.Arbitrary<HostileRequest> = fc.oneof(...Object.values(requestsByAlias));
