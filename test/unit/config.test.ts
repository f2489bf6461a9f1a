import path from "node:path";
import { ConfigError, readConfig } from "../../lib/config";

describe("readConfig", () => {
	test("defaults: port 3000, ./data, NeDB files, one process, info logs", () => {
		expect(readConfig({})).toEqual({
			port: 3000,
			dataDir: path.resolve("data"),
			storage: "file",
			transporter: null,
			namespace: "",
			logLevel: "info",
			bodyLimit: "100kb",
		});
	});

	test("reads PORT, DATA_DIR, STORAGE, TRANSPORTER, NAMESPACE, LOGLEVEL and BODY_LIMIT", () => {
		const config = readConfig({
			PORT: "8080",
			DATA_DIR: "/tmp/catalogue",
			STORAGE: "memory",
			TRANSPORTER: "nats://127.0.0.1:4222",
			NAMESPACE: "staging",
			LOGLEVEL: "debug",
			BODY_LIMIT: "1mb",
		});
		expect(config).toEqual({
			port: 8080,
			dataDir: "/tmp/catalogue",
			storage: "memory",
			transporter: "nats://127.0.0.1:4222",
			namespace: "staging",
			logLevel: "debug",
			bodyLimit: "1mb",
		});
	});

	test.each([
		[{ PORT: "http" }, /PORT/],
		[{ PORT: "70000" }, /PORT/],
		[{ PORT: "" }, /PORT/],
		[{ STORAGE: "mongo" }, /STORAGE/],
		[{ LOGLEVEL: "loud" }, /LOGLEVEL/],
	])("refuses %p with a clear message", (env, message) => {
		expect(() => readConfig(env)).toThrow(ConfigError);
		expect(() => readConfig(env)).toThrow(message);
	});
});
