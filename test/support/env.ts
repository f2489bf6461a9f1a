import { testDatabaseName, withDatabase } from "../mongo/database";

/** What the Jest project asks of its test files (`globals.catalogueProject` in jest.config.js). */
interface CatalogueProject {
	/** How startCatalogue lays the services out (test/support/catalogue.ts). */
	topology: "one-broker" | "nats";
	/** Whether the records go to the MongoDB of MONGO_URI rather than memory. */
	mongodb: boolean;
}

declare const catalogueProject: CatalogueProject;

// The tests decide the catalogue's environment, for the in-process catalogue and the processes
// the tests start alike: a developer's exported settings must not turn a test run into one that
// writes files, joins a cluster, uses another body limit, opens a metrics port or sends spans. The
// catalogue over NATS caches in the Redis of REDIS_URL (this machine's by default); in one broker
// it caches in memory, as it runs. They are set empty, not deleted: a `.env` in the working directory (lib/config/load.ts)
// fills only variables that are not set at all, here and in the processes the tests start.
process.env.CATALOGUE_TEST_REDIS = process.env.REDIS_URL || "redis://127.0.0.1:6379";
for (const name of [
	"TRANSPORTER",
	"NAMESPACE",
	"SERVICES",
	"SERVICEDIR",
	"HEALTH_PORT",
	"DATA_DIR",
	"BODY_LIMIT",
	"START_TIMEOUT",
	"REQUEST_TIMEOUT",
	"REDIS_URL",
	"TRUST_PROXY",
	"METRICS_PORT",
	"LOG_FORMAT",
	"TRACE_EXPORTER",
	"ZIPKIN_URL",
])
	process.env[name] = "";
process.env.STORAGE = "memory";
process.env.PORT = "0";
process.env.LOGLEVEL ??= "error";
process.env.CATALOGUE_TOPOLOGY = catalogueProject.topology;

// MONGO_URI belongs to the MongoDB project alone, and there every test file gets an empty
// database of its own (dropped by the catalogue's stop()); everywhere else records stay in memory.
if (catalogueProject.mongodb && process.env.MONGO_URI) process.env.MONGO_URI = withDatabase(process.env.MONGO_URI, testDatabaseName());
else delete process.env.MONGO_URI;
