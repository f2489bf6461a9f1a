import { randomBytes } from "node:crypto";

const MONGO_URI = /^(mongodb(?:\+srv)?:\/\/)([^/?]*)(?:\/([^?]*))?(?:\?(.*))?$/;

/**
 * The same MongoDB connection with `database` in place of the one the URI names. Credentials keep
 * authenticating where they did: the URI's database (or `admin` without one) becomes `authSource`
 * unless the URI already sets it.
 */
export function withDatabase(uri: string, database: string): string {
	const parts = MONGO_URI.exec(uri);
	if (!parts) throw new Error("MONGO_URI must start with mongodb:// or mongodb+srv://");
	const [, scheme, hosts, named = "", query = ""] = parts;
	const options = query ? [query] : [];
	if (hosts.includes("@") && !new URLSearchParams(query).has("authSource"))
		options.push(`authSource=${encodeURIComponent(decodeURIComponent(named) || "admin")}`);
	return `${scheme}${hosts}/${database}${options.length > 0 ? `?${options.join("&")}` : ""}`;
}

/** A database name no other test file uses: the contract needs empty collections. */
export function testDatabaseName(): string {
	return `catalogue_test_${randomBytes(6).toString("hex")}`;
}
