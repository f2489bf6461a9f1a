import { RE2JS } from "re2js";
import { texts, type ErrorText } from "./errors";

export type TitleFilter = (title: string) => boolean;

/**
 * The largest compiled pattern accepted: RE2 is linear in the title, but by a factor of the program's size, on the one thread
 * every request shares. Plain text and repetitions such as `[a-z]{1,200}` stay well below it.
 */
const MAX_PATTERN_SIZE = 1000;

/**
 * Compiles the `title` filter: a case-insensitive regular expression matched anywhere, run by RE2JS (no backtracking, so no stalls).
 * Returns the reason instead for a pattern RE2 rejects or one larger than MAX_PATTERN_SIZE.
 */
export function compileTitleFilter(pattern: string): TitleFilter | { refused: ErrorText } {
	if (pattern === "") return () => true;
	let re: RE2JS;
	try {
		re = RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
	} catch {
		return { refused: texts.invalidTitlePattern };
	}
	if (re.programSize() > MAX_PATTERN_SIZE) return { refused: texts.complexTitlePattern };
	return title => re.test(title);
}
