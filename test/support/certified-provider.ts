import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { exportJWK, generateKeyPair, type JWK } from "jose";
import { freePort } from "./process";

// oidc-provider from npm, an OpenID Certified implementation, run by test/support/oidc-provider.mjs in a process of its own, for
// the sign-in tests against a real provider rather than the stand-in of identity-provider.ts.

const SCRIPT = path.join(__dirname, "oidc-provider.mjs");
const SECRET = "certified-provider-secret-0123456789";
/** The catalogue's resource indicator, and another application's. */
const RESOURCE = "https://catalogue.example.com/";
const OTHER_RESOURCE = "https://other.example.com/";
export const AUDIENCE = "game-catalogue";

/** An ES256 signing key, private, as oidc-provider takes it. */
export async function providerKey(): Promise<JWK> {
	const { privateKey } = await generateKeyPair("ES256", { extractable: true });
	return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: "ES256", use: "sig" };
}

export class CertifiedProvider {
	private child?: ChildProcess;

	private constructor(readonly port: number) {}

	get issuer(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	/** Started with `keys`, the first of which signs. */
	static async start(keys: JWK[]): Promise<CertifiedProvider> {
		const provider = new CertifiedProvider(await freePort());
		await provider.run(keys);
		return provider;
	}

	/** Stopped, then started again at the same issuer with `keys`: a rotation, as the provider's operator makes one. */
	async restart(keys: JWK[]): Promise<void> {
		await this.stop();
		await this.run(keys);
	}

	private run(keys: JWK[]): Promise<void> {
		const child = (this.child = spawn(process.execPath, [SCRIPT], {
			env: { ...process.env, PORT: String(this.port), KEYS: JSON.stringify(keys), RESOURCE, OTHER_RESOURCE, AUDIENCE },
			stdio: ["ignore", "pipe", "pipe"],
		}));
		let output = "";
		child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
		return new Promise((resolve, reject) => {
			child.stdout.on("data", chunk => String(chunk).includes("listening") && resolve());
			child.once("exit", code => reject(new Error(`oidc-provider exited with ${code}: ${output}`)));
		});
	}

	async stop(): Promise<void> {
		const { child } = this;
		if (!child || child.exitCode !== null || child.signalCode !== null) return;
		const exited = new Promise(resolve => child.once("exit", resolve));
		child.kill();
		await exited;
	}

	/** An access token of `client` (`editor` or `reader`) by the client-credentials grant, for the catalogue or another application. */
	async token(client: "editor" | "reader", { forOther = false } = {}): Promise<string> {
		const response = await fetch(`${this.issuer}/token`, {
			method: "POST",
			headers: {
				"content-type": "application/x-www-form-urlencoded",
				authorization: `Basic ${Buffer.from(`${client}:${SECRET}`).toString("base64")}`,
			},
			body: new URLSearchParams({
				grant_type: "client_credentials",
				scope: `catalogue-${client}`,
				resource: forOther ? OTHER_RESOURCE : RESOURCE,
			}),
		});
		const body = (await response.json()) as { access_token?: string };
		if (response.status !== 200 || !body.access_token)
			throw new Error(`oidc-provider answered ${response.status}: ${JSON.stringify(body)}`);
		return body.access_token;
	}
}
