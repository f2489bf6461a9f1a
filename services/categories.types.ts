import type { BodyOf, RecordOf } from "../lib/catalogue/kind";
import type { CATEGORY } from "../lib/catalogue/kinds";

export type Category = RecordOf<typeof CATEGORY>;

export type CategoryBody = BodyOf<typeof CATEGORY>;

export type CategoryUpdate = CategoryBody & { id: string };

export interface CategoryFilter {
	name?: string;
}
