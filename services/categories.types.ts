export interface Category {
	id: string;
	name: string;
}

export interface CategoryBody {
	name: string;
}

export type CategoryUpdate = CategoryBody & { id: string };

export interface CategoryFilter {
	name?: string;
}
