import type { Context } from "moleculer";
import { actionParams, fieldNames } from "../lib/catalogue/kind";
import { CATEGORY } from "../lib/catalogue/kinds";
import escapeRegExp from "lodash/escapeRegExp";
import { cachedFrom } from "../mixins/cache.mixin";
import { changeFeed, type ChangeFeedMethods } from "../mixins/change-feed.mixin";
import { dbMixin, safeToRetry, type CatalogueSchema } from "../mixins/db.mixin";
import { referencedByGames } from "../mixins/referenced.mixin";
import { transferable } from "../mixins/transfer.mixin";
import type { Category, CategoryBody, CategoryFilter, CategoryUpdate } from "./categories.types";

const params = actionParams(CATEGORY);

const CategoriesService: CatalogueSchema<Category, ChangeFeedMethods> = {
	name: "categories",
	mixins: [dbMixin({ kind: CATEGORY }), changeFeed(CATEGORY), referencedByGames(CATEGORY), transferable({ kind: CATEGORY })],
	settings: {
		fields: fieldNames(CATEGORY),
	},
	actions: {
		// Categories ordered by id; `name` keeps those whose name contains it, ignoring case.
		list: {
			...safeToRetry,
			cache: cachedFrom("categories"),
			params: params.list,
			handler(ctx: Context<CategoryFilter>): Promise<Category[]> {
				const { name } = ctx.params;
				const query = name ? { name: { $regex: new RegExp(escapeRegExp(name), "i") } } : {};
				return this._find(ctx, { query, sort: ["_id"] });
			},
		},

		// { category: the created category }.
		create: {
			params: params.create,
			async handler(ctx: Context<CategoryBody>): Promise<{ category: Category }> {
				return { category: (await this.createRecord(ctx, ctx.params)) as Category };
			},
		},

		// 1 once the category is renamed; 400 when no category has the id.
		update: {
			params: params.update,
			async handler(ctx: Context<CategoryUpdate>): Promise<1> {
				await this.updateRecord(ctx, ctx.params);
				return 1;
			},
		},
	},
};

export default CategoriesService;
