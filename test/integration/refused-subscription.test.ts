import { ServiceBroker } from "moleculer";
import { newId } from "../../lib/catalogue/ids";
import { natsTransporter } from "../../lib/config/transporter";
import { startNats, type NatsServer } from "../support/nats";

// A node whose NATS user may not read its own subjects (nats-access.conf's rules, a user of another kind) ends with one line
// naming the subject, where moleculer's callback failed on the refusal and left a node that said it was ready and could not stop.

let nats: NatsServer;
beforeAll(async () => {
	nats = await startNats(undefined, undefined, { access: true });
});
afterAll(() => nats?.stop());

test("a subscription the server refuses ends the node with one FATAL line naming the subject", async () => {
	const exit = jest.spyOn(process, "exit").mockImplementation((() => undefined) as never);
	const broker = new ServiceBroker({
		nodeID: `games.refused-${process.pid}`,
		namespace: `refused-${newId()}`,
		transporter: natsTransporter(nats.urlAs("api"), "api"),
		disableBalancer: true,
		logger: false,
	});
	broker.createService({ name: "games", actions: { list: () => [] } });
	const fatal = jest.spyOn((broker.transit as unknown as { tx: { logger: { fatal(...args: unknown[]): void } } }).tx.logger, "fatal");
	try {
		await broker.start();
		for (const deadline = Date.now() + 5000; exit.mock.calls.length === 0 && Date.now() < deadline;)
			await new Promise(resolve => setTimeout(resolve, 50));
		expect(exit).toHaveBeenCalledWith(1);
		expect(String(fatal.mock.calls[0]?.[0])).toMatch(
			/^NATS refused this node the subject MOL-refused-\w+\.\S+ \(.*Permissions Violation.*\): its user may not do what this kind of node does\. Check NATS_ACCESS, TRANSPORTER's user and the server's rules \(docs\/security\.md\)\.$/i,
		);
	} finally {
		await broker.stop();
		exit.mockRestore();
	}
});
