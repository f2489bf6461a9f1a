/**
 * Prints who may do what on the cluster's NATS (lib/config/broker-access.ts, docs/security.md "The broker"): the `authorization`
 * block of nats-access.conf, or with `--helm` the `authorization` of deploy/kubernetes/charts/nats-values.yaml (under
 * `config.merge`). test/unit/broker-access.test.ts and test/deploy/kubernetes.test.ts check that both files hold it.
 */
import { stringify } from "yaml";
import { helmAuthorization, natsAuthorization } from "../lib/config/broker-access";
import { aliases } from "../services/api.routes";

const routeActions = Object.values(aliases);
process.stdout.write(
	process.argv.includes("--helm") ? stringify({ authorization: helmAuthorization(routeActions) }) : natsAuthorization(routeActions),
);
