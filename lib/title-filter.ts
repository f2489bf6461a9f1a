import { RE2JS } from "re2js";

export type TitleFilter = (title: string) => boolean;

/**
 * Compiles the game list's `title` filter: a case-insensitive regular expression matched anywhere
 * in the title. RE2JS runs in time linear in the title, so no pattern can stall the service.
 * Returns undefined for a pattern RE2 syntax rejects (backreferences, lookaround, bad syntax).
 */
export function compileTitleFilter(pattern: string): TitleFilter | undefined {
	if (pattern === "") return () => true;
	try {
		const re = RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
		return title => re.test(title);
	} catch {
		return undefined;
	}
}
