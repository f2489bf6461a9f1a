import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { DATA_SERVICE_NAMES, SERVICE_NAMES } from "../../lib/catalogue/services";
import { helmAuthorization, NODE_KINDS, passwordVariable } from "../../lib/config/broker-access";
import { readConfig } from "../../lib/config/config";
import { HTTP_REQUEST_TIME, HTTP_REQUESTS } from "../../lib/http/access-log";
import { NATS_RECONNECTS } from "../../middlewares/nats-reconnects.middleware";
import brokerOptions from "../../moleculer.config";
import { aliases } from "../../services/api.routes";
import { METRIC } from "moleculer";
import { dockerfileStages } from "../support/dockerfile";
import { runsWith } from "../support/not-run";

// deploy/kubernetes (docs/kubernetes.md), rendered with kubectl's kustomize as an operator would,
// every object checked against the Kubernetes API's schemas, and what a reviewer checks by hand.
// Nothing here applies it to a cluster. kubectl 1.32 is at /usr/bin/kubectl on these machines
// (Debian's kubernetes-client is too old for kustomize 5); without it this suite cannot run: it
// says so, and fails under CI=true.
const KUBECTL = process.env.KUBECTL_PATH ?? "/usr/bin/kubectl";
const NOT_RUN = `Kubernetes manifests test NOT RUN: no kubectl at ${KUBECTL}`;

const root = path.resolve(__dirname, "../..");
const deploy = path.join(root, "deploy/kubernetes");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

interface KubernetesObject {
	apiVersion: string;
	kind: string;
	metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
	spec?: any;
	data?: Record<string, string>;
	stringData?: Record<string, string>;
}

function render(folder: string): KubernetesObject[] {
	const text = execFileSync(KUBECTL, ["kustomize", path.join(deploy, folder)], { encoding: "utf8" });
	return parseAllDocuments(text).map(document => document.toJSON() as KubernetesObject);
}

/** The schema problem of each object, or null (test/support/kubernetes-schemas.mts, run with Node: ES modules only). */
function schemaProblems(objects: object[]): (string | null)[] {
	const script = path.join(root, "test/support/kubernetes-schemas.mts");
	return JSON.parse(execFileSync(process.execPath, [script], { input: JSON.stringify(objects), encoding: "utf8" }));
}

const ofKind = (objects: KubernetesObject[], kind: string) => objects.filter(object => object.kind === kind);

interface Selector {
	matchLabels?: Record<string, string>;
	matchExpressions?: { key: string; operator: "In" | "NotIn"; values: string[] }[];
}

/** Whether `selector` (matchLabels, and matchExpressions with In or NotIn, as these manifests write them; `{}` selects all) selects `labels`. */
const selects = (selector: Selector, labels: Record<string, string>) =>
	Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value) &&
	(selector.matchExpressions ?? []).every(({ key, operator, values }) => values.includes(labels[key]) === (operator === "In"));

const image = dockerfileStages(read("Dockerfile")).at(-1)!;
const imageEnv = Object.fromEntries(
	image
		.filter(([keyword]) => keyword === "ENV")
		.flatMap(([, args]) => [...args.matchAll(/(\w+)=(\S+)/g)].map(([, key, value]) => [key, value])),
);

describe("deploy/kubernetes", () => {
	const hint = "Install kubectl (with kustomize 5), or set KUBECTL_PATH.";
	if (!runsWith(existsSync(KUBECTL), { notRun: NOT_RUN, hint, name: "renders with kubectl" })) return;

	const layouts = { base: render("base"), production: render("overlays/production") };
	const engines = render("engines");
	const monitoring = render("monitoring");

	test("every rendered object validates against the Kubernetes API's schemas (kubernetes-models 5.1.0)", () => {
		// MongoDBCommunity is the MongoDB operator's kind: no schema of it is packaged on npm.
		const objects = [...layouts.base, ...layouts.production, ...engines, ...monitoring].filter(
			object => object.kind !== "MongoDBCommunity",
		);
		const problems = schemaProblems(objects);
		expect(
			objects.map((object, index) => [object.kind, object.metadata.name, problems[index]]).filter(([, , problem]) => problem),
		).toEqual([]);
		expect(objects.length).toBeGreaterThan(30);
	});

	test("the schema check is live: a broken copy is rejected", () => {
		const broken = structuredClone(ofKind(layouts.base, "Deployment")[0]);
		broken.spec.template.spec.containers[0].ports[0].containerPort = "health";
		expect(schemaProblems([broken])[0]).toMatch(/containerPort must be integer/);
	});

	describe.each(Object.entries(layouts))("the %s layout", (_name, objects) => {
		const deployments = ofKind(objects, "Deployment");
		const pods = deployments.map(deployment => ({
			name: deployment.metadata.name,
			spec: deployment.spec.template.spec,
			labels: deployment.spec.template.metadata.labels,
		}));
		const containers = pods.map(({ name, spec }) => ({ name, spec, container: spec.containers[0] }));
		const env = (container: any) => Object.fromEntries(container.env.map((variable: any) => [variable.name, variable]));
		const settings = ofKind(objects, "ConfigMap").find(map => map.metadata.name.startsWith("catalogue-settings-"))!;

		test("every catalogue service has exactly one Deployment, with SERVICES set to it alone", () => {
			const services = containers.map(({ container }) => env(container).SERVICES?.value);
			expect([...services].sort()).toEqual([...SERVICE_NAMES].sort());
			for (const { name, container } of containers) expect(env(container).SERVICES.value).toBe(name);
			expect(pods.every(({ spec }) => spec.containers.length === 1)).toBe(true);
		});

		test("the probes ask for the paths and the port the image serves (HEALTH_PORT of the Dockerfile)", () => {
			for (const { container } of containers) {
				const port = (name: string) => container.ports.find((candidate: any) => candidate.name === name)?.containerPort;
				expect(container.livenessProbe.httpGet).toEqual({ path: "/health/live", port: "health" });
				expect(container.readinessProbe.httpGet).toEqual({ path: "/health/ready", port: "health" });
				expect(String(port("health"))).toBe(imageEnv.HEALTH_PORT);
				expect(String(port("metrics"))).toBe(imageEnv.METRICS_PORT);
			}
		});

		test("every pod is scraped on the image's METRICS_PORT", () => {
			for (const deployment of deployments)
				expect(deployment.spec.template.metadata.annotations).toMatchObject({
					"prometheus.io/scrape": "true",
					"prometheus.io/port": imageEnv.METRICS_PORT,
					"prometheus.io/path": "/metrics",
				});
		});

		test("the grace period exceeds the preStop pause and the node's drain (stopDelay, then REQUEST_TIMEOUT of the settings)", () => {
			const drainMs = readConfig(settings.data).requestTimeoutMs + (brokerOptions.registry?.stopDelay ?? 0);
			for (const { spec, container } of containers) {
				const pauseMs = (container.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000;
				expect(spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(pauseMs + drainMs);
			}
		});

		test("the change stream is kept by as many NATS servers as the chart runs, so the feed outlives one server's loss", () => {
			const values = parse(read("deploy/kubernetes/charts/nats-values.yaml")) as { config: { cluster: { replicas: number } } };
			expect(values.config.cluster.replicas).toBe(3);
			expect(readConfig(settings.data).feedReplicas).toBe(values.config.cluster.replicas);
		});

		test("the gateway knows a client by the address the Ingress controller forwarded: one hop of X-Forwarded-For (TRUST_PROXY=1)", () => {
			expect(readConfig(settings.data).trustProxy).toEqual({ hops: 1 });
		});

		test("the Ingress controller bounds each client's connections as the gateway would: the gateway, trusting it, bounds none", () => {
			const [ingress] = ofKind(objects, "Ingress");
			expect(ingress.spec.ingressClassName).toBe("nginx");
			const bound = ingress.metadata.annotations?.["nginx.ingress.kubernetes.io/limit-connections"];
			expect(Number(bound)).toBe(readConfig({}).connections.perClient);
			expect(readConfig(settings.data).trustProxy).toEqual({ hops: 1 });
		});

		test("the gateway pauses before it stops, so the Service stops sending it connections first", () => {
			expect(containers.find(({ name }) => name === "api")!.container.lifecycle.preStop.sleep.seconds).toBeGreaterThan(0);
		});

		test("a restricted security context: non-root, read-only root, no escalation, no capabilities, RuntimeDefault seccomp", () => {
			for (const { spec, container } of containers) {
				expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
				expect(container.securityContext).toEqual({
					allowPrivilegeEscalation: false,
					readOnlyRootFilesystem: true,
					capabilities: { drop: ["ALL"] },
				});
				// MongoDB stores the records: no SQLite data volume, only a scratch /tmp.
				expect(container.volumeMounts.map((mount: any) => mount.mountPath)).toEqual(["/tmp"]);
			}
			expect(ofKind(objects, "Namespace")[0].metadata.labels).toMatchObject({ "pod-security.kubernetes.io/enforce": "restricted" });
		});

		test("no Secret is in the manifests, and every credential is a reference to one; only the data services get MongoDB's", () => {
			expect(ofKind(objects, "Secret")).toEqual([]);
			const credentials = ["NATS_PASSWORD", "REDIS_PASSWORD"];
			for (const { name, container } of containers) {
				for (const variable of [...credentials, ...(name === "api" ? ["API_TOKEN"] : ["MONGO_URI"])])
					expect(env(container)[variable]).toEqual({ name: variable, valueFrom: { secretKeyRef: expect.any(Object) } });
			}
			// The gateway keeps no records: a taken gateway pod holds no database password.
			const holders = containers.filter(({ container }) => env(container).MONGO_URI).map(({ name }) => name);
			expect(holders.sort()).toEqual([...DATA_SERVICE_NAMES].sort());
			expect(Object.keys(settings.data ?? {}).filter(key => /PASS|TOKEN|URI|URL|SECRET/.test(key))).toEqual([]);
		});

		test("each node logs in to NATS as its own kind, with its own password, under the access rules (NATS_ACCESS=on)", () => {
			expect(settings.data?.NATS_ACCESS).toBe("on");
			for (const { name, container } of containers) {
				expect(env(container).NATS_USER).toEqual({ name: "NATS_USER", value: name });
				expect(env(container).NATS_PASSWORD.valueFrom.secretKeyRef).toEqual({ name: "catalogue-nats", key: name });
				expect(env(container).TRANSPORTER.value).toBe("nats://$(NATS_USER):$(NATS_PASSWORD)@$(NATS_HOST)");
			}
		});

		test("every $(VAR) in a node's environment names a variable Kubernetes has defined by then: the settings', or one above it", () => {
			for (const { container } of containers) {
				const defined = new Set(Object.keys(settings.data ?? {}));
				const undefinedReferences: string[] = [];
				for (const { name, value } of container.env as { name: string; value?: string }[]) {
					for (const [, reference] of (value ?? "").matchAll(/\$\((\w+)\)/g))
						if (!defined.has(reference)) undefinedReferences.push(`${name} uses $(${reference})`);
					defined.add(name);
				}
				expect(undefinedReferences).toEqual([]);
			}
			expect(containers.every(({ container }) => env(container).REDIS_URL.value.includes("$(REDIS_HOST)"))).toBe(true);
		});

		test("memory requests and limits from the benchmark's RSS per process (docs/performance.md, Growth, distributed)", () => {
			const rows = read("docs/performance.md")
				.split("\n")
				.filter(line => line.startsWith("| distributed |") && line.includes("api "));
			// Every growth run the page reports (each at 1,000, 10,000 and 100,000 games).
			expect(rows.length).toBeGreaterThanOrEqual(2);
			const rss = (service: string) => rows.map(row => Number(new RegExp(`${service} ([\\d.]+) MB`).exec(row)![1]) * 2 ** 20);
			const bytes = (quantity: string) => Number(/^(\d+)([MG])i$/.exec(quantity)![1]) * 2 ** (quantity.endsWith("Gi") ? 30 : 20);
			for (const { name, container } of containers) {
				const { requests, limits } = container.resources;
				expect(bytes(requests.memory)).toBeGreaterThanOrEqual(Math.min(...rss(name)));
				expect(bytes(limits.memory)).toBeGreaterThanOrEqual(1.5 * Math.max(...rss(name)));
				expect(requests.cpu).toBeDefined();
			}
		});

		test("only api has a Service and an Ingress; api and games scale on CPU, and the HPA alone sets their replicas", () => {
			expect(ofKind(objects, "Service").map(service => service.spec.selector["app.kubernetes.io/component"])).toEqual(["api"]);
			expect(ofKind(objects, "Ingress").map(ingress => ingress.spec.rules[0].http.paths[0].backend.service.name)).toEqual(["api"]);
			const scaled = ofKind(objects, "HorizontalPodAutoscaler").map(hpa => hpa.spec.scaleTargetRef.name);
			expect(scaled.sort()).toEqual(["api", "games"]);
			for (const deployment of deployments)
				expect(deployment.spec.replicas === undefined).toBe(scaled.includes(deployment.metadata.name));
		});

		test("every pod has a PodDisruptionBudget that lets one go at a time", () => {
			const budgets = ofKind(objects, "PodDisruptionBudget");
			for (const { labels } of pods) {
				const matching = budgets.filter(budget => selects(budget.spec.selector, labels));
				expect(matching.map(budget => budget.spec.maxUnavailable)).toEqual([1]);
				// An unready pod (a service it needs is down) must not block a node drain.
				expect(matching.map(budget => budget.spec.unhealthyPodEvictionPolicy)).toEqual(["AlwaysAllow"]);
			}
		});

		test("the replicas of each service spread over nodes and zones", () => {
			for (const deployment of deployments) {
				const spread = deployment.spec.template.spec.topologySpreadConstraints ?? [];
				expect(spread.map((constraint: any) => constraint.topologyKey)).toEqual([
					"kubernetes.io/hostname",
					"topology.kubernetes.io/zone",
				]);
				for (const constraint of spread) {
					expect(selects(constraint.labelSelector, deployment.spec.template.metadata.labels)).toBe(true);
					expect(constraint.matchLabelKeys).toContain("app.kubernetes.io/component");
				}
			}
		});

		test("the NetworkPolicies select every pod: all traffic denied but DNS, NATS, Redis out (MongoDB for the data services); HTTP in to api; metrics from monitoring", () => {
			const policies = ofKind(objects, "NetworkPolicy");
			for (const { name, labels } of pods) {
				const applying = policies.filter(policy => selects(policy.spec.podSelector, labels));
				expect(
					applying.some(
						policy => Object.keys(policy.spec.podSelector).length === 0 && policy.spec.policyTypes.join() === "Ingress,Egress",
					),
				).toBe(true);
				const egress = applying
					.flatMap(policy => policy.spec.egress ?? [])
					.flatMap((rule: any) => rule.ports.map((port: any) => port.port));
				expect(egress.sort()).toEqual(name === "api" ? [4222, 53, 53, 6379] : [27017, 4222, 53, 53, 6379]);
				const ingress = applying.flatMap(policy => policy.spec.ingress ?? []);
				const fromAnywhere = ingress
					.filter((rule: any) => !rule.from)
					.flatMap((rule: any) => rule.ports.map((port: any) => port.port));
				expect(fromAnywhere).toEqual(name === "api" ? [3000] : []);
				const fromMonitoring = ingress.filter(
					(rule: any) => rule.from?.[0].namespaceSelector.matchLabels["kubernetes.io/metadata.name"] === "monitoring",
				);
				expect(fromMonitoring.flatMap((rule: any) => rule.ports.map((port: any) => String(port.port)))).toEqual([
					imageEnv.METRICS_PORT,
				]);
			}
		});

		test("images are pinned: the catalogue's by the package's version, set in the kustomization", () => {
			const { version } = JSON.parse(read("package.json"));
			for (const { container } of containers) expect(container.image).toBe(`registry.example.com/game-catalogue:${version}`);
		});
	});

	test("docs/kubernetes.md's policy for sign-in is valid and lets the gateway alone out, to HTTPS only", () => {
		const blocks = [...read("docs/kubernetes.md").matchAll(/```yaml\n([\s\S]*?)```/g)].map(
			([, text]) => parse(text) as KubernetesObject,
		);
		const policy = blocks.find(block => block.kind === "NetworkPolicy")!;
		expect(schemaProblems([policy])).toEqual([null]);
		expect(policy.metadata.namespace).toBe(ofKind(layouts.base, "Deployment")[0].metadata.namespace);
		const chosen = ofKind(layouts.base, "Deployment")
			.filter(deployment => selects(policy.spec.podSelector, deployment.spec.template.metadata.labels))
			.map(deployment => deployment.metadata.name);
		expect(chosen).toEqual(["api"]);
		expect(policy.spec.egress.flatMap((rule: any) => rule.ports)).toEqual([{ protocol: "TCP", port: 443 }]);
	});

	test("the production overlay changes only what it says: replicas, autoscaling bounds, log level, origins, TLS", () => {
		const [base, production] = [layouts.base, layouts.production].map(objects => ofKind(objects, "Deployment"));
		expect(production.map(deployment => deployment.spec.replicas)).toEqual([undefined, 3, 3, undefined]);
		expect(base.map(deployment => deployment.spec.replicas)).toEqual([undefined, 2, 2, undefined]);
		expect(ofKind(layouts.production, "Ingress")[0].spec.tls).toEqual([
			{ hosts: ["catalogue.example.com"], secretName: "catalogue-tls" },
		]);
		expect(ofKind(layouts.production, "HorizontalPodAutoscaler").map(hpa => hpa.spec.minReplicas)).toEqual([3, 3]);
	});

	test("Redis and MongoDB: pinned images, credentials by reference, a three-member replica set", () => {
		expect(ofKind(engines, "Secret")).toEqual([]);
		const redis = ofKind(engines, "Deployment")[0].spec.template.spec.containers[0];
		expect(redis.image).toMatch(/^redis:\d+\.\d+/);
		expect(redis.env.every((variable: any) => variable.valueFrom?.secretKeyRef)).toBe(true);
		expect(redis.args).toEqual(expect.arrayContaining(["--requirepass", "$(REDIS_PASSWORD)", "--maxmemory-policy", "volatile-lru"]));
		const [mongodb] = ofKind(engines, "MongoDBCommunity");
		expect(mongodb.spec).toMatchObject({ type: "ReplicaSet", members: 3, version: expect.stringMatching(/^5\.0\.\d+$/) });
		expect(mongodb.spec.users[0].roles).toEqual([{ name: "readWrite", db: "catalogue" }]);
	});

	test("catalogue-data admits only the catalogue (on the engines' ports), the engines themselves and Prometheus", () => {
		const policies = ofKind(engines, "NetworkPolicy");
		const enginePods = ofKind(engines, "Deployment").map(deployment => deployment.spec.template.metadata.labels);
		expect(policies.some(policy => Object.keys(policy.spec.podSelector).length === 0 && !policy.spec.ingress)).toBe(true);
		const fromNamespace = (name: string) =>
			policies.flatMap(policy =>
				(policy.spec.ingress ?? []).filter((rule: any) =>
					rule.from.some((peer: any) => peer.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"] === name),
				),
			);
		expect(fromNamespace("catalogue").flatMap((rule: any) => rule.ports.map((port: any) => port.port))).toEqual([4222, 6379, 27017]);
		expect(fromNamespace("monitoring").flatMap((rule: any) => rule.ports.map((port: any) => port.port))).toEqual([7777]);
		for (const labels of enginePods) expect(policies.every(policy => selects(policy.spec.podSelector, labels))).toBe(true);
		const [namespace] = ofKind(engines, "Namespace");
		expect(namespace.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("baseline");
	});

	test("the PodMonitor scrapes every catalogue pod's metrics port, labelled for kube-prometheus-stack's selector", () => {
		const [monitor] = ofKind(monitoring, "PodMonitor");
		expect(monitor.metadata.labels).toEqual({ release: "kube-prometheus-stack" });
		expect(monitor.spec.podMetricsEndpoints.map((endpoint: any) => endpoint.port)).toEqual(["metrics"]);
		for (const deployment of ofKind(layouts.base, "Deployment"))
			expect(selects(monitor.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
	});

	test("no image anywhere is :latest or untagged", () => {
		const images = [...layouts.base, ...layouts.production, ...engines]
			.flatMap(object => object.spec?.template?.spec?.containers ?? [])
			.map((container: any) => container.image as string);
		for (const name of images) expect(name).toMatch(/:(?!latest$)[\w.-]+$|@sha256:[0-9a-f]{64}$/);
	});
});

describe("the Helm charts of NATS and MongoDB's operator", () => {
	interface Chart {
		release: string;
		chart: string;
		repo: string;
		version: string;
		namespace: string;
		values: string;
	}
	const charts = parse(read("deploy/kubernetes/charts/charts.yaml")) as Chart[];

	test("each is pinned to a version, from an https repository, with a values file that parses", () => {
		expect(charts.map(chart => chart.chart)).toEqual(["nats", "mongodb-kubernetes"]);
		for (const chart of charts) {
			expect(chart.version).toMatch(/^\d+\.\d+\.\d+$/);
			expect(chart.repo).toMatch(/^https:\/\//);
			expect(parse(read(`deploy/kubernetes/charts/${chart.values}`))).toEqual(expect.any(Object));
		}
	});

	test("NATS: three servers in a cluster with JetStream, a user per kind of node, messages up to nats.conf's max_payload", () => {
		const values = parse(read("deploy/kubernetes/charts/nats-values.yaml"));
		const [, maxPayload] = /^max_payload: (\S+)$/m.exec(read("nats.conf"))!;
		expect(values.config.cluster).toEqual({ enabled: true, replicas: 3 });
		// JetStream on a volume of each server, for the change feed's stream.
		expect(values.config.jetstream).toMatchObject({ enabled: true, fileStore: { enabled: true, pvc: { enabled: true } } });
		expect(values.config.merge.max_payload).toBe(`<< ${maxPayload} >>`);
		// The rules of nats-access.conf, from the same code (node dist/scripts/nats-access.js --helm); each password from nats-auth.
		expect(values.config.merge.authorization).toEqual(helmAuthorization(Object.values(aliases)));
		expect(values.container.image.tag).toMatch(/^\d+\.\d+\.\d+-alpine$/);
		for (const kind of NODE_KINDS)
			expect(values.container.env[passwordVariable(kind)].valueFrom.secretKeyRef).toEqual({ name: "nats-auth", key: kind });
		// Room for messages of max_payload in flight, and Go's heap kept under the limit.
		const mib = (quantity: string) => Number(/^(\d+)(Mi|Gi)B?$/.exec(quantity)![1]) * (quantity.includes("Gi") ? 1024 : 1);
		expect(mib(values.container.resources.limits.memory)).toBeGreaterThanOrEqual(1024);
		expect(mib(values.container.env.GOMEMLIMIT)).toBeLessThan(mib(values.container.resources.limits.memory));
		// Its exporter is scraped by kube-prometheus-stack, as the catalogue's pods are.
		expect(values.promExporter.podMonitor).toEqual({
			enabled: true,
			merge: { metadata: { labels: { release: "kube-prometheus-stack" } } },
		});
	});
});

describe("the Grafana dashboard", () => {
	const dashboard = JSON.parse(read("deploy/kubernetes/monitoring/catalogue-dashboard.json"));
	const queries: string[] = dashboard.panels.flatMap((panel: any) => panel.targets.map((target: any) => target.expr));

	/** Prometheus' names of what the nodes export: moleculer's metrics and the catalogue's own, with a histogram's series. */
	const exported = new Set(
		[...Object.values(METRIC as Record<string, string>), HTTP_REQUESTS, HTTP_REQUEST_TIME, NATS_RECONNECTS, "process.memory.rss"]
			.map(name => name.replace(/[.-]/g, "_"))
			.flatMap(name => [name, `${name}_bucket`, `${name}_sum`, `${name}_count`]),
	);

	test("has the panels an operator looks at first", () => {
		expect(dashboard.panels.map((panel: any) => panel.title)).toEqual(
			expect.arrayContaining([
				"HTTP requests per route",
				"HTTP latency per route (p95)",
				"HTTP errors by status",
				"Calls per action (where they run)",
				"Cache hits and misses",
				"NATS reconnects per node",
			]),
		);
	});

	test("queries only metrics the catalogue's nodes export", () => {
		const names = queries.flatMap(query => [...query.matchAll(/\b(catalogue|moleculer|process|os)_\w+/g)].map(([name]) => name));
		expect(names.length).toBeGreaterThan(8);
		expect(names.filter(name => !exported.has(name))).toEqual([]);
		// The check is live: a name that is not exported is caught.
		expect(exported.has("moleculer_cache_hits_total")).toBe(false);
	});
});
