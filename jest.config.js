// @ts-check
// The HTTP contract (test/contract) runs once per layout of the catalogue and once more against
// MongoDB when MONGO_URI is given; everything else runs once. The project's name heads every line
// of Jest's output, so each result says where it ran. test/README.md explains the projects.

/** @param {string} name @param {string} color @param {string[]} testMatch @param {object} catalogueProject @param {object} [more] */
function project(name, color, testMatch, catalogueProject, more = {}) {
	return {
		displayName: { name, color },
		testEnvironment: "node",
		roots: ["<rootDir>/test"],
		testMatch,
		transform: {
			"^.+\\.ts$": ["@swc/jest", { jsc: { parser: { syntax: "typescript" }, target: "es2023" }, module: { type: "commonjs" } }],
			// jose ships ES modules only, which Jest's CommonJS runtime cannot require: compiled like the tests.
			"/node_modules/jose/.+\\.js$": ["@swc/jest", { jsc: { target: "es2023" }, module: { type: "commonjs" } }],
		},
		transformIgnorePatterns: ["/node_modules/(?!jose/)"],
		// support/env.ts turns `catalogueProject` into the environment the catalogue is started with.
		setupFiles: ["<rootDir>/test/support/env.ts"],
		globals: { catalogueProject: { topology: "one-broker", mongodb: false, ...catalogueProject } },
		...more,
	};
}

const contract = "<rootDir>/test/contract/**/*.test.ts";
const mongo = "<rootDir>/test/mongo/**/*.test.ts";

/** @type {import("jest").Config} */
module.exports = {
	testTimeout: 30_000,
	// One temporary folder for the whole run, removed at its end (support/tmp-setup.ts).
	globalSetup: "<rootDir>/test/support/tmp-setup.ts",
	globalTeardown: "<rootDir>/test/support/tmp-teardown.ts",
	projects: [
		project(
			"default",
			"white",
			["<rootDir>/test/**/*.test.ts"],
			{},
			{ testPathIgnorePatterns: ["/test/contract/", "/test/mongo/", "/test/stack/"] },
		),
		// Here every answer a contract test receives is also checked against the OpenAPI document
		// (support/openapi-check.ts): once is enough, the document is the same in every layout.
		project(
			"contract: one broker",
			"cyan",
			[contract],
			{ topology: "one-broker" },
			{ setupFilesAfterEnv: ["<rootDir>/test/support/openapi-check.ts"] },
		),
		project("contract: four brokers over NATS", "magenta", [contract], { topology: "nats" }),
		// Without MONGO_URI this project runs only test/mongo, which says loudly that the contract
		// did not run against MongoDB (and fails under CI=true unless CATALOGUE_NO_MONGODB says why).
		// docker-compose.yml run on this machine's own Docker engine (deploy/local-docker/README.md).
		project("compose stack", "yellow", ["<rootDir>/test/stack/**/*.test.ts"], {}),
		project("contract: MongoDB", "green", process.env.MONGO_URI ? [contract, mongo] : [mongo], { mongodb: true }),
	],
};
