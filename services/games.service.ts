import uniq from "lodash/uniq";
import type { Context } from "moleculer";
import { firstFailure } from "../lib/checks";
import { CatalogueError, notFound, texts } from "../lib/errors";
import { filter, id, reference, text, wholeNumber } from "../lib/params";
import { orphans } from "../lib/integrity";
import { compileTitleFilter } from "../lib/title-filter";
import { dbMixin, type CatalogueSchema } from "../mixins/db.mixin";
import type { Game, GameBody, GameCountQuery, GameFilter, GameUpdate, ListedGame, OrphanGame } from "./games.types";

const gameBody = { title: text(200), age: wholeNumber(0, 99), category: reference, author: reference };

/** The longest title filter accepted (a title itself has at most 200 characters). */
const MAX_TITLE_FILTER = 200;

/** Those of `ids` that `service` has a record for, asked in one batched call. */
async function existingIds(ctx: Context, service: "categories" | "authors", ids: string[]): Promise<Set<string>> {
	if (ids.length === 0) return new Set();
	const request = { id: uniq(ids), mapping: true as const };
	const found = await ctx.call<Record<string, unknown>, typeof request>(`${service}.get`, request);
	return new Set(Object.keys(found));
}

const GamesService: CatalogueSchema<Game> = {
	name: "games",
	mixins: [
		dbMixin({
			collection: "games",
			indexes: ["category", "author"],
			notFound: notFound(texts.gameNotFound),
			failures: {
				get: texts.fetchGames,
				list: texts.fetchGames,
				create: texts.createGame,
				update: texts.updateGame,
				remove: texts.deleteGame,
				countBy: texts.countGames,
			},
		}),
	],
	settings: {
		fields: ["id", "title", "age", "category", "author"],
		populates: { category: "categories.get", author: "authors.get" },
	},
	actions: {
		// Games whose title matches the `title` pattern and whose category is `idCategory`, ordered
		// by id, with full category and author records; 400 for a pattern that is not valid.
		list: {
			params: { $$strict: "remove", title: filter(MAX_TITLE_FILTER), idCategory: { type: "string", optional: true } },
			async handler(ctx: Context<GameFilter>): Promise<ListedGame[]> {
				const { title = "", idCategory } = ctx.params;
				const matches = compileTitleFilter(title);
				if (!matches) {
					throw new CatalogueError(texts.fetchGames, "INVALID_PATTERN", [
						{ field: "title", message: texts.invalidTitlePattern, type: "pattern" },
					]);
				}
				const query = idCategory ? { category: idCategory } : {};
				const games = await this.adapter.find({ query, sort: ["_id"] });
				const found = games.filter(game => matches(String(game.title)));
				return (await this.transformDocuments(ctx, { populate: ["category", "author"] }, found)) as ListedGame[];
			},
		},

		// { game } with category and author as ids; 400 when either does not exist.
		create: {
			params: { $$strict: "remove", ...gameBody },
			async handler(ctx: Context<GameBody>): Promise<{ game: Game }> {
				const { title, age, category, author } = ctx.params;
				await firstFailure([
					ctx.call("categories.get", { id: category.id }),
					ctx.call("authors.get", { id: author.id }),
				]);
				const game = await this._create(ctx, { title, age, category: category.id, author: author.id });
				return { game };
			},
		},

		// 1 once title, age, category and author are replaced; 400 when the game, the category
		// or the author does not exist (checked in that order).
		update: {
			params: { $$strict: "remove", id, ...gameBody },
			async handler(ctx: Context<GameUpdate>): Promise<1> {
				const { id, title, age, category, author } = ctx.params;
				await firstFailure([
					this._get(ctx, { id }),
					ctx.call("categories.get", { id: category.id }),
					ctx.call("authors.get", { id: author.id }),
				]);
				await this._update(ctx, { id, title, age, category: category.id, author: author.id });
				return 1;
			},
		},

		// { game: the deleted game }; 400 when no game has the id.
		remove: {
			params: { id },
			async handler(ctx: Context<{ id: string }>): Promise<{ game: Game }> {
				const game = await this._get(ctx, { id: ctx.params.id });
				await this._remove(ctx, { id: ctx.params.id });
				return { game };
			},
		},

		// Games whose category or author no longer exists, each with what is missing. For
		// operators (the REPL's integrity check): not on HTTP.
		orphans: {
			visibility: "public",
			async handler(ctx: Context): Promise<OrphanGame[]> {
				const games = await this._find(ctx, { sort: ["_id"] });
				const [categories, authors] = await Promise.all([
					existingIds(ctx, "categories", games.map(game => game.category)),
					existingIds(ctx, "authors", games.map(game => game.author)),
				]);
				return orphans(games, { categories, authors });
			},
		},

		// How many games refer to the category and/or author given. Internal: not on HTTP.
		countBy: {
			visibility: "public",
			params: { $$strict: "remove", category: { type: "string", optional: true }, author: { type: "string", optional: true } },
			handler(ctx: Context<GameCountQuery>): Promise<number> {
				const { category, author } = ctx.params;
				const query = { ...(category !== undefined && { category }), ...(author !== undefined && { author }) };
				return this.adapter.count({ query });
			},
		},
	},
};

export default GamesService;
