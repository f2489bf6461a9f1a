import { ServiceBroker } from "moleculer";
import { NATS_RECONNECTS, natsReconnects } from "../../middlewares/nats-reconnects.middleware";
import { startNats, type NatsServer } from "../support/nats";
import { waitFor } from "../support/process";

// The NATS client reconnects by itself, unseen by moleculer's metrics: the middleware counts it
// (the Grafana dashboard's "NATS reconnects", deploy/kubernetes/monitoring).

let nats: NatsServer;
let broker: ServiceBroker;

beforeAll(async () => {
	nats = await startNats();
	broker = new ServiceBroker({
		logger: false,
		namespace: `reconnects-${process.pid}`,
		transporter: { type: "NATS", options: { servers: [nats.url] } },
		metrics: { enabled: true },
		middlewares: [natsReconnects],
	});
	await broker.start();
});
afterAll(async () => {
	await broker?.stop();
	await nats?.stop();
});

/** Until the first reconnect the counter has no value yet. */
const reconnects = () => broker.metrics.getMetric(NATS_RECONNECTS)?.get()?.value ?? 0;
const registered = () => Boolean(broker.metrics.getMetric(NATS_RECONNECTS));

test("a NATS server stopped and started again counts one reconnect of the node", async () => {
	expect(registered()).toBe(true);
	expect(reconnects()).toBe(0);
	await nats.stop();
	await nats.start();
	await waitFor("the node reconnected to NATS", async () => reconnects() === 1);
});
