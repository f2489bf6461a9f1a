import type { ActionSchema, Service, ServiceBroker, ServiceSchema } from "moleculer";
import { sourcesOf, type AnswerCache, type CatalogueCache } from "../lib/cache/answers";
import { RedisAnswers } from "../lib/cache/redis-cacher";

/** The `cache` of an action whose answer is made of the records of `services` (docs/caching.md). */
export function cachedFrom(...services: string[]): CatalogueCache {
	return { from: services };
}

/** The broker's cacher, which keeps answers as sent (lib/cache/cache.ts cacherOptions makes no other); none without a cache. */
const answerCacheOf = (broker: ServiceBroker) => broker.cacher as (AnswerCache & ServiceBroker["cacher"]) | undefined;

/** The services whose records the cached answers of a service's `actions` are made of. */
function sourcesOfAll(actions: ServiceSchema["actions"] = {}): Set<string> {
	return new Set(Object.values(actions).flatMap(action => sourcesOf(action as ActionSchema) ?? []));
}

/**
 * The news that Redis did not take a write's move of `service`'s generation (it was unreachable
 * or late): a node that hears it keeps off the answers made of `service` until it has moved the
 * generation on itself.
 */
const staleNews = (service: string) => `cache.stale.${service}`;

/**
 * For a node that caches: it hears the news of the writes Redis did not record, for the services
 * `services` names, or by default those its cached answers are made of (the gateway's, for all
 * three, since it looks cached reads up itself). With Redis, the node starts once it has checked
 * the cache's epoch there, however long Redis takes to answer (START_TIMEOUT ends the wait): without Redis, it cannot tell an
 * answer from before a write.
 */
export function generationNews(services?: readonly string[]): Partial<ServiceSchema> {
	/** The services whose news a service with this schema hears. */
	const heardBy = (schema: ServiceSchema) => services ?? sourcesOfAll(schema.actions);
	// `merged` is a lifecycle hook of moleculer's that its typings leave out.
	return {
		// After the mixins are merged, before the events are registered: the service's own actions are known.
		merged(schema: ServiceSchema) {
			const news: ServiceSchema["events"] = Object.fromEntries(
				[...heardBy(schema)].map(service => [
					staleNews(service),
					function (this: Service) {
						answerCacheOf(this.broker)?.owe(service);
					},
				]),
			);
			schema.events = { ...news, ...schema.events };
		},
		async started(this: Service) {
			const { cacher } = this.broker;
			if (cacher instanceof RedisAnswers) await cacher.epochAtStart();
		},
	} as Partial<ServiceSchema>;
}

/** Moves `service`'s generation on; when Redis does not take it, the nodes that read its answers are told to keep off them until it has. */
async function moveOn(service: Service): Promise<void> {
	const cache = answerCacheOf(service.broker);
	if (!cache || (await cache.nextGeneration(service.name))) return;
	await service.broker.broadcast(staleNews(service.name), {}).catch((err: Error) => {
		service.logger.warn(`Could not tell the other nodes that ${service.name}'s cached answers are stale: ${err.message}`);
	});
}

/**
 * For a catalogue service: `clearCache`, which moleculer-db calls after every write, moves the
 * service's generation on before the write answers.
 *
 * Each start moves it on too, before the service takes a request: a replica killed between a
 * write's commit and its move left answers from before that write current, and its next start
 * (its supervisor's restart) makes them unreachable.
 */
export const generationsMoveOn: Partial<ServiceSchema> = {
	async started(this: Service) {
		// Once Redis answers, so that the move is made before the service is known to take requests, not owed.
		const { cacher } = this.broker;
		if (cacher instanceof RedisAnswers) await cacher.epochAtStart();
		await moveOn(this);
	},
	methods: {
		clearCache(this: Service): Promise<void> {
			return moveOn(this);
		},
	},
};
