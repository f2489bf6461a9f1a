import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startCluster, type Cluster } from "../support/cluster";
import { dockerfileStages } from "../support/dockerfile";
import { freePort, root, startNode, waitFor, type Node } from "../support/process";

// The health check compose runs for every catalogue service is the Dockerfile's HEALTHCHECK: run
// here as it is written, against a node started as the image starts one (HEALTH_PORT set).

/** The HEALTHCHECK command of the Dockerfile's final stage, an exec-form JSON array. */
function healthCheckCommand(): string[] {
	const final = dockerfileStages(readFileSync(path.join(root, "Dockerfile"), "utf8")).at(-1) ?? [];
	const healthCheck = final.filter(([keyword]) => keyword === "HEALTHCHECK").at(-1)?.[1] ?? "";
	const command = /\bCMD\s+(\[.*\])\s*$/.exec(healthCheck)?.[1];
	if (!command) throw new Error("the Dockerfile has no exec-form HEALTHCHECK CMD");
	return JSON.parse(command) as string[];
}

const [program, ...healthCheckArgs] = healthCheckCommand();

/** Whether the health check passes (exit 0) against the node whose probe listens on `port`. */
function healthy(port: number): Promise<boolean> {
	return new Promise(resolve => {
		execFile(process.execPath, healthCheckArgs, { env: { HEALTH_PORT: String(port) }, timeout: 5000 }, error =>
			resolve(error === null),
		);
	});
}

let cluster: Cluster;
let games: Node;
let port: number;

beforeAll(async () => {
	cluster = await startCluster();
	port = await freePort();
	// A second games node, checked as compose checks it.
	games = startNode({ ...cluster.env("games"), HEALTH_PORT: String(port) });
}, 60_000);

afterAll(async () => {
	await games?.kill();
	await cluster?.stop();
});

describe("the Dockerfile's health check, as compose runs it", () => {
	test("is a node command, run here with the tests' own node", () => {
		expect(program).toBe("node");
	});

	test("passes once the node has started and reaches authors and categories", async () => {
		await waitFor("the games node is healthy", () => healthy(port), [games]);
	});

	test("fails while the authors node is gone, passes again once it is back", async () => {
		await cluster.nodes.get("authors")!.stop();
		await waitFor("the games node is unhealthy without authors", async () => !(await healthy(port)), [games]);
		const answer = await fetch(`http://127.0.0.1:${port}/health/ready`);
		expect({ status: answer.status, body: await answer.json() }).toEqual({
			status: 503,
			body: {
				status: "not ready",
				msg: "The service is temporarily unavailable",
				waitingFor: ["authors"],
				nodeID: expect.any(String),
			},
		});

		cluster.start("authors");
		await waitFor("the games node is healthy again", () => healthy(port), [games, cluster.nodes.get("authors")!], 30_000);
	}, 60_000);
});
