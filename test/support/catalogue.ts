import type { AddressInfo } from "node:net";
import { ServiceBroker, type Middleware } from "moleculer";
import brokerOptions from "../../moleculer.config";
import ApiService from "../../services/api.service";
import AuthorsService from "../../services/authors.service";
import CategoriesService from "../../services/categories.service";
import GamesService from "../../services/games.service";

export interface Catalogue {
	broker: ServiceBroker;
	api: Api;
	stop(): Promise<void>;
}

export interface Answer<T = any> {
	status: number;
	body: T;
	headers: Headers;
}

/** A tiny JSON client for the gateway. */
export class Api {
	constructor(readonly url: string) {}

	async send<T = any>(method: string, path: string, body?: unknown, raw?: string): Promise<Answer<T>> {
		const response = await fetch(this.url + path, {
			method,
			headers: body !== undefined || raw !== undefined ? { "Content-Type": "application/json" } : {},
			body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
		});
		const text = await response.text();
		return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers };
	}

	get = <T = any>(path: string) => this.send<T>("GET", path);
	put = <T = any>(path: string, body?: unknown) => this.send<T>("PUT", path, body);
	post = <T = any>(path: string, body?: unknown) => this.send<T>("POST", path, body);
	delete = <T = any>(path: string) => this.send<T>("DELETE", path);

	/** Creates a record through HTTP and returns it, failing the test if the service refuses. */
	async create<T = any>(path: string, key: string, body: unknown): Promise<T> {
		const answer = await this.put(path, body);
		if (answer.status !== 200) throw new Error(`PUT ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
		return answer.body[key];
	}

	author = (name = "Reiner Knizia", nationality = "German") => this.create("/author", "author", { name, nationality });
	category = (name = "Eurogames") => this.create("/category", "category", { name });
	game = (title: string, category: { id: string }, author: { id: string }, age = 10) =>
		this.create("/game", "game", { title, age, category: { id: category.id }, author: { id: author.id } });
}

/** All four services in one broker with in-memory storage, the gateway on a free port. */
export async function startCatalogue(middlewares: Middleware[] = []): Promise<Catalogue> {
	const broker = new ServiceBroker({ ...brokerOptions, nodeID: `test-${process.pid}`, logger: false, middlewares });
	for (const schema of [AuthorsService, CategoriesService, GamesService, ApiService]) broker.createService(schema);
	await broker.start();
	const server = (broker.getLocalService("api") as unknown as { server: { address(): AddressInfo } }).server;
	return { broker, api: new Api(`http://127.0.0.1:${server.address().port}`), stop: () => broker.stop() };
}

/**
 * Sends a request while one adapter method of a service fails as a broken store would, and
 * returns the answer; the store works again afterwards.
 */
export async function withBrokenStorage<T>(
	catalogue: Catalogue,
	[service, method]: [string, string],
	request: () => Promise<T>,
): Promise<T> {
	const adapter = (catalogue.broker.getLocalService(service) as unknown as { adapter: Record<string, unknown> }).adapter;
	const original = adapter[method];
	adapter[method] = () => Promise.reject(new Error("disk unavailable"));
	try {
		return await request();
	} finally {
		adapter[method] = original;
	}
}

/** Ids of every shape a client may send that no record has: each must be a plain unknown id. */
export const unknownIds: [string, string][] = [
	["a number", "1"],
	["a word", "noExist"],
	["200 characters", "x".repeat(200)],
	["a well-formed id nobody has", "01ARZ3NDEKTSV4RRFFQ69G5FAV"],
];
