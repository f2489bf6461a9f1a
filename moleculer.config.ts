import type { BrokerOptions } from "moleculer";
import { config } from "./lib/config";
import { hideCredentials } from "./lib/uris";
import { readinessProbe } from "./middlewares/readiness.middleware";
import { startTimeout } from "./middlewares/start-timeout.middleware";
import { describeStorage } from "./mixins/db.mixin";
import { catalogueCommands } from "./repl/commands";

/** Only what differs from moleculer's defaults; every value comes from lib/config.ts. */
const brokerOptions: BrokerOptions = {
	namespace: config.namespace,
	transporter: config.transporter ? { type: "NATS", options: { url: config.transporter } } : null,
	logLevel: config.logLevel,
	// moleculer waits for ever by default: a call lost with a node or a NATS connection would
	// hold its HTTP request open.
	requestTimeout: config.requestTimeoutMs,
	middlewares: [
		startTimeout({
			timeoutMs: config.startTimeoutMs,
			transporter: config.transporter && hideCredentials(config.transporter),
			storage: describeStorage(),
		}),
		...(config.healthPort ? [readinessProbe(config.healthPort)] : []),
	],
	replOptions: { delimiter: "catalogue $", customCommands: catalogueCommands },
};

export default brokerOptions;
