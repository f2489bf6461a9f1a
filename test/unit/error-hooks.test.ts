import { Errors, type Context, type Service, type ServiceBroker } from "moleculer";
import { CatalogueError, errorHooks, notFound, storageFailure, texts } from "../../lib/catalogue/errors";

const hooks = errorHooks({
	notFound: notFound(texts.authorNotFound),
	failures: { list: texts.fetchAuthors, create: texts.createAuthor },
});
const service = { logger: { error: jest.fn() } } as unknown as Service;
const ctx = { action: { name: "authors.list" }, requestID: "abc-123" } as Context;

function thrownBy(action: string, err: Error): unknown {
	const hook = hooks[action] as (this: Service, ctx: Context, err: Error) => void;
	try {
		hook.call(service, ctx, err);
	} catch (thrown) {
		return thrown;
	}
	throw new Error("the hook did not throw");
}

describe("errorHooks", () => {
	test("there is a hook per action named", () => {
		expect(Object.keys(hooks)).toEqual(["list", "create"]);
	});

	test("moleculer-db's EntityNotFoundError becomes the entity's 'There is no ... with that Id'", () => {
		const err = Object.assign(new Error("Entity not found"), { name: "EntityNotFoundError", code: 404 });
		expect(thrownBy("list", err)).toMatchObject({ message: texts.authorNotFound, code: 400 });
	});

	test("business and validation failures pass unchanged", () => {
		const business = new CatalogueError(texts.categoryNotFound, "NOT_FOUND");
		const validation = new Errors.ValidationError("bad", "VALIDATION_ERROR", []);
		expect(thrownBy("create", business)).toBe(business);
		expect(thrownBy("create", validation)).toBe(validation);
	});

	test("a storage failure, here or in a service called, becomes the action's text, logged with the request's id", () => {
		expect(thrownBy("list", new Error("EACCES"))).toMatchObject({ message: texts.fetchAuthors, code: 400 });
		expect(service.logger.error).toHaveBeenLastCalledWith({ requestId: "abc-123" }, "authors.list failed:", "EACCES");
		expect(thrownBy("create", storageFailure(texts.fetchCategory))).toMatchObject({ message: texts.createAuthor });
	});

	test.each([
		new Errors.ServiceNotAvailableError({ action: "games.countBy" }),
		new Errors.ServiceNotFoundError({ action: "games.countBy" }),
		new Errors.RequestRejectedError({ action: "games.countBy", nodeID: "games-1" }),
		new Errors.RequestTimeoutError({ action: "games.countBy", nodeID: "games-1" }),
		new Errors.RequestSkippedError({ action: "games.countBy", nodeID: "games-1" }),
		new Errors.QueueIsFullError({ action: "games.countBy", nodeID: "games-1", size: 128, limit: 32 }),
	])("a service called that cannot be reached or does not answer (%s) passes unchanged: not the request's fault", err => {
		expect(thrownBy("create", err)).toBe(err);
	});
});

describe("CatalogueError", () => {
	test("crosses to another node as a MoleculerClientError with its text, type and data", () => {
		const regenerator = new Errors.Regenerator();
		regenerator.init({ nodeID: "games-node" } as ServiceBroker);
		const sent = new CatalogueError(texts.categoryNotFound, "NOT_FOUND", { id: "x" });
		const received = regenerator.restore(regenerator.extractPlainError(sent, {}), { sender: "categories-node" });
		expect(received).toBeInstanceOf(Errors.MoleculerClientError);
		expect(received).toMatchObject({ message: texts.categoryNotFound, code: 400, type: "NOT_FOUND", data: { id: "x" } });
	});
});
