/**
 * A follower of the catalogue's change feed (docs/followers.md): another team's service that keeps a copy of every game's title,
 * say for a loans desk. It reads the `games` feed in order from where it stopped, woken by the `games.*` broadcasts and every
 * second, and keeps its copy and its position in one file, written whole, so that it resumes after its own restart or a crash.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import type { ServiceSchema, ServiceSettingSchema } from "moleculer";

type Change = { seq: number; type: "created" | "updated" | "removed"; record: { id: string; title?: string } };
type FeedPage = { changes: Change[]; first: number; last: number };
type Copy = { position: number; titles: Record<string, string> };
type Follower = { follow(): Promise<void>; readFeed(): Promise<void>; fullRead(): Promise<void>; save(): void };

export function gameTitles(file: string): ServiceSchema<ServiceSettingSchema, Follower> {
	let copy: Copy | undefined;
	let reading = Promise.resolve();
	let poll: NodeJS.Timeout | undefined;
	return {
		name: "gameTitles",
		dependencies: ["games"],
		events: {
			"games.*"() {
				void this.follow();
			},
		},
		actions: {
			// The copy: each game's title by id.
			titles: () => copy?.titles ?? {},
		},
		methods: {
			/** Reads the feed after the copy's position, one read at a time. */
			follow() {
				reading = reading.then(() => this.readFeed()).catch((err: Error) => this.logger.warn("Not followed yet:", err.message));
				return reading;
			},
			async readFeed() {
				for (;;) {
					const page: FeedPage = await this.broker.call("games.changes", { after: copy!.position });
					// Further behind than the feed keeps, or ahead of it (a store restored from a backup): start again from a full read.
					if (page.first > copy!.position + 1 || page.last < copy!.position) return this.fullRead();
					for (const { seq, type, record } of page.changes) {
						if (type === "removed") delete copy!.titles[record.id];
						else copy!.titles[record.id] = record.title!;
						copy!.position = seq;
					}
					if (page.changes.length > 0) this.save();
					if (page.changes.length < 500) return;
				}
			},
			/**
			 * The feed's position first, then every game: a change after that position is read from the feed again. The games from the
			 * store, not the cache: a write in the feed may not have moved the cached list on yet.
			 */
			async fullRead() {
				const { last }: FeedPage = await this.broker.call("games.changes", { after: 0, limit: 1 });
				const games: { id: string; title: string }[] = await this.broker.call("games.list", {}, { meta: { $cache: false } });
				copy = { position: last, titles: Object.fromEntries(games.map(game => [game.id, game.title])) };
				this.save();
			},
			save() {
				writeFileSync(`${file}.tmp`, JSON.stringify(copy));
				renameSync(`${file}.tmp`, file);
			},
		},
		async started() {
			try {
				copy = JSON.parse(readFileSync(file, "utf8")) as Copy;
			} catch {
				await this.fullRead();
			}
			await this.follow();
			poll = setInterval(() => void this.follow(), 1000);
		},
		stopped() {
			clearInterval(poll);
			return reading;
		},
	};
}
