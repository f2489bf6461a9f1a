import { startNode, type Node } from "./process";

const PROMPT = "catalogue $";
export const PROMPT_SHOWN = /catalogue \$/;

/** A REPL node in its own process, driven through its standard input as an operator types. */
export class ReplSession {
	private readonly node: Node;

	constructor(env: NodeJS.ProcessEnv) {
		this.node = startNode(env, { repl: true });
	}

	private get output(): string {
		return this.node.output();
	}

	/** Waits until the output since `from` matches, and returns that part of the output. */
	async waitFor(pattern: RegExp, from = 0, timeoutMs = 15_000): Promise<string> {
		const deadline = Date.now() + timeoutMs;
		while (!pattern.test(this.output.slice(from))) {
			if (this.node.child.exitCode !== null) throw new Error(`the REPL exited with ${this.node.child.exitCode}:\n${this.output}`);
			if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms in:\n${this.output.slice(from)}`);
			await new Promise(resolve => setTimeout(resolve, 50));
		}
		return this.output.slice(from);
	}

	/** Types a command and returns what it printed up to the next prompt. */
	async type(command: string): Promise<string> {
		const from = this.output.length;
		this.node.child.stdin!.write(`${command}\n`);
		const printed = await this.waitFor(/\ncatalogue \$/, from);
		return printed.slice(0, printed.lastIndexOf(PROMPT));
	}

	/** `quit`, and the exit code. */
	quit(): Promise<number | null> {
		this.node.child.stdin!.write("quit\n");
		return this.node.exited;
	}

	kill() {
		return this.node.kill();
	}
}

/** Runs the REPL's `integrity` command in a REPL node joined to a cluster, and returns what it printed. */
export async function replIntegrity(env: NodeJS.ProcessEnv): Promise<string> {
	// As `npm run repl` starts it: no SERVICES and no SERVICEDIR, so no services of its own.
	const repl = new ReplSession({ ...env, SERVICES: "", SERVICEDIR: "" });
	try {
		await repl.waitFor(PROMPT_SHOWN);
		const printed = await repl.type("integrity");
		await repl.quit();
		return printed;
	} finally {
		await repl.kill();
	}
}
