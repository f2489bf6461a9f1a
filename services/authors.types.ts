import type { AuthorSortField, Pageable } from "../lib/catalogue/page";

export interface Author {
	id: string;
	name: string;
	nationality: string;
}

export interface AuthorBody {
	name: string;
	nationality: string;
}

export type AuthorUpdate = AuthorBody & { id: string };

export interface AuthorPageRequest {
	pageable: Pageable<AuthorSortField>;
}
