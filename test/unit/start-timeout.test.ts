import type { ServiceBroker } from "moleculer";
import { startTimeout } from "../../middlewares/start-timeout.middleware";

// One configuration's middleware serves every broker made from it (the tests make several in one process): each broker's start
// is timed on its own, so one broker's start does not cancel another's bound, nor leave a bound behind that ends the process later.

type Hooks = { starting(broker: ServiceBroker): Promise<void>; started(broker: ServiceBroker): Promise<void> };

const broker = (nodeID: string) => ({ nodeID, logger: { fatal: jest.fn() } }) as unknown as ServiceBroker;

/** Runs `steps` on a middleware bounding starts to 100 ms, with `process.exit` spied on; its calls once the bounds have passed. */
async function exitsAfter(steps: (middleware: Hooks) => Promise<void>): Promise<unknown[][]> {
	const exit = jest.spyOn(process, "exit").mockImplementation((() => undefined) as never);
	try {
		await steps(startTimeout({ timeoutMs: 100, transporter: null, redis: null, storage: "memory" }) as unknown as Hooks);
		await new Promise(resolve => setTimeout(resolve, 250));
		return exit.mock.calls;
	} finally {
		exit.mockRestore();
	}
}

test("two brokers starting at once: the one that starts is let be, the one that does not ends the process, once", async () => {
	const [started, stuck] = [broker("started"), broker("stuck")];
	const exits = await exitsAfter(async middleware => {
		await middleware.starting(started);
		await middleware.starting(stuck);
		await middleware.started(started);
	});
	expect(exits).toEqual([[1]]);
	expect(stuck.logger.fatal).toHaveBeenCalledTimes(1);
	expect(started.logger.fatal).not.toHaveBeenCalled();
});

test("a broker that starts in time leaves nothing behind, even when another started after it", async () => {
	const [first, second] = [broker("first"), broker("second")];
	const exits = await exitsAfter(async middleware => {
		await middleware.starting(first);
		await middleware.starting(second);
		await middleware.started(second);
		await middleware.started(first);
	});
	expect(exits).toEqual([]);
});
