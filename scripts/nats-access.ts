/**
 * Prints the `authorization` block of nats-access.conf: a NATS user per kind of node and what it may publish and subscribe to
 * (lib/config/broker-access.ts, docs/security.md "The broker"). test/unit/broker-access.test.ts checks the file holds it.
 */
import { natsAuthorization } from "../lib/config/broker-access";
import { aliases } from "../services/api.routes";

process.stdout.write(natsAuthorization(Object.values(aliases)));
