import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";

/** A certificate to sign: its file name (`<name>.pem`, key `<name>-key.pem`), subject and X.509 extension. */
export interface Certificate {
	name: string;
	subject: string;
	extension: string;
}

/** The server certificate of a loopback test server. */
export const LOOPBACK_SERVER: Certificate = {
	name: "server",
	subject: "/CN=127.0.0.1",
	extension: "subjectAltName=IP:127.0.0.1,DNS:localhost",
};

/**
 * Makes, with openssl, a CA of one day (`ca.pem`, `ca-key.pem` in `dir`) and the certificates it
 * signs; answers the path of `<name>.pem` (`pem("ca")`, `pem("server-key")`, ...).
 */
export function signedCertificates(dir: string, certificates: Certificate[]): (name: string) => string {
	const pem = (name: string) => path.join(dir, `${name}.pem`);
	const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
	const newKey = ["-newkey", "rsa:2048", "-nodes"];
	openssl("req", "-x509", ...newKey, "-days", "1", "-subj", "/CN=catalogue test CA", "-keyout", pem("ca-key"), "-out", pem("ca"));
	for (const { name, subject, extension } of certificates) {
		const request = path.join(dir, `${name}.csr`);
		const extensionFile = path.join(dir, `${name}.ext`);
		openssl("req", ...newKey, "-subj", subject, "-keyout", pem(`${name}-key`), "-out", request);
		writeFileSync(extensionFile, `${extension}\n`);
		openssl(
			"x509",
			"-req",
			"-in",
			request,
			"-CA",
			pem("ca"),
			"-CAkey",
			pem("ca-key"),
			"-CAcreateserial",
			"-days",
			"1",
			"-extfile",
			extensionFile,
			"-out",
			pem(name),
		);
	}
	return pem;
}
