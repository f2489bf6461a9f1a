import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Ajv } from "ajv";
import { parse } from "yaml";
import { NODE_KINDS, passwordVariable, type NodeKind } from "../../lib/config/broker-access";
import { readConfig } from "../../lib/config/config";
import { dockerfileStages } from "../support/dockerfile";
import { MACHINE_SETTINGS } from "../support/stack";

const root = path.resolve(__dirname, "../..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

interface Service {
	image?: string;
	build?: string | { context?: string };
	container_name?: string;
	hostname?: string;
	environment?: Record<string, string | number | boolean | null> | string[];
	ports?: (string | number | { target: number | string; published?: number | string })[];
	depends_on?: string[] | Record<string, { condition: string }>;
	restart?: string;
	healthcheck?: { test?: string | string[]; disable?: boolean };
	stop_grace_period?: string;
	read_only?: boolean;
	tmpfs?: string[];
	cap_drop?: string[];
	security_opt?: string[];
}
interface Compose {
	services: Record<string, Service>;
	volumes?: Record<string, unknown>;
}

// Compose itself reads `<<` merge keys, which is how the nodes share one definition.
const compose = parse(read("docker-compose.yml"), { merge: true }) as Compose;

function environment(service: Service): Record<string, string> {
	const entries = Array.isArray(service.environment)
		? service.environment.map(line => line.split(/=(.*)/s).slice(0, 2))
		: Object.entries(service.environment ?? {});
	return Object.fromEntries(entries.map(([key, value]) => [key, String(value ?? "")]));
}

/** What compose makes of `${NAME}`, `${NAME:-default}` and `${NAME:?error}` with the variables `env`. */
function interpolate(text: string, env: Record<string, string>): string {
	return text.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_whole, name: string, kind?: string, rest?: string) => {
		if (env[name]) return env[name];
		if (kind === "?") throw new Error(`compose refuses to start: ${rest}`);
		return kind === "-" ? (rest ?? "") : "";
	});
}

/** The stack's credentials as an operator's .env gives them (.env.example says how to make them). */
/** One NATS password per kind of node (nats-access.conf). */
const NATS_PASSWORDS: Record<string, string> = Object.fromEntries(
	NODE_KINDS.map(kind => [passwordVariable(kind), `n4ts${kind}0123456789`]),
);
const CREDENTIALS = {
	...NATS_PASSWORDS,
	REDIS_PASSWORD: "r3dis0123456789abcdef",
	MONGO_ROOT_USER: "root",
	MONGO_ROOT_PASSWORD: "r00t0123456789abcdef",
	MONGO_APP_USER: "catalogue",
	MONGO_APP_PASSWORD: "m0ngo0123456789abcdef",
};

/** A service's environment as compose gives it with CREDENTIALS set. */
const interpolated = (service: Service) =>
	Object.fromEntries(Object.entries(environment(service)).map(([key, value]) => [key, interpolate(value, CREDENTIALS)]));

/** The catalogue nodes: every service whose environment picks moleculer services. */
const nodes = Object.entries(compose.services).filter(([, service]) => environment(service).SERVICES);
const scaled = nodes.filter(([name]) => name !== "api");

function compileComposeSchema() {
	const file = path.join(path.dirname(require.resolve("dclint/package.json")), "schemas/compose.schema.json");
	const schema = JSON.parse(readFileSync(file, "utf8"));
	// It names draft-07 by an https address Ajv does not know; the Ajv class is draft-07 already.
	delete schema.$schema;
	return new Ajv({ allErrors: true, strict: false }).compile(schema);
}

/** "127.0.0.1:3000:3000", "3000:3000" or the long syntax, as { published, target }. */
function portMapping(port: NonNullable<Service["ports"]>[number]) {
	if (typeof port === "object") return { published: String(port.published), target: String(port.target) };
	const [target, published] = String(port).split(":").reverse();
	return { published: String(published), target };
}

describe("docker-compose.yml", () => {
	const validate = compileComposeSchema();

	test("is valid against the Compose specification, without a version key", () => {
		validate(compose);
		expect(validate.errors ?? []).toEqual([]);
		expect(compose).not.toHaveProperty("version");
	});

	test("nats runs with the repository's nats-access.conf and the nats.conf it includes, bind-mounted side by side (compose v1 ignores configs:)", () => {
		const nats = compose.services.nats as Service & { command?: string[]; volumes?: string[] };
		const mounted = (file: string) => nats.volumes?.find(volume => volume.startsWith(`./${file}:`))?.split(":") ?? [];
		const [, access, accessMode] = mounted("nats-access.conf");
		const [, settings, settingsMode] = mounted("nats.conf");
		expect([accessMode, settingsMode]).toEqual(["ro", "ro"]);
		expect(path.posix.dirname(access)).toBe(path.posix.dirname(settings));
		expect(path.posix.basename(settings)).toBe("nats.conf");
		expect(read("nats-access.conf")).toMatch(/^include "nats.conf"$/m);
		expect(nats.command).toEqual(expect.arrayContaining(["-c", access]));
		expect(compose).not.toHaveProperty("configs");
		expect(read("nats.conf")).toMatch(/^max_payload: 64MB$/m);
	});

	test("nats keeps JetStream (the change feed's stream) in a volume of its own", () => {
		const nats = compose.services.nats as Service & { command?: string[]; volumes?: string[] };
		const storeDir = nats.command![nats.command!.indexOf("--store_dir") + 1];
		const volume = nats.volumes?.find(each => each.startsWith("nats-data:"));
		expect(storeDir.startsWith(`${volume?.split(":")[1]}/`)).toBe(true);
		expect(compose.volumes).toHaveProperty("nats-data");
		expect(read("nats.conf")).toMatch(/^jetstream \{$/m);
	});

	test("compose v1.29 reads it too: no top-level name (the project name is COMPOSE_PROJECT_NAME in .env.example)", () => {
		expect(compose).not.toHaveProperty("name");
		expect(read(".env.example")).toMatch(/^COMPOSE_PROJECT_NAME=game-catalogue$/m);
	});

	test("interpolates none of the machine settings the local stack passes to its commands: its variables come from the environment file alone", () => {
		const names = ["docker-compose.yml", "deploy/local-docker/compose.sqlite.yml"].flatMap(file =>
			[...read(file).matchAll(/\$\{(\w+)/g)].map(([, name]) => name),
		);
		expect(names).toEqual(expect.arrayContaining(["NATS_API_PASSWORD", "API_PORT"]));
		expect(names.filter(name => MACHINE_SETTINGS.test(name))).toEqual([]);
	});

	test("the catalogue nodes run as the Kubernetes manifests do: read-only root, a 16 MiB /tmp, no capabilities", () => {
		for (const [, service] of nodes) {
			expect(service).toMatchObject({
				read_only: true,
				tmpfs: ["/tmp:size=16m"],
				cap_drop: ["ALL"],
				security_opt: ["no-new-privileges:true"],
			});
		}
	});

	test("the schema check is live: a broken copy is rejected", () => {
		const broken = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
		broken.services.api.ports = "3000";
		expect(validate(broken)).toBe(false);
	});

	test("each node runs the existing service it is named after, together all four", () => {
		const files = readdirSync(path.join(root, "services"))
			.filter(file => file.endsWith(".service.ts"))
			.map(file => file.replace(/\.service\.ts$/, ""));
		for (const [name, service] of nodes) {
			expect(environment(service).SERVICES).toBe(name);
			expect(files).toContain(name);
		}
		expect(nodes.map(([name]) => name).sort()).toEqual(["api", "authors", "categories", "games"]);
	});

	test("only api publishes a port, on loopback: API_PORT (3000 unless set) to 3000, where the gateway listens", () => {
		const publishing = Object.entries(compose.services).filter(([, service]) => service.ports?.length);
		expect(publishing.map(([name]) => name)).toEqual(["api"]);
		const [port, ...more] = (compose.services.api.ports ?? []) as string[];
		expect(more).toEqual([]);
		expect(portMapping(interpolate(port, {}))).toEqual({ published: "3000", target: "3000" });
		expect(interpolate(port, {})).toMatch(/^127\.0\.0\.1:/);
		expect(interpolate(port, { API_PORT: "3300" })).toBe("127.0.0.1:3300:3000");
		expect(environment(compose.services.api).PORT ?? "3000").toBe("3000");
	});

	test("authors, categories and games can be scaled: no fixed name, hostname or port", () => {
		expect(scaled.map(([name]) => name).sort()).toEqual(["authors", "categories", "games"]);
		for (const [, service] of scaled) {
			expect(service.container_name).toBeUndefined();
			// The hostname is the node ID: a fixed one would give every replica the same.
			expect(service.hostname).toBeUndefined();
			expect(service.ports ?? []).toEqual([]);
		}
	});

	test("the nodes share one image built from the Dockerfile, and restart after a failed start", () => {
		expect(new Set(nodes.map(([, service]) => service.image)).size).toBe(1);
		for (const [, service] of nodes) {
			expect(service.build).toBe(".");
			expect(service.restart).toBe("unless-stopped");
		}
	});

	test("each node has longer than its drain (REQUEST_TIMEOUT, 10 s by default) between SIGTERM and SIGKILL", () => {
		for (const [, service] of nodes) {
			const [, seconds] = /^(\d+)s$/.exec(service.stop_grace_period ?? "") ?? [];
			expect(Number(seconds)).toBeGreaterThan(readConfig({}).requestTimeoutMs / 1000);
		}
	});

	test("the repl tool joins the cluster with no services of its own, only when asked for", () => {
		const repl = compose.services.repl as Service & { profiles?: string[]; command?: string[]; stdin_open?: boolean; tty?: boolean };
		const env = environment(repl);
		// Both empty: moleculer-runner loads every service under a SERVICEDIR when SERVICES is empty.
		expect(env.SERVICES).toBe("");
		expect(env.SERVICEDIR).toBe("");
		expect(new URL(interpolate(env.TRANSPORTER, CREDENTIALS)).host).toBe("nats:4222");
		expect(repl.command).toEqual(expect.arrayContaining(["--repl"]));
		expect(repl.profiles).toEqual(["tools"]);
		expect(repl).toMatchObject({ stdin_open: true, tty: true, restart: "no" });
	});

	test("the gateway takes API_TOKEN, AUTH_*, CORS_ORIGINS, the rate limit, TRUST_PROXY and the connections per client from the environment, off or wide by default", () => {
		const signIn = ["AUTH_ISSUER", "AUTH_JWKS_URL", "AUTH_AUDIENCE", "AUTH_ROLES_CLAIM", "AUTH_WRITE_ROLE", "AUTH_READS"];
		expect(environment(compose.services.api)).toMatchObject({
			API_TOKEN: "${API_TOKEN:-}",
			...Object.fromEntries(signIn.map(name => [name, `\${${name}:-}`])),
			CORS_ORIGINS: "${CORS_ORIGINS:-}",
			RATE_LIMIT: "${RATE_LIMIT:-0}",
			RATE_LIMIT_WINDOW: "${RATE_LIMIT_WINDOW:-60}",
			TRUST_PROXY: "${TRUST_PROXY:-}",
			MAX_CONNECTIONS_PER_CLIENT: "${MAX_CONNECTIONS_PER_CLIENT:-1000}",
		});
		expect(readConfig({ TRUST_PROXY: interpolated(compose.services.api).TRUST_PROXY }).trustProxy).toBeNull();
		// Empty, as compose passes them unset: sign-in is off, and no stray AUTH_* is refused.
		expect(readConfig(Object.fromEntries(signIn.map(name => [name, interpolated(compose.services.api)[name]]))).signIn).toBeNull();
		for (const [name, service] of nodes) if (name !== "api") expect(environment(service).API_TOKEN).toBeUndefined();
	});

	test("every credential comes from the environment, and compose refuses to start without it", () => {
		const text = read("docker-compose.yml");
		for (const name of Object.keys(CREDENTIALS)) expect(text).toMatch(new RegExp(`\\$\\{${name}:\\?[^}]+\\}`));
		expect(text).not.toMatch(/\$\{(NATS_\w+|REDIS_PASSWORD|MONGO_\w+)(:-[^}]*)?\}/);
		expect(() => interpolate(environment(compose.services.api).TRANSPORTER, { ...CREDENTIALS, NATS_API_PASSWORD: "" })).toThrow(
			/set NATS_API_PASSWORD/,
		);
	});

	test("nats has a password per kind of node and redis asks every client for one; each node logs in to NATS as its kind (NATS_ACCESS=on), to the rest as the catalogue's user", () => {
		const command = (name: string) =>
			(compose.services[name] as { command?: string[] }).command!.map(part => interpolate(part, CREDENTIALS));
		expect(interpolated(compose.services.nats)).toEqual(NATS_PASSWORDS);
		expect(command("redis").join(" ")).toContain(`--requirepass ${CREDENTIALS.REDIS_PASSWORD}`);
		expect(interpolated(compose.services.redis).REDISCLI_AUTH).toBe(CREDENTIALS.REDIS_PASSWORD);
		expect(interpolated(compose.services.mongo)).toMatchObject({
			MONGO_INITDB_ROOT_USERNAME: "root",
			MONGO_INITDB_ROOT_PASSWORD: CREDENTIALS.MONGO_ROOT_PASSWORD,
			MONGO_APP_USER: "catalogue",
			MONGO_APP_PASSWORD: CREDENTIALS.MONGO_APP_PASSWORD,
		});
		for (const [name, service] of [...nodes, ["repl", compose.services.repl] as const]) {
			const env = interpolated(service);
			const kind = name as NodeKind;
			expect(env.TRANSPORTER).toBe(`nats://${kind}:${NATS_PASSWORDS[passwordVariable(kind)]}@nats:4222`);
			expect(readConfig({ NATS_ACCESS: env.NATS_ACCESS }).natsAccess).toBe(true);
			expect(env.REDIS_URL).toBe(`redis://:${CREDENTIALS.REDIS_PASSWORD}@redis:6379`);
		}
	});

	test("only the data services hold the MongoDB user's password: the gateway and the REPL keep no records", () => {
		const holders = Object.entries(compose.services)
			.filter(([, service]) => "MONGO_URI" in environment(service))
			.map(([name]) => name);
		expect(holders.sort()).toEqual(["authors", "categories", "games"]);
		for (const name of holders) {
			const env = interpolated(compose.services[name]);
			expect(env.MONGO_URI).toBe(`mongodb://catalogue:${CREDENTIALS.MONGO_APP_PASSWORD}@mongo:27017/catalogue?authSource=catalogue`);
			expect(readConfig({ MONGO_URI: env.MONGO_URI, TRANSPORTER: env.TRANSPORTER }).mongoUri).toBe(env.MONGO_URI);
		}
	});

	test("mongo's first start makes the catalogue's user, readWrite on its database only", () => {
		const mongo = compose.services.mongo as { volumes?: string[] };
		expect(mongo.volumes).toContain("./deploy/mongo-init.sh:/docker-entrypoint-initdb.d/catalogue-user.sh:ro");
		const script = read("deploy/mongo-init.sh");
		expect(script).toContain(
			'db.createUser({ user: "$MONGO_APP_USER", pwd: "$MONGO_APP_PASSWORD", roles: [{ role: "readWrite", db: "$MONGO_INITDB_DATABASE" }] })',
		);
		expect(script).not.toMatch(/role: "(root|dbOwner|readWriteAnyDatabase|userAdmin\w*)"/);
	});

	test("mongo is a replica set of one (the change feed's transactions need one): a key file made once, the set initiated by the health check", () => {
		const mongo = compose.services.mongo as { entrypoint: string[]; healthcheck: { test: string[] } };
		const [shell, flag, script] = mongo.entrypoint;
		expect([shell, flag]).toEqual(["bash", "-c"]);
		expect(script).toContain('exec docker-entrypoint.sh mongod --replSet rs0 --keyFile "$$key" --bind_ip_all');
		// The script as the container runs it (compose's $$ is $), on a folder of the test's own, with the image's commands stood in.
		const folder = mkdtempSync(path.join(tmpdir(), "mongo-entrypoint-"));
		const bin = path.join(folder, "bin");
		mkdirSync(bin);
		writeFileSync(path.join(bin, "chown"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
		writeFileSync(path.join(bin, "docker-entrypoint.sh"), '#!/bin/sh\necho "$@"\n', { mode: 0o755 });
		const run = () =>
			execFileSync(shell, [flag, script.replaceAll("$$", "$").replaceAll("/data/db", folder)], {
				env: { PATH: `${bin}:${process.env.PATH}` },
			}).toString();
		try {
			expect(run()).toBe(`mongod --replSet rs0 --keyFile ${folder}/replica-set.key --bind_ip_all\n`);
			const key = readFileSync(path.join(folder, "replica-set.key"), "utf8");
			// What mongod takes: 6 to 1,024 base64 characters, readable by its owner only.
			expect(key).toMatch(/^[A-Za-z0-9+/=]{6,1024}$/);
			expect(statSync(path.join(folder, "replica-set.key")).mode & 0o777).toBe(0o400);
			run();
			expect(readFileSync(path.join(folder, "replica-set.key"), "utf8")).toBe(key);
		} finally {
			rmSync(folder, { recursive: true, force: true });
		}
		const check = mongo.healthcheck.test.join(" ");
		expect(check).toContain("rs.initiate({ _id: 'rs0', members: [{ _id: 0, host: 'mongo:27017' }] })");
		expect(check).toContain("--authenticationDatabase admin");
		// The local stack's placeholder (no MongoDB image here) must not inherit that entrypoint: its image has no mongod.
		const local = parse(read("deploy/local-docker/compose.sqlite.yml")) as { services: Record<string, { entrypoint?: string[] }> };
		expect(local.services.mongo.entrypoint?.join(" ")).toMatch(/^sh -c .*PLACEHOLDER, NOT MongoDB.*exec sleep infinity'?$/);
	});

	test("nats, mongo and redis have health checks; the nodes keep the image's", () => {
		for (const name of ["nats", "mongo", "redis"]) expect(compose.services[name].healthcheck?.test).toBeDefined();
		for (const [, service] of nodes) {
			expect(service.healthcheck?.disable).not.toBe(true);
			expect(service.healthcheck?.test).not.toEqual(["NONE"]);
		}
	});

	test("the nodes reach nats and redis (their shared cache) by service name once all are healthy", () => {
		for (const [, service] of nodes) {
			const env = interpolated(service);
			expect(new URL(env.TRANSPORTER).host).toBe("nats:4222");
			expect(new URL(env.REDIS_URL).host).toBe("redis:6379");
			expect(readConfig({ REDIS_URL: env.REDIS_URL }).redisUrl).toBe(env.REDIS_URL);
			expect(service.depends_on).toEqual({
				mongo: { condition: "service_healthy" },
				nats: { condition: "service_healthy" },
				redis: { condition: "service_healthy" },
			});
		}
		for (const service of Object.values(compose.services)) {
			for (const dependency of Object.values(service.depends_on ?? {})) {
				expect(dependency).toEqual({ condition: "service_healthy" });
			}
		}
	});
});

describe("Dockerfile", () => {
	const stages = dockerfileStages(read("Dockerfile"));
	const final = stages.at(-1) ?? [];
	const args = (keyword: string) => final.filter(([k]) => k === keyword).map(([, rest]) => rest);

	test("builds in one stage and runs from another", () => {
		expect(stages.length).toBeGreaterThanOrEqual(2);
	});

	test("runs on an LTS Node, 22 or newer", () => {
		const major = Number(/^node:(\d+)\b/.exec(args("FROM")[0])?.[1]);
		expect(major).toBeGreaterThanOrEqual(22);
		expect(major % 2).toBe(0);
	});

	test("installs production dependencies only in the final stage", () => {
		expect(args("RUN").some(run => /npm install\b.*--omit=dev/.test(run))).toBe(true);
	});

	test("runs as a non-root user", () => {
		expect(args("USER").at(-1)).toMatch(/^(?!root\b|0\b)\S+/);
	});

	test("checks health with GET /health/ready on HEALTH_PORT, which it sets", () => {
		expect(args("HEALTHCHECK").at(-1)).toMatch(/HEALTH_PORT\}\/health\/ready/);
		expect(args("ENV").join(" ")).toMatch(/\bHEALTH_PORT=\d+/);
	});

	test("logs JSON (production) and serves Prometheus metrics on METRICS_PORT, which it exposes", () => {
		const env = args("ENV").join(" ");
		expect(env).toMatch(/\bNODE_ENV=production\b/);
		const port = /\bMETRICS_PORT=(\d+)/.exec(env)?.[1];
		expect(port).toBeDefined();
		expect(args("EXPOSE").join(" ").split(/\s+/)).toContain(port);
	});

	test("starts moleculer-runner with the built config", () => {
		expect(args("CMD").at(-1)).toMatch(/moleculer-runner\.js.*dist\/moleculer\.config\.js/);
		expect(args("ENV").join(" ")).toMatch(/\bSERVICEDIR=\S*dist\/services\b/);
	});
});

describe(".dockerignore", () => {
	test("keeps the host's node_modules, dist and data out of the build", () => {
		const ignored = read(".dockerignore")
			.split("\n")
			.map(line => line.trim());
		expect(ignored).toEqual(expect.arrayContaining(["node_modules", "dist", "data"]));
	});
});
