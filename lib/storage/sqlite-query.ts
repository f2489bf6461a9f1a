/**
 * moleculer-db's MongoDB-style queries, sorts and updates as SQL over `(_id, doc)` rows, `doc` the other fields as JSON. Only what the
 * catalogue asks is understood (equality, `$exists`, `$lt`, `$gt`, `$ne`, `$in`, `$regex`, `$or`; `$set`, `$unset`); else it throws.
 */

export type Value = string | number | null;

/** A piece of SQL and the values of its `?` placeholders. */
export interface Sql {
	sql: string;
	values: Value[];
}

/** The name of a record's field as the services spell it: letters, digits and `_`, nested with dots. */
const FIELD = /^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/;

/**
 * The fields a table keeps in columns of their own (lib/storage/sqlite-adapter.ts), besides `doc`:
 * the adapter writes each with the record, and again only in an update that names it.
 */
export type Columns = ReadonlySet<string>;
const NONE: Columns = new Set();

/**
 * ` LIMIT n`, the number written into the statement's text, not bound: SQLite plans a statement with the value bound to its LIMIT,
 * and compiles it again at each new binding. Only a whole number is written.
 */
export function limitOf(rows: number): string {
	if (!Number.isSafeInteger(rows)) throw new Error(`not a number of rows: ${String(rows)}`);
	return ` LIMIT ${rows}`;
}

/** The SQL of a field's value: `_id` and the `stored` fields are columns, any other field is read out of `doc`. */
export function column(field: string, stored: Columns = NONE): string {
	if (field === "_id") return "_id";
	if (!FIELD.test(field)) throw new Error(`not a field the catalogue stores: ${JSON.stringify(field)}`);
	return stored.has(field) ? `"${field}"` : `json_extract(doc, '$.${field}')`;
}

/**
 * The value of `field` (a dotted path; "" for `value` itself) in `value` as its column holds it:
 * what SQLite's `json_extract` reads from the record's JSON.
 */
export function extracted(value: unknown, field: string): Value {
	for (const key of field === "" ? [] : field.split("."))
		value = value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
	if (value === undefined || value === null) return null;
	if (typeof value === "boolean") return value ? 1 : 0;
	return typeof value === "object" ? JSON.stringify(value) : (value as string | number);
}

/** A value as SQLite compares it: strings and numbers as they are; anything else has no meaning in a query here. */
function bound(value: unknown): Value {
	if (typeof value === "string" || typeof value === "number") return value;
	throw new Error(`a query value must be a string or a number, not ${JSON.stringify(value)}`);
}

const COMPARISONS: Record<string, string> = { $lt: "<", $gt: ">" };

/** The condition on one field: a value to equal, or an object of operators, all of which must hold. */
function condition(field: string, test: unknown, stored: Columns): Sql {
	const col = column(field, stored);
	if (test === null || typeof test !== "object" || test instanceof RegExp) {
		if (test instanceof RegExp) return condition(field, { $regex: test }, stored);
		return { sql: `${col} = ?`, values: [bound(test)] };
	}
	const parts = Object.entries(test as Record<string, unknown>).map(([operator, operand]): Sql => {
		if (operator === "$exists") return { sql: `${col} IS ${operand ? "NOT " : ""}NULL`, values: [] };
		if (operator in COMPARISONS) return { sql: `${col} ${COMPARISONS[operator]} ?`, values: [bound(operand)] };
		// MongoDB's: a record without the field is not equal to the value either.
		if (operator === "$ne") return { sql: `(${col} IS NULL OR ${col} <> ?)`, values: [bound(operand)] };
		if (operator === "$in") {
			const list = (operand as unknown[]).map(bound);
			return { sql: `${col} IN (SELECT value FROM json_each(?))`, values: [JSON.stringify(list)] };
		}
		if (operator === "$regex") {
			const pattern = operand instanceof RegExp ? operand : new RegExp(String(operand));
			return { sql: `catalogue_matches(${col}, ?, ?)`, values: [pattern.source, pattern.flags] };
		}
		throw new Error(`query operator ${operator} is not supported by the SQLite store`);
	});
	return and(parts);
}

function and(parts: Sql[]): Sql {
	if (parts.length === 0) return { sql: "1", values: [] };
	return {
		sql: parts.map(part => (parts.length > 1 ? `(${part.sql})` : part.sql)).join(" AND "),
		values: parts.flatMap(part => part.values),
	};
}

/** The WHERE condition of a query: every field's condition holds, and one of each `$or`'s queries. */
export function where(query: Record<string, unknown> = {}, stored: Columns = NONE): Sql {
	const parts = Object.entries(query).map(([field, test]): Sql => {
		if (field === "$or") {
			const alternatives = (test as Record<string, unknown>[]).map(alternative => where(alternative, stored));
			return {
				sql: alternatives.map(part => `(${part.sql})`).join(" OR ") || "0",
				values: alternatives.flatMap(part => part.values),
			};
		}
		return condition(field, test, stored);
	});
	return and(parts);
}

/** moleculer-db's sort keys (`field`, `-field` for descending) as an ORDER BY list. */
export function orderBy(sort: string[] = [], stored: Columns = NONE): string {
	return sort.map(key => (key.startsWith("-") ? `${column(key.slice(1), stored)} DESC` : `${column(key, stored)} ASC`)).join(", ");
}

/**
 * The new `doc` of an update: `$unset` fields removed, then `$set` fields written, in one expression
 * SQLite evaluates inside the UPDATE, so a conditional update is one atomic statement.
 */
export function updatedDoc(update: Record<string, unknown>): Sql {
	const { $set = {}, $unset = {}, ...rest } = update as { $set?: Record<string, unknown>; $unset?: Record<string, unknown> };
	if (Object.keys(rest).length > 0)
		throw new Error(`update operators ${Object.keys(rest).join(", ")} are not supported by the SQLite store`);
	const path = (field: string) => {
		if (field === "_id" || !FIELD.test(field)) throw new Error(`not a field an update may write: ${JSON.stringify(field)}`);
		return `'$.${field}'`;
	};
	let sql = "doc";
	const removed = Object.keys($unset).map(path);
	if (removed.length > 0) sql = `json_remove(${sql}, ${removed.join(", ")})`;
	const written = Object.entries($set);
	if (written.length > 0) sql = `json_set(${sql}, ${written.map(([field]) => `${path(field)}, json(?)`).join(", ")})`;
	return { sql, values: written.map(([, value]) => JSON.stringify(value)) };
}

/**
 * The columns an update changes, as `SET` assignments: those of the fields it writes or removes, or inside one. The others keep
 * their value, so SQLite leaves their indexes alone.
 */
export function updatedColumns(update: Record<string, unknown>, stored: Columns): Sql {
	const { $set = {}, $unset = {} } = update as { $set?: Record<string, unknown>; $unset?: Record<string, unknown> };
	const parts: string[] = [];
	const values: Value[] = [];
	for (const field of stored) {
		const holds = (key: string) => field === key || field.startsWith(`${key}.`);
		const written = Object.keys($set).find(holds);
		if (written !== undefined) {
			parts.push(`"${field}" = ?`);
			values.push(extracted($set[written], field.slice(written.length + 1)));
		} else if (Object.keys($unset).some(holds)) parts.push(`"${field}" = NULL`);
		else if ([...Object.keys($set), ...Object.keys($unset)].some(key => key.startsWith(`${field}.`)))
			throw new Error(`an update inside the indexed field ${field} is not supported by the SQLite store`);
	}
	return { sql: parts.map(part => `, ${part}`).join(""), values };
}
