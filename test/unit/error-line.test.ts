import { ServiceBroker } from "moleculer";
import { loggerOptions } from "../../lib/observability/observability";

/** What a broker at `logLevel` writes to standard error when it logs `err` at error level. */
function logged(logLevel: "info" | "debug", logFormat: "text" | "json", err: Error): string {
	const broker = new ServiceBroker({ logger: loggerOptions({ logFormat }), logLevel: { TEST: logLevel, "**": false } });
	let written = "";
	const write = jest.spyOn(process.stderr, "write").mockImplementation(chunk => ((written += String(chunk)), true));
	try {
		broker.getLogger("test").error("Could not do it:", err);
	} finally {
		write.mockRestore();
	}
	return written;
}

const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED", port: 1 });
const named = () => Object.assign(new TypeError("a is not a function"), { code: "E_NAMED" });

describe("an Error in a log line is one line, its name, message and code, below LOGLEVEL=debug", () => {
	test.each(["text", "json"] as const)("%s lines", format => {
		const line = logged("info", format, named());
		expect(line.trimEnd().split("\n")).toHaveLength(1);
		expect(line).toContain("Could not do it: TypeError: a is not a function (E_NAMED)");
		expect(line).not.toMatch(/\bat /);
	});

	test("a code its message already names is not repeated", () => {
		expect(logged("info", "text", refused())).toContain("Could not do it: Error: connect ECONNREFUSED 127.0.0.1:1\n");
	});

	test("at LOGLEVEL=debug the stack and the fields are kept", () => {
		const line = logged("debug", "text", refused());
		expect(line).toMatch(/^\s+at /m);
		expect(line).toContain("port: 1");
	});
});
