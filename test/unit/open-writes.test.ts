import { ServiceBroker } from "moleculer";
import { config } from "../../lib/config/config";
import { apiService, OPEN_WRITES_WARNING, type GatewayOptions } from "../../services/api.service";

// Open writes are a choice, not an accident: in production the gateway says so at start (docs/security.md).

/** What the gateway warns at start with these settings. */
async function warningsAtStart(settings: Partial<GatewayOptions>): Promise<string[]> {
	const broker = new ServiceBroker({ logger: false });
	const gateway = broker.createService(apiService({ ...config, port: 0, ...settings }));
	const warn = jest.spyOn(gateway.logger, "warn");
	await broker.start();
	await broker.stop();
	// Less the sign-in check's own line about its provider (test/unit/sign-in-start.test.ts): none answers here.
	return warn.mock.calls.map(args => args.join(" ")).filter(line => !line.startsWith("Sign-in:"));
}

test.each([
	["in production with no API_TOKEN", { production: true, apiToken: null }, [OPEN_WRITES_WARNING]],
	["in production with an API_TOKEN", { production: true, apiToken: "a-secret-of-sixteen+" }, []],
	[
		"in production with sign-in and no API_TOKEN",
		{
			production: true,
			apiToken: null,
			signIn: {
				issuer: "http://127.0.0.1:1",
				jwksUrl: null,
				audience: "a",
				rolesClaim: "roles",
				writeRole: "e",
				reads: "public" as const,
			},
		},
		[],
	],
	["outside production with no API_TOKEN", { production: false, apiToken: null }, []],
])("%s: the warnings at start", async (_case, settings, expected) => {
	expect(await warningsAtStart(settings)).toEqual(expected);
});

test("the warning says what is open and how to close it", () => {
	expect(OPEN_WRITES_WARNING).toMatch(/NODE_ENV=production, and neither API_TOKEN nor AUTH_ISSUER/);
	expect(OPEN_WRITES_WARNING).toMatch(/Set API_TOKEN/);
	expect(OPEN_WRITES_WARNING).toMatch(/or AUTH_ISSUER and AUTH_AUDIENCE/);
	expect(OPEN_WRITES_WARNING).toMatch(/Authorization: Bearer/);
});

test("NODE_ENV=production is read as production, anything else is not", () => {
	expect(config.production).toBe(process.env.NODE_ENV === "production");
});
