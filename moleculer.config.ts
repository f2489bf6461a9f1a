import type { BrokerOptions } from "moleculer";
import { config } from "./lib/config";

/** Only what differs from moleculer's defaults; every value comes from lib/config.ts. */
const brokerOptions: BrokerOptions = {
	namespace: config.namespace,
	transporter: config.transporter ? { type: "NATS", options: { url: config.transporter } } : null,
	logLevel: config.logLevel,
};

export default brokerOptions;
