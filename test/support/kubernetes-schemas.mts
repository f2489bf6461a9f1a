// Validates Kubernetes objects against the API's schemas of kubernetes-models (and the
// prometheus-operator's PodMonitor). Both packages are ES modules only, which Jest's CommonJS
// cannot load, so test/deploy/kubernetes.test.ts runs this with Node: objects as a JSON array on
// standard input, one problem or null per object as a JSON array on standard output.
import * as k8s from "kubernetes-models";
import * as monitoring from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

interface KubernetesObject {
	apiVersion: string;
	kind: string;
}

type Validating = new (data: object) => { validate(): void };

/** `apps/v1` is k8s.apps.v1, `networking.k8s.io/v1` k8s.networkingK8sIo.v1, the core `v1` k8s.v1. */
function modelOf({ apiVersion, kind }: KubernetesObject): Validating | undefined {
	if (apiVersion === "monitoring.coreos.com/v1") return (monitoring as Record<string, unknown>)[kind] as Validating | undefined;
	const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
	const key = group.replace(/\.(\w)/g, (_dot, letter: string) => letter.toUpperCase());
	const groups = k8s as unknown as Record<string, Record<string, Record<string, unknown>>>;
	const models = group ? groups[key]?.[version] : groups.v1;
	return models?.[kind] as Validating | undefined;
}

function problem(object: KubernetesObject): string | null {
	const Model = modelOf(object);
	if (!Model) return `no schema for ${object.apiVersion} ${object.kind}`;
	try {
		new Model(object).validate();
		return null;
	} catch (err) {
		return (err as Error).message;
	}
}

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const objects = JSON.parse(Buffer.concat(chunks).toString("utf8")) as KubernetesObject[];
process.stdout.write(JSON.stringify(objects.map(problem)));
