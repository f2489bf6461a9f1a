import type { IncomingMessage } from "node:http";
import { readConfig } from "../../lib/config/config";
import { clientAddressOf } from "../../lib/http/client-address";

// Who a request comes from (docs/security.md): the connection's address, or what the proxies
// TRUST_PROXY declares forwarded, read as Express reads it.

/** A request from `connection` carrying `forwardedFor` as its X-Forwarded-For, if any. */
const request = (connection: string | undefined, forwardedFor?: string) =>
	({
		socket: { remoteAddress: connection },
		headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor },
	}) as IncomingMessage;

/** The client address under TRUST_PROXY=`trust` (unset when undefined). */
const addressUnder = (trust: string | undefined) => clientAddressOf(readConfig({ TRUST_PROXY: trust }).trustProxy);

describe("clientAddressOf", () => {
	test("without TRUST_PROXY, X-Forwarded-For is ignored: the client is its connection's address", () => {
		const address = addressUnder(undefined);
		expect(address(request("198.51.100.7", "203.0.113.1"))).toBe("198.51.100.7");
		expect(address(request("127.0.0.1", "203.0.113.1"))).toBe("127.0.0.1");
		expect(addressUnder("0")(request("127.0.0.1", "203.0.113.1"))).toBe("127.0.0.1");
	});

	test("a forwarded address from a connection that is not a declared proxy is ignored", () => {
		const address = addressUnder("10.0.0.0/8");
		expect(address(request("198.51.100.7", "203.0.113.1"))).toBe("198.51.100.7");
		expect(address(request("198.51.100.7", "10.0.0.5, 203.0.113.1"))).toBe("198.51.100.7");
	});

	test("through a declared proxy the client is the address it forwarded, whatever the client wrote before it", () => {
		const address = addressUnder("10.0.0.0/8");
		expect(address(request("10.1.2.3", "203.0.113.1"))).toBe("203.0.113.1");
		expect(address(request("10.1.2.3", "203.0.113.2"))).toBe("203.0.113.2");
		// The client wrote 192.0.2.99 itself; the proxy appended the address it saw.
		expect(address(request("10.1.2.3", "192.0.2.99, 203.0.113.1"))).toBe("203.0.113.1");
		// A proxy that forwards nothing: the client is the proxy.
		expect(address(request("10.1.2.3"))).toBe("10.1.2.3");
	});

	test("a chain of declared proxies is walked back to the first address outside them", () => {
		const address = addressUnder("10.0.0.0/8, 192.168.0.0/16");
		expect(address(request("10.1.2.3", "192.0.2.99, 203.0.113.1, 192.168.1.1"))).toBe("203.0.113.1");
		expect(addressUnder("uniquelocal")(request("10.1.2.3", "192.0.2.99, 203.0.113.1, 192.168.1.1"))).toBe("203.0.113.1");
	});

	test("loopback and an IPv4 address seen as IPv6 (::ffff:) are matched as proxy-addr matches them", () => {
		expect(addressUnder("loopback")(request("::ffff:127.0.0.1", "203.0.113.1"))).toBe("203.0.113.1");
		expect(addressUnder("loopback")(request("::1", "2001:db8::1"))).toBe("2001:db8::1");
		expect(addressUnder("127.0.0.1")(request("::ffff:127.0.0.1", "203.0.113.1"))).toBe("203.0.113.1");
		expect(addressUnder("127.0.0.1")(request("127.0.0.2", "203.0.113.1"))).toBe("127.0.0.2");
	});

	test("a number of hops trusts that many proxies, whoever they are, and no more", () => {
		expect(addressUnder("1")(request("198.51.100.7", "192.0.2.99, 203.0.113.1"))).toBe("203.0.113.1");
		expect(addressUnder("2")(request("198.51.100.7", "192.0.2.99, 203.0.113.1"))).toBe("192.0.2.99");
		expect(addressUnder("1")(request("198.51.100.7"))).toBe("198.51.100.7");
	});
});
