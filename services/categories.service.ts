import type { Context } from "moleculer";
import { notFound, texts } from "../lib/catalogue/errors";
import { filter, idOf, text } from "../lib/catalogue/params";
import escapeRegExp from "lodash/escapeRegExp";
import { cachedFrom } from "../mixins/cache.mixin";
import { dbMixin, readOnly, type CatalogueSchema } from "../mixins/db.mixin";
import { referencedByGames } from "../mixins/referenced.mixin";
import { transferable } from "../mixins/transfer.mixin";
import type { Category, CategoryBody, CategoryFilter, CategoryUpdate } from "./categories.types";

const CategoriesService: CatalogueSchema<Category> = {
	name: "categories",
	mixins: [
		dbMixin({
			collection: "categories",
			indexes: ["name"],
			notFound: notFound(texts.categoryNotFound),
			failures: {
				get: texts.fetchCategory,
				list: texts.fetchCategories,
				create: texts.createCategory,
				update: texts.updateCategory,
				remove: texts.deleteCategory,
			},
		}),
		referencedByGames({ field: "category", notFound: texts.categoryNotFound, hasGames: texts.categoryHasGames }),
		transferable({ kind: "category" }),
	],
	settings: {
		fields: ["id", "name"],
	},
	actions: {
		// Categories ordered by id; `name` keeps those whose name contains it, ignoring case.
		list: {
			...readOnly,
			cache: cachedFrom("categories"),
			params: { $$strict: "remove", name: filter(100) },
			handler(ctx: Context<CategoryFilter>): Promise<Category[]> {
				const { name } = ctx.params;
				const query = name ? { name: { $regex: new RegExp(escapeRegExp(name), "i") } } : {};
				return this._find(ctx, { query, sort: ["_id"] });
			},
		},

		// { category: the created category }.
		create: {
			params: { $$strict: "remove", name: text(100) },
			async handler(ctx: Context<CategoryBody>): Promise<{ category: Category }> {
				return { category: await this._create(ctx, { name: ctx.params.name }) };
			},
		},

		// 1 once the category is renamed; 400 when no category has the id.
		update: {
			params: { $$strict: "remove", id: idOf(texts.categoryNotFound), name: text(100) },
			async handler(ctx: Context<CategoryUpdate>): Promise<1> {
				await this._update(ctx, { id: ctx.params.id, name: ctx.params.name });
				return 1;
			},
		},
	},
};

export default CategoriesService;
