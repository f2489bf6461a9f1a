import type { Context } from "moleculer";
import { notFound, texts } from "../lib/catalogue/errors";
import { AUTHOR_SORT, effectivePage, listParams, pageableRule, pageOrders, sortKeys, type Page } from "../lib/catalogue/page";
import { idOf, text } from "../lib/catalogue/params";
import { cachedFrom } from "../mixins/cache.mixin";
import { dbMixin, readOnly, type CatalogueSchema } from "../mixins/db.mixin";
import { referencedByGames } from "../mixins/referenced.mixin";
import { transferable } from "../mixins/transfer.mixin";
import type { Author, AuthorBody, AuthorPageRequest, AuthorUpdate } from "./authors.types";

const AuthorsService: CatalogueSchema<Author> = {
	name: "authors",
	mixins: [
		dbMixin({
			collection: "authors",
			orders: pageOrders(AUTHOR_SORT),
			notFound: notFound(texts.authorNotFound),
			failures: {
				get: texts.fetchAuthor,
				list: texts.fetchAuthors,
				page: texts.fetchAuthorsPage,
				create: texts.createAuthor,
				update: texts.updateAuthor,
				remove: texts.deleteAuthor,
			},
		}),
		referencedByGames({ field: "author", notFound: texts.authorNotFound, hasGames: texts.authorHasGames }),
		transferable({ kind: "author" }),
	],
	settings: {
		fields: ["id", "name", "nationality"],
	},
	actions: {
		// Every author, ordered by id (creation order).
		list: {
			...readOnly,
			cache: cachedFrom("authors"),
			params: { $$strict: "remove" },
			handler(ctx: Context): Promise<Author[]> {
				return this._find(ctx, { sort: sortKeys([{ property: "id" }], AUTHOR_SORT) });
			},
		},

		// One page of authors, sorted as asked (by name when no property is given).
		page: {
			...readOnly,
			cache: cachedFrom("authors"),
			params: { $$strict: "remove", pageable: pageableRule(AUTHOR_SORT.fields) },
			async handler(ctx: Context<AuthorPageRequest>): Promise<Page<Author>> {
				const page = effectivePage(ctx.params.pageable);
				const { rows, total } = await this._list(ctx, {
					sort: sortKeys(ctx.params.pageable.sort, AUTHOR_SORT),
					...listParams(page),
				});
				return { content: rows, pageable: page, totalElements: total };
			},
		},

		// { author: the created author }.
		create: {
			params: { $$strict: "remove", name: text(200), nationality: text(100) },
			async handler(ctx: Context<AuthorBody>): Promise<{ author: Author }> {
				const { name, nationality } = ctx.params;
				return { author: await this._create(ctx, { name, nationality }) };
			},
		},

		// 1 once the author is changed; 400 when no author has the id.
		update: {
			params: { $$strict: "remove", id: idOf(texts.authorNotFound), name: text(200), nationality: text(100) },
			async handler(ctx: Context<AuthorUpdate>): Promise<1> {
				const { id, name, nationality } = ctx.params;
				await this._update(ctx, { id, name, nationality });
				return 1;
			},
		},
	},
};

export default AuthorsService;
