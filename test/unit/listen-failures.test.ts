import { ServiceBroker } from "moleculer";
import { config } from "../../lib/config/config";
import { portRefused } from "../../lib/config/start-failures";
import { metricsOptions } from "../../lib/observability/observability";
import { apiService } from "../../services/api.service";

// A port the node may not listen on, for any reason (in use, or below 1024 for a user without privileges): one FATAL line naming
// the variable and exit code 1 (docs/operations.md, "When a node does not start"). EADDRINUSE is met in test/process/start-failures
// .test.ts; root, which runs CI, may open any port, so the other refusals are the server's own 'error' event here.

const refused = (code: string, port: number) =>
	Object.assign(new Error(`listen ${code}: 0.0.0.0:${port}`), { code, syscall: "listen", port });

let exit: jest.SpyInstance;
beforeEach(() => {
	exit = jest.spyOn(process, "exit").mockImplementation((() => undefined) as never);
});
afterEach(() => jest.restoreAllMocks());

test("what each refusal says: the variable, the port, and what to do", () => {
	expect(portRefused("PORT", 80, refused("EACCES", 80))).toBe(
		"PORT 80 may not be opened by this user (ports below 1024 need privileges): set PORT to 1024 or above.",
	);
	expect(portRefused("HEALTH_PORT", 4000, refused("EADDRINUSE", 4000))).toBe(
		"HEALTH_PORT 4000 is already in use by another process: stop that process, or set HEALTH_PORT to a free port.",
	);
	expect(portRefused("METRICS_PORT", 4000, refused("EADDRNOTAVAIL", 4000))).toBe(
		"METRICS_PORT 4000 cannot be listened on (EADDRNOTAVAIL): set METRICS_PORT to another port.",
	);
});

test("the gateway's PORT refused (EACCES): one FATAL line and exit code 1, where it ended with 0 after moleculer-web's stack", async () => {
	const broker = new ServiceBroker({ logger: false });
	const api = broker.createService(apiService({ ...config, port: 0 }));
	const fatal = jest.spyOn(api.logger, "fatal");
	await broker.start();
	try {
		(api as unknown as { server: NodeJS.EventEmitter }).server.emit("error", refused("EACCES", 80));
		expect(fatal.mock.calls).toEqual([[portRefused("PORT", 0, refused("EACCES", 80))]]);
		expect(exit).toHaveBeenCalledWith(1);
		// An error that is not the listen's (a connection's) is moleculer-web's to log: the gateway goes on.
		fatal.mockClear();
		exit.mockClear();
		(api as unknown as { server: NodeJS.EventEmitter }).server.emit(
			"error",
			Object.assign(new Error("accept EMFILE"), { syscall: "accept" }),
		);
		expect(fatal).not.toHaveBeenCalled();
		expect(exit).not.toHaveBeenCalled();
	} finally {
		await broker.stop();
	}
});

test("METRICS_PORT refused (EACCES): one FATAL line and exit code 1, where it was an uncaught exception", async () => {
	const broker = new ServiceBroker({ logger: false, metrics: metricsOptions({ metricsPort: 0 }) });
	await broker.start();
	try {
		const [reporter] = (broker.metrics as unknown as { reporter: { server: NodeJS.EventEmitter; opts: { port: number } }[] }).reporter;
		const fatal = jest.spyOn(broker.metrics.logger, "fatal");
		reporter.server.emit("error", refused("EACCES", 82));
		expect(fatal.mock.calls).toEqual([[portRefused("METRICS_PORT", reporter.opts.port, refused("EACCES", 82))]]);
		expect(exit).toHaveBeenCalledWith(1);
	} finally {
		await broker.stop();
	}
});
