import type { BodyOf, RecordOf, SortFieldOf } from "../lib/catalogue/kind";
import type { AUTHOR } from "../lib/catalogue/kinds";
import type { Pageable } from "../lib/catalogue/page";

export type Author = RecordOf<typeof AUTHOR>;

export type AuthorBody = BodyOf<typeof AUTHOR>;

export type AuthorUpdate = AuthorBody & { id: string };

export interface AuthorPageRequest {
	pageable: Pageable<SortFieldOf<typeof AUTHOR>>;
}
