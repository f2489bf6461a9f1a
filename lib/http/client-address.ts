import type { IncomingMessage } from "node:http";
import proxyaddr from "proxy-addr";
import type { TrustProxy } from "../config/config";

/** The address of a request's client, as the gateway knows it. */
export type ClientAddress = (req: IncomingMessage) => string;

/**
 * Who sent a request: without TRUST_PROXY, its connection's address, since X-Forwarded-For is whatever the client writes;
 * with it, proxy-addr walks X-Forwarded-For back through the declared proxies only, as Express does.
 */
export function clientAddressOf(trust: TrustProxy | null): ClientAddress {
	if (trust === null) return req => req.socket.remoteAddress ?? "";
	const trusted = trustOf(trust);
	return req => proxyaddr(req, trusted) ?? "";
}

/** Whether a connection's own address is a proxy TRUST_PROXY declares: one that carries other clients' requests. */
export function isTrustedProxy(trust: TrustProxy | null): (address: string) => boolean {
	if (trust === null) return () => false;
	const trusted = trustOf(trust);
	return address => trusted(address, 0);
}

const trustOf = (trust: TrustProxy) =>
	"hops" in trust ? (_address: string, hop: number) => hop < trust.hops : proxyaddr.compile(trust.proxies);
