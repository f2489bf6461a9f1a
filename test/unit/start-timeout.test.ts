import type { ServiceBroker } from "moleculer";
import { startTimeout } from "../../middlewares/start-timeout.middleware";

// One configuration's middleware serves every broker made from it (the tests make several in one process): each broker's start
// is timed on its own, so one broker's start does not cancel another's bound, nor leave a bound behind that ends the process later.

type Hooks = { starting(broker: ServiceBroker): Promise<void>; started(broker: ServiceBroker): Promise<void> };

const broker = (nodeID: string) => ({ nodeID, logger: { fatal: jest.fn() } }) as unknown as ServiceBroker;

test("two brokers starting at once: the one that starts is let be, the one that does not ends the process, once", async () => {
	const exit = jest.spyOn(process, "exit").mockImplementation((() => undefined) as never);
	try {
		const middleware = startTimeout({ timeoutMs: 100, transporter: null, storage: "memory" }) as unknown as Hooks;
		const [started, stuck] = [broker("started"), broker("stuck")];
		await middleware.starting(started);
		await middleware.starting(stuck);
		await middleware.started(started);
		await new Promise(resolve => setTimeout(resolve, 250));
		expect(exit.mock.calls).toEqual([[1]]);
		expect(stuck.logger.fatal).toHaveBeenCalledTimes(1);
		expect(started.logger.fatal).not.toHaveBeenCalled();
	} finally {
		exit.mockRestore();
	}
});

test("a broker that starts in time leaves nothing behind, even when another started after it", async () => {
	const exit = jest.spyOn(process, "exit").mockImplementation((() => undefined) as never);
	try {
		const middleware = startTimeout({ timeoutMs: 100, transporter: null, storage: "memory" }) as unknown as Hooks;
		const [first, second] = [broker("first"), broker("second")];
		await middleware.starting(first);
		await middleware.starting(second);
		await middleware.started(second);
		await middleware.started(first);
		await new Promise(resolve => setTimeout(resolve, 250));
		expect(exit).not.toHaveBeenCalled();
	} finally {
		exit.mockRestore();
	}
});
