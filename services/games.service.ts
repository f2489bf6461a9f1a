import uniq from "lodash/uniq";
import type { RuleObject } from "fastest-validator";
import type { Context } from "moleculer";
import { inSteps } from "../lib/async/steps";
import { firstFailure } from "../lib/catalogue/checks";
import { claim, givenUpAt, release, type ClaimOptions } from "../lib/integrity/write-claims";
import { config } from "../lib/config/config";
import { notFound } from "../lib/catalogue/errors";
import { gameSearch, titleKept, type GameSearch } from "../lib/catalogue/game-search";
import { newId, newToken } from "../lib/catalogue/ids";
import { orphans, referringTo, type References } from "../lib/integrity/integrity";
import { actionParams, fieldNames, sortOf, storedOf } from "../lib/catalogue/kind";
import { GAME } from "../lib/catalogue/kinds";
import { effectivePage, listParams, pageSlice, sortKeys, type Page } from "../lib/catalogue/page";
import { AnswerJson, answersAsJson } from "../lib/cache/answers";
import { joinedInSteps, jsonItems } from "../lib/cache/json-in-steps";
import { cachedFrom } from "../mixins/cache.mixin";
import { changeFeed, type ChangeFeedMethods } from "../mixins/change-feed.mixin";
import { claimStore, dbMixin, populatesInSteps, safeToRetry, type CatalogueSchema } from "../mixins/db.mixin";
import { importedGames } from "../mixins/imported-games.mixin";
import { transferable } from "../mixins/transfer.mixin";
import type { Game, GameBody, GameCountQuery, GameFilter, GamePageRequest, GameUpdate, ListedGame, OrphanGame } from "./games.types";

const params = actionParams(GAME);
const gameSort = sortOf(GAME)!;

/**
 * countBy's params, one rule for the whole object (fastest-validator's `$$root`): a reference at least, as a count of none would
 * count every game on SQLite, and MongoDB refuses its empty `$or`.
 */
const COUNT_BY_PARAMS: RuleObject & { $$root: true } = {
	$$root: true,
	type: "object",
	strict: "remove",
	minProps: 1,
	props: { category: { type: "string", optional: true }, author: { type: "string", optional: true } },
};

/** The references a listed game carries as full records, each filled in with the records of its service's `get`. */
const POPULATES = populatesInSteps({ category: "categories.get", author: "authors.get" });
const WITH_REFERENCES = Object.keys(POPULATES);

/** Games made ready to list between two turns of the event loop, in a long list. */
const LIST_STEP = 500;

/** The order of GET /game, and of a game page sorted on nothing: by id. */
const BY_ID = sortKeys(undefined, gameSort);

/** Those of `ids` that `service` has a record for, asked in one batched call. */
async function existingIds(ctx: Context, service: "categories" | "authors", ids: string[]): Promise<Set<string>> {
	if (ids.length === 0) return new Set();
	const request = { id: uniq(ids), mapping: true as const };
	const found = await ctx.call<Record<string, unknown>, typeof request>(`${service}.get`, request);
	return new Set(Object.keys(found));
}

/** A change of a game in progress is a claim in its `change` field, holding the new references. */
const changing: ClaimOptions = { field: "change", leaseMs: config.claimLeaseMs };

/** Games that are not drafts: a game being created is hidden until its references are checked. */
const notDraft = { draft: { $exists: false } };

const unknownGame = notFound(GAME.unknown);

/** The categories and authors a batch of games refers to. */
type BatchReferences = { category: string[]; author: string[] };

interface GamesMethods extends ChangeFeedMethods {
	checkReferences(ctx: Context, references: References | BatchReferences): Promise<void>;
	writtenInPlace(ctx: Context, id: string, game: Omit<Game, "id">): Promise<boolean>;
	searchGames(search: GameSearch, sort: string[]): Promise<Record<string, unknown>[]>;
	withReferences(ctx: Context, games: Record<string, unknown>[]): Promise<ListedGame[]>;
	listedJson(ctx: Context, search: GameSearch): Promise<AnswerJson>;
}

const GamesService: CatalogueSchema<Game, GamesMethods> = {
	name: "games",
	mixins: [
		dbMixin({
			kind: GAME,
			leading: ["draft"],
			sparseIndexes: ["draft", "change.category", "change.author", "change.at"],
			visible: notDraft,
		}),
		changeFeed(GAME),
		// Before transferable: its createImported replaces the plain insert.
		importedGames,
		transferable({ kind: GAME, visible: notDraft }),
	],
	settings: {
		fields: fieldNames(GAME),
		populates: POPULATES,
	},
	actions: {
		// Games whose title matches the `title` pattern and whose category is `idCategory`, ordered
		// by id, with full category and author records; 400 for a pattern that is not valid or too complex.
		list: {
			...safeToRetry,
			// The answer embeds categories and authors: their writes make it stale too.
			cache: cachedFrom("games", "authors", "categories"),
			params: params.list,
			async handler(ctx: Context<GameFilter>): Promise<ListedGame[] | AnswerJson> {
				const search = gameSearch(ctx.params, notDraft);
				if (answersAsJson(ctx)) return this.listedJson(ctx, search);
				return this.withReferences(ctx, await this.searchGames(search, BY_ID));
			},
		},

		// One page of the games GET /game would list with the same filters, sorted as asked (by id
		// when no property is given), with full category and author records; 400 as GET /game.
		page: {
			...safeToRetry,
			cache: cachedFrom("games", "authors", "categories"),
			params: params.page,
			async handler(ctx: Context<GamePageRequest>): Promise<Page<ListedGame>> {
				const { pageable, ...filters } = ctx.params;
				const page = effectivePage(pageable);
				const search = gameSearch(filters, notDraft);
				const sort = sortKeys(pageable.sort, gameSort);
				if (!search.title) {
					const { rows, total } = await this._list<ListedGame>(ctx, {
						query: search.query,
						sort,
						...listParams(page),
						populate: WITH_REFERENCES,
					});
					return { content: rows, pageable: page, totalElements: total };
				}
				// The store cannot run the title test: it sorts, the titles are tested here, and only the page is populated.
				const games = await this.searchGames(search, sort);
				return { content: await this.withReferences(ctx, pageSlice(games, page)), pageable: page, totalElements: games.length };
			},
		},

		// { game } with category and author as ids; 400 when either does not exist. The game is
		// stored as a hidden draft before the references are checked (docs/integrity.md), so a
		// delete racing with it counts it.
		create: {
			params: params.create,
			async handler(ctx: Context<GameBody>): Promise<{ game: Game }> {
				const draft = { _id: newId(), ...storedOf(GAME, ctx.params), draft: Date.now() };
				await this.adapter.insert(draft);
				try {
					await this.checkReferences(ctx, draft);
					const publication = { query: { _id: draft._id, draft: { $exists: true } }, update: { $unset: { draft: true } } };
					const shown = await this.recorded(ctx, "created", publication, id => ({ id, ...storedOf(GAME, ctx.params) }));
					if (shown === 0) throw new Error(`the draft game ${draft._id} outlived its lease`);
				} catch (err) {
					await this.adapter.removeMany({ _id: draft._id, draft: { $exists: true } });
					throw err;
				}
				const game = await this.transformDocuments(ctx, {}, draft);
				await this.entityChanged("created", game, ctx);
				return { game };
			},
		},

		// 1 once title, age, category and author are replaced; 400 when the game, the category
		// or the author does not exist (checked in that order). New references are recorded on
		// the game (its `change` claim) before they are checked; kept ones need no claim.
		update: {
			params: params.update,
			async handler(ctx: Context<GameUpdate>): Promise<1> {
				const { id, ...body } = ctx.params;
				const game = storedOf(GAME, body);
				const references = { category: game.category, author: game.author };
				const games = claimStore(this, notDraft);
				const stored = await games.findById(id);
				if (!stored) throw unknownGame();
				const keeps = stored.category === game.category && stored.author === game.author && !stored.change;
				// Otherwise, or when another write came first, the claim protects the new references until they are checked.
				if (!(keeps && (await this.writtenInPlace(ctx, id, game)))) {
					const token = newToken();
					if (!(await claim(games, id, token, { ...changing, until: givenUpAt(ctx) }, references))) throw unknownGame();
					try {
						await this.checkReferences(ctx, references);
						const write = { query: { _id: id, "change.token": token }, update: { $set: game, $unset: { change: true } } };
						if ((await this.recorded(ctx, "updated", write, () => ({ id, ...game }))) === 0) {
							if (!(await games.findById(id))) throw unknownGame();
							throw new Error(`the change of game ${id} outlived its lease`);
						}
					} catch (err) {
						await release(games, id, token, changing);
						throw err;
					}
				}
				await this.entityChanged("updated", { id, ...game }, ctx);
				return 1;
			},
		},

		// { game: the deleted game }; 400 when no game has the id.
		remove: {
			params: params.remove,
			async handler(ctx: Context<{ id: string }>): Promise<{ game: Game }> {
				const { id } = ctx.params;
				const stored = await this.adapter.findOne({ _id: id, ...notDraft });
				const removal = { query: { _id: id, ...notDraft }, remove: true as const };
				if (!stored || (await this.recorded(ctx, "removed", removal, () => ({ id }))) === 0) throw unknownGame();
				const game = await this.transformDocuments(ctx, {}, stored);
				await this.entityChanged("removed", game, ctx);
				return { game };
			},
		},

		// Games whose category or author no longer exists, each with what is missing. For
		// operators (the REPL's integrity check): not on HTTP.
		orphans: {
			...safeToRetry,
			visibility: "public",
			async handler(ctx: Context): Promise<OrphanGame[]> {
				const games = await this._find(ctx, { query: notDraft, sort: ["_id"] });
				const referred = (field: "category" | "author") => games.map(game => game[field]);
				const [categories, authors] = await Promise.all([
					existingIds(ctx, "categories", referred("category")),
					existingIds(ctx, "authors", referred("author")),
				]);
				return orphans(games, { categories, authors });
			},
		},

		// How many games refer to the category and/or author given, drafts and changes in progress
		// included; abandoned ones are cleared first. Internal: not on HTTP.
		countBy: {
			visibility: "public",
			params: COUNT_BY_PARAMS,
			async handler(ctx: Context<GameCountQuery>): Promise<number> {
				const abandoned = Date.now() - changing.leaseMs;
				await this.adapter.removeMany({ draft: { $lt: abandoned } });
				await this.adapter.updateMany({ "change.at": { $lt: abandoned } }, { $unset: { change: true } });
				// One after the other, in this order (referringTo): not at once.
				const referring = referringTo(ctx.params);
				const changingTo = await this.adapter.count({ query: referring.changing });
				return changingTo + (await this.adapter.count({ query: referring.now }));
			},
		},
	},
	methods: {
		/** The stored games `search` keeps, in `sort` order. */
		async searchGames(search: GameSearch, sort: string[]): Promise<Record<string, unknown>[]> {
			return titleKept(search, await this.adapter.find({ query: search.query, sort }));
		},

		/**
		 * The JSON of the games `search` keeps, in id order, as listed, made a slice at a time: each slice of stored games made ready and
		 * populated by moleculer-db, turned into JSON and let go, so a long list never holds all its games at once (docs/performance.md).
		 */
		async listedJson(ctx: Context, search: GameSearch): Promise<AnswerJson> {
			const parts: Buffer[] = [];
			for await (const stored of this.findInSteps({ query: search.query, sort: BY_ID }, LIST_STEP)) {
				const games = titleKept(search, stored);
				if (games.length > 0) parts.push(jsonItems(await this.transformDocuments(ctx, { populate: WITH_REFERENCES }, games)));
			}
			return new AnswerJson(await joinedInSteps(parts));
		},

		/**
		 * The games as listed: category and author as full records, each asked for in one batched call. A long list is made ready
		 * LIST_STEP games at a time, with a turn of the event loop between.
		 */
		async withReferences(ctx: Context, games: Record<string, unknown>[]): Promise<ListedGame[]> {
			if (games.length <= LIST_STEP)
				return (await this.transformDocuments(ctx, { populate: WITH_REFERENCES }, games)) as ListedGame[];
			const listed: Record<string, unknown>[] = [];
			for await (const slice of inSteps(games, LIST_STEP))
				listed.push(...((await this.transformDocuments(ctx, {}, slice)) as Record<string, unknown>[]));
			// moleculer-db's populateDocs would gather each reference's ids over every game in one stretch: gathered here in steps, and
			// filled in by the same populate rule.
			for (const reference of WITH_REFERENCES) {
				const ids = new Set<string>();
				for await (const slice of inSteps(listed, LIST_STEP)) for (const game of slice) ids.add(game[reference] as string);
				await POPULATES[reference].handler([...ids], listed, undefined, ctx);
			}
			return listed as unknown as ListedGame[];
		},

		/**
		 * The update of a game that keeps its category and author (a title, an age), without a claim: the game refers to them, so
		 * every delete of them counts it and fails for as long as it does. They are checked (a game may refer to a record that is
		 * gone), then written only while the game still refers to them and no change is in progress; false when it no longer does
		 * (docs/integrity.md).
		 */
		async writtenInPlace(ctx: Context, id: string, game: Omit<Game, "id">): Promise<boolean> {
			const references = { category: game.category, author: game.author };
			await this.checkReferences(ctx, references);
			const kept = { query: { _id: id, ...references, change: { $exists: false }, ...notDraft }, update: { $set: game } };
			return (await this.recorded(ctx, "updated", kept, () => ({ id, ...game }))) === 1;
		},

		/** Resolves when the category and the author (or each of several) exist and are not being deleted. */
		async checkReferences(ctx: Context, { category, author }: References | BatchReferences): Promise<void> {
			await firstFailure([ctx.call("categories.referable", { id: category }), ctx.call("authors.referable", { id: author })]);
		},
	},
};

export default GamesService;
