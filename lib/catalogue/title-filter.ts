import { RE2JS } from "re2js";
import { texts, type ErrorText } from "./errors";

export type TitleFilter = (title: string) => boolean;

/**
 * The largest compiled pattern accepted. RE2 matches in time linear in the title, but the factor is
 * the program's size: `(a|aa|aaa){1,1000}x` (10,000 instructions) costs about 30 µs a title, a
 * 100,000-game list 3 s of the one thread every request shares. Any plain text or class up to the
 * 200-character limit, and repetitions such as `[a-z]{1,200}`, stay well below it.
 */
const MAX_PATTERN_SIZE = 1000;

/**
 * Compiles the game list's `title` filter: a case-insensitive regular expression matched anywhere
 * in the title, run by RE2JS (no backtracking, so no pattern can stall the service). Returns the
 * reason instead for a pattern RE2 syntax rejects (backreferences, lookaround, bad syntax,
 * repetitions over 1000) or one larger than MAX_PATTERN_SIZE.
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
