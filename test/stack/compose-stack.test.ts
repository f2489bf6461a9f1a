import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { texts } from "../../lib/catalogue/errors";
import { Api } from "../support/catalogue";
import { Load, show, type Outcome } from "../support/load";
import { runsWith } from "../support/not-run";
import { freePort, root, waitFor } from "../support/process";
import { rawRequest } from "../support/raw-http";
import { DEPENDENCIES, NODES, Stack, stackEnvironment, writeEnvironment } from "../support/stack";

// docker-compose.yml run for real (deploy/local-docker/README.md): this machine's own dockerd, the
// stand-in images, the image built from the Dockerfile, and the one test override (a SQLite database on a
// volume per service, as MongoDB cannot run here). The tests run in order on one stack: the last
// two kill the games container and stop the gateway.

/** The first run on a machine makes the stand-ins and builds every layer of the image. */
const UP_MS = 20 * 60_000;
/** A node's health check runs every 10 s after a 30 s start period (the Dockerfile). */
const HEALTHY_MS = 120_000;

const canRun = process.getuid?.() === 0 && process.platform === "linux";

describe("the compose stack on this machine's own Docker engine", () => {
	if (
		!runsWith(canRun, {
			notRun: "compose stack suite NOT RUN: it needs root on Linux (it installs Debian's docker.io and starts dockerd)",
			hint: "Run it as root on a Debian machine: npm run test:stack (deploy/local-docker/README.md).",
			name: "runs docker-compose.yml on this machine's own engine",
		})
	)
		return;

	const dir = mkdtempSync(path.join(tmpdir(), "catalogue-stack-"));
	const envFile = path.join(dir, "stack.env");
	const stack = new Stack(envFile);
	let env: Record<string, string>;
	let api: Api;
	const created = { categories: 0, authors: 0, games: 0 };

	beforeAll(async () => {
		env = stackEnvironment(await freePort());
		writeEnvironment(envFile, env);
		api = new Api(`http://127.0.0.1:${env.API_PORT}`);
		const output = await stack.up(UP_MS);
		// What the run built and replaced, for the test log: the stand-ins say so themselves.
		console.log(
			output
				.split("\n")
				.filter(line => /^(engine|stand-ins|stack):/.test(line))
				.join("\n"),
		);
		await stack.healthy([...NODES, ...DEPENDENCIES], HEALTHY_MS);
	}, UP_MS + HEALTHY_MS);

	afterAll(async () => {
		const { code, output } = await stack.down();
		rmSync(dir, { recursive: true, force: true });
		if (code !== 0) throw new Error(`stack.sh down exited with ${code}:\n${output}`);
		// Nothing that would keep the engine's folder from being removed (test/README.md, "CI").
		expect(await stack.mountsLeft()).toEqual([]);
	}, 120_000);

	test("every catalogue container is healthy by the Dockerfile's HEALTHCHECK, started only once nats, redis and mongo were healthy", async () => {
		const project = env.COMPOSE_PROJECT_NAME;
		const running = new Set(await Promise.all([...NODES, ...DEPENDENCIES].map(service => stack.container(service))));
		for (const node of NODES) {
			const container = await stack.inspect(node);
			expect({ node, health: container.State.Health.Status }).toEqual({ node, health: "healthy" });
			expect(container.Config.Healthcheck.Test.join(" ")).toContain("/health/ready");
			expect(container.Config.Labels["com.docker.compose.project"]).toBe(project);
		}
		// The engine's own record of the start, watched from before `up -d`: when each container started and each check passed.
		const events = stack
			.events()
			.filter(event => event.Actor.Attributes["com.docker.compose.project"] === project)
			// The containers of this run: the watch starts in the second `prepare` removed a killed run's leftovers in.
			.filter(event => running.has(event.Actor.ID));
		const first = (service: string, action: string) =>
			Math.min(
				...events
					.filter(e => e.Action === action && e.Actor.Attributes["com.docker.compose.service"] === service)
					.map(e => e.timeNano),
			);
		for (const node of NODES) {
			for (const dependency of DEPENDENCIES) {
				const healthy = first(dependency, "health_status: healthy");
				expect({ node, dependency, healthyFirst: healthy < first(node, "start") }).toEqual({
					node,
					dependency,
					healthyFirst: true,
				});
			}
		}
	}, 60_000);

	test("every catalogue container runs as the Kubernetes manifests demand: non-root, read-only root, a 16 MiB /tmp, no capabilities", async () => {
		const sizeLimit = /sizeLimit: (\d+)Mi/.exec(readFileSync(path.join(root, "deploy/kubernetes/base/node.yaml"), "utf8"))![1];
		for (const node of NODES) {
			const id = await stack.container(node);
			const { HostConfig } = await stack.inspect(node);
			expect({ node, root: HostConfig.ReadonlyRootfs, drop: HostConfig.CapDrop }).toEqual({ node, root: true, drop: ["ALL"] });
			expect(HostConfig.SecurityOpt).toContain("no-new-privileges:true");
			// Inside: the process's own user, capabilities and file system, as the kernel reports them.
			const status = await stack.docker("exec", id, "cat", "/proc/1/status");
			expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe("1000");
			expect(/^CapEff:\s+(\w+)/m.exec(status)?.[1]).toBe("0000000000000000");
			expect(/^NoNewPrivs:\s+(\d)/m.exec(status)?.[1]).toBe("1");
			const written = await stack.run("docker", ["exec", id, "touch", "/app/written"]);
			expect(written).toMatchObject({ code: 1, output: expect.stringMatching(/Read-only file system/) });
			await stack.docker("exec", id, "touch", "/tmp/written");
			const tmp = await stack.docker("exec", id, "df", "-k", "--output=size,fstype", "/tmp");
			expect(tmp.trim().split(/\s+/).slice(-2)).toEqual([String(Number(sizeLimit) * 1024), "tmpfs"]);
		}
	}, 60_000);

	test("through the published port: create, list, page, the referential refusals, ETag and 304, gzip", async () => {
		const category = await api.category("Stack");
		const author = await api.author("Uwe Rosenberg", "German");
		created.categories++;
		created.authors++;
		// Enough games for a list over 1 KB, which the gateway compresses.
		const titles = Array.from({ length: 12 }, (_, n) => `Stack game ${String(n).padStart(2, "0")}`);
		for (const title of titles) {
			await api.game(title, category, author);
			created.games++;
		}
		const listed = await api.get("/game");
		expect(listed.status).toBe(200);
		expect(listed.body.map((game: { title: string }) => game.title).sort()).toEqual(titles);
		expect(listed.body[0].category).toEqual({ id: category.id, name: "Stack" });

		const page = await api.post("/game", { pageable: { pageNumber: 2, pageSize: 5 } });
		expect(page.status).toBe(200);
		expect(page.body).toMatchObject({ pageable: { pageNumber: 2, pageSize: 5 }, totalElements: 12 });
		expect(page.body.content).toHaveLength(2);

		const missing = await api.put("/game", { title: "Orphan", age: 8, category: { id: "nope" }, author: { id: author.id } });
		expect(missing).toMatchObject({ status: 400, body: { msg: texts.categoryNotFound } });
		expect(await api.delete(`/category/${category.id}`)).toMatchObject({ status: 400, body: { msg: texts.categoryHasGames } });
		expect(await api.delete(`/author/${author.id}`)).toMatchObject({ status: 400, body: { msg: texts.authorHasGames } });

		const url = `${api.url}/game`;
		const plain = await rawRequest(url);
		const tag = plain.headers.etag!;
		expect(tag).toMatch(/^W?\/?"/);
		const again = await rawRequest(url, "GET", { "If-None-Match": tag });
		expect({ status: again.status, body: again.body.length }).toEqual({ status: 304, body: 0 });
		const zipped = await rawRequest(url, "GET", { "Accept-Encoding": "gzip" });
		expect(zipped.headers["content-encoding"]).toBe("gzip");
		expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
	}, 60_000);

	test("nats and redis inside the network refuse a client without the credentials of the environment file, and take one with them", async () => {
		// From the api container, on compose's network, with the packages the catalogue itself uses.
		const script = `
			const { connect } = require("nats");
			const Redis = require("ioredis");
			const tryNats = options => connect({ servers: "nats:4222", reconnect: false, ...options }).then(c => c.close().then(() => "connected"), e => e.code);
			const tryRedis = url => { const r = new Redis(url, { lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
				return r.connect().then(() => r.ping()).then(a => a, e => e.message.split(" ")[0]).finally(() => r.disconnect()); };
			const nats = new URL(process.env.TRANSPORTER);
			(async () => console.log(JSON.stringify({
				natsWithout: await tryNats({}),
				natsWrongPassword: await tryNats({ user: nats.username, pass: "wrong" }),
				natsWith: await tryNats({ user: nats.username, pass: nats.password }),
				redisWithout: await tryRedis("redis://redis:6379"),
				redisWith: await tryRedis(process.env.REDIS_URL),
			})))();`;
		const output = await stack.compose("exec", "-T", "api", "node", "-e", script);
		expect(JSON.parse(output.trim().split("\n").at(-1)!)).toEqual({
			natsWithout: "AUTHORIZATION_VIOLATION",
			natsWrongPassword: "AUTHORIZATION_VIOLATION",
			natsWith: "connected",
			redisWithout: "NOAUTH",
			redisWith: "PONG",
		});
		// The environment file's passwords are what .env.example's recipe makes: letters, which nats-server reads as text.
		expect(env.NATS_API_PASSWORD).toMatch(/^[a-p]{48}$/);
	}, 60_000);

	test("the REPL: `docker-compose run` of the repl service, driven through its standard input, answers counts", async () => {
		const repl = stack.spawnCompose("run", "--rm", "-T", "repl");
		let output = "";
		repl.stdout!.on("data", chunk => (output += chunk));
		repl.stderr!.on("data", chunk => (output += chunk));
		const exited = new Promise<number | null>(resolve => repl.on("exit", resolve));
		const shown = async (pattern: RegExp, from: number) => {
			const deadline = Date.now() + 60_000;
			while (!pattern.test(output.slice(from))) {
				if (Date.now() > deadline || repl.exitCode !== null) throw new Error(`no ${pattern} in the REPL's output:\n${output}`);
				await new Promise(resolve => setTimeout(resolve, 200));
			}
			return output.slice(from);
		};
		try {
			await shown(/catalogue \$/, 0);
			const from = output.length;
			repl.stdin!.write("counts\n");
			const counts = await shown(/games\s+\d+[\s\S]*catalogue \$/, from);
			expect(counts).toMatch(new RegExp(`authors\\s+${created.authors}\\b`));
			expect(counts).toMatch(new RegExp(`categories\\s+${created.categories}\\b`));
			expect(counts).toMatch(new RegExp(`games\\s+${created.games}\\b`));
			repl.stdin!.write("quit\n");
			expect(await exited).toBe(0);
		} finally {
			repl.kill();
		}
	}, 120_000);

	// Docker treats `docker kill` as an operator's stop: it marks the container stopped by hand and
	// its restart policy does not apply (moby's daemon/kill.go). A crash, or the kernel's OOM killer,
	// is SIGKILL to the process itself: then the restart policy brings the node back.
	test("kill -9 of the games container under acknowledged writes: `docker kill -s KILL` leaves it stopped until started, SIGKILL to its process is restarted by its restart policy; no acknowledged write is lost", async () => {
		const listed = new Set(((await api.get("/game")).body as { title: string }[]).map(game => game.title));
		const load = new Load(api.url, await someCategoryAndAuthor(api), 4, 20, ["game"]);
		const before = await stack.inspect("games");
		const writesSucceedAgain = async () => {
			const back = Date.now();
			await waitFor("writes succeed again", async () => load.since(back).some(o => o.status === 200), [], 30_000);
		};
		let killedByHand: any;
		try {
			await waitFor("writes succeed", async () => load.succeeded("game") >= 20, [], 30_000);
			await stack.docker("kill", "-s", "KILL", before.Id);
			await new Promise(resolve => setTimeout(resolve, 5000));
			killedByHand = await stack.inspect("games");
			await stack.compose("start", "games");
			await stack.healthy(["games"], HEALTHY_MS);
			await writesSucceedAgain();

			const crashed = await stack.inspect("games");
			await stack.must("kill", ["-KILL", String(crashed.State.Pid)]);
			await waitFor(
				"the engine restarts games",
				async () => (await stack.inspect("games")).RestartCount > crashed.RestartCount,
				[],
				30_000,
			);
			await stack.healthy(["games"], HEALTHY_MS);
			await writesSucceedAgain();
		} finally {
			await load.stop();
		}
		expect(killedByHand.State).toMatchObject({ Status: "exited", ExitCode: 137 });
		expect(killedByHand.RestartCount).toBe(before.RestartCount);
		const after = await stack.inspect("games");
		expect(after.Id).toBe(before.Id);
		expect(after.RestartCount).toBe(before.RestartCount + 1);

		const titles = ((await api.get("/game")).body as { title: string }[]).map(game => game.title);
		const stored = new Set(titles);
		expect(titles.length).toBe(stored.size);
		expect(load.outcomes.filter(o => o.status === 200 && !stored.has(o.name)).map(show)).toEqual([]);
		// A write the kill cut off may have been stored before its answer was lost: the client saw an
		// error or a 5xx and must read back to know. Nothing is stored that the load did not send, and
		// nothing refused (a 4xx) is stored.
		const sent = new Map(load.outcomes.map(o => [o.name, o]));
		const added = [...stored].filter(title => !listed.has(title));
		expect(added.filter(title => !sent.has(title))).toEqual([]);
		const storedUnanswered = added.map(title => sent.get(title)!).filter(o => o.status !== 200);
		expect(storedUnanswered.filter(o => o.status !== undefined && o.status < 500).map(show)).toEqual([]);
	}, 300_000);

	test("docker-compose stop api while requests are in flight: each is answered or refused before the gateway read it", async () => {
		const refs = await someCategoryAndAuthor(api);
		const address = Object.values((await stack.inspect("api")).NetworkSettings.Networks as Record<string, { IPAddress: string }>)[0]
			.IPAddress;
		// Through the published port (docker's port proxy in between), and to the container itself.
		const loads = [
			new Load(api.url, refs, 6, 0, ["author", "game"], "port "),
			new Load(`http://${address}:3000`, refs, 6, 0, ["author", "game"], "direct "),
		];
		let outcomes: Outcome[][];
		let stopping = 0;
		try {
			await waitFor(
				"writes succeed, several in flight",
				async () => loads.every(load => load.succeeded("game") >= 10 && load.inFlight >= 2),
				[],
				30_000,
			);
			stopping = Date.now();
			await stack.compose("stop", "api");
			const stopped = Date.now();
			await waitFor(
				"every writer has tried the stopped gateway",
				async () => (await Promise.all(loads.map(load => load.eachWriterFinished(stopped, 1)()))).every(Boolean),
				[],
				30_000,
			);
		} finally {
			outcomes = await Promise.all(loads.map(load => load.stop()));
		}
		const state = (await stack.inspect("api")).State;
		expect({ status: state.Status, exitCode: state.ExitCode }).toEqual({ status: "exited", exitCode: 0 });
		await stack.compose("start", "api");
		await stack.healthy(["api"], HEALTHY_MS);
		const stored = new Set<string>();
		for (const listPath of ["/author", "/game"])
			for (const { name, title } of (await api.get(listPath)).body as { name?: string; title?: string }[])
				stored.add((name ?? title)!);

		const all = outcomes.flat();
		expect(all.filter(o => o.started < stopping && o.ended > stopping && o.status === 200).length).toBeGreaterThan(0);
		expect(all.filter(o => o.status === 200 && !stored.has(o.name)).map(show)).toEqual([]);
		// Refused before it was read: its connection never opened (the port closed, or the container's
		// address gone once it exited); or reset with nothing done: the kernel resets connections still
		// queued when the gateway stops listening, and docker's port proxy, which accepts for the
		// container, closes its connection when the gateway no longer takes it. A 503: the cluster refused it.
		const refused = (o: Outcome) =>
			(o.error !== undefined && !o.connected) ||
			(o.error === "ECONNRESET" && !stored.has(o.name)) ||
			(o.status === 503 && o.body?.msg === texts.unavailable);
		expect(all.filter(o => o.status !== 200 && !refused(o)).map(show)).toEqual([]);
	}, 240_000);
});

async function someCategoryAndAuthor(api: Api) {
	return { category: (await api.get("/category")).body[0], author: (await api.get("/author")).body[0] };
}
