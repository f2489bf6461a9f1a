import type { Context } from "moleculer";
import { actionParams, fieldNames, sortOf } from "../lib/catalogue/kind";
import { AUTHOR } from "../lib/catalogue/kinds";
import { effectivePage, listParams, sortKeys, type Page } from "../lib/catalogue/page";
import { cachedFrom } from "../mixins/cache.mixin";
import { changeFeed, type ChangeFeedMethods } from "../mixins/change-feed.mixin";
import { dbMixin, safeToRetry, type CatalogueSchema } from "../mixins/db.mixin";
import { referencedByGames } from "../mixins/referenced.mixin";
import { transferable } from "../mixins/transfer.mixin";
import type { Author, AuthorBody, AuthorPageRequest, AuthorUpdate } from "./authors.types";

const params = actionParams(AUTHOR);
const sort = sortOf(AUTHOR)!;

const AuthorsService: CatalogueSchema<Author, ChangeFeedMethods> = {
	name: "authors",
	mixins: [dbMixin({ kind: AUTHOR }), changeFeed(AUTHOR), referencedByGames(AUTHOR), transferable({ kind: AUTHOR })],
	settings: {
		fields: fieldNames(AUTHOR),
	},
	actions: {
		// Every author, ordered by id (creation order).
		list: {
			...safeToRetry,
			cache: cachedFrom("authors"),
			params: params.list,
			handler(ctx: Context): Promise<Author[]> {
				return this._find(ctx, { sort: sortKeys([{ property: "id" }], sort) });
			},
		},

		// One page of authors, sorted as asked (by name when no property is given).
		page: {
			...safeToRetry,
			cache: cachedFrom("authors"),
			params: params.page,
			async handler(ctx: Context<AuthorPageRequest>): Promise<Page<Author>> {
				const page = effectivePage(ctx.params.pageable);
				const { rows, total } = await this._list(ctx, {
					sort: sortKeys(ctx.params.pageable.sort, sort),
					...listParams(page),
				});
				return { content: rows, pageable: page, totalElements: total };
			},
		},

		// { author: the created author }.
		create: {
			params: params.create,
			async handler(ctx: Context<AuthorBody>): Promise<{ author: Author }> {
				return { author: (await this.createRecord(ctx, ctx.params)) as Author };
			},
		},

		// 1 once the author is changed; 400 when no author has the id.
		update: {
			params: params.update,
			async handler(ctx: Context<AuthorUpdate>): Promise<1> {
				await this.updateRecord(ctx, ctx.params);
				return 1;
			},
		},
	},
};

export default AuthorsService;
