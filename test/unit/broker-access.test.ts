import { readFileSync } from "node:fs";
import path from "node:path";
import { accessTable, callsOfKind, natsAuthorization, NODE_KINDS, permissionsOf } from "../../lib/config/broker-access";
import { aliases } from "../../services/api.routes";
import { root } from "../support/process";

// Who may do what on the cluster's NATS is written once, in lib/config/broker-access.ts: nats-access.conf
// and docs/security.md hold what it makes, and the contract suite runs over NATS with it on.

const routeActions = Object.values(aliases);
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

test("nats-access.conf is nats.conf with the authorization block lib/config/broker-access.ts makes (dist/scripts/nats-access.js)", () => {
	expect(read("nats-access.conf")).toContain('include "nats.conf"');
	expect(read("nats-access.conf")).toContain(natsAuthorization(routeActions));
});

test("docs/security.md holds the table of who may call what that it makes", () => {
	expect(read("docs/security.md")).toContain(accessTable(routeActions));
});

test("the gateway may call the actions its routes map, each service's readiness and feed, and no other", () => {
	const calls = callsOfKind("api", routeActions);
	expect(calls).toEqual(expect.arrayContaining(["games.list", "games.page", "authors.remove", "categories.create", "games.ready"]));
	expect(calls).toContain("authors.changes");
	for (const internal of ["games.importRecords", "games.countBy", "authors.exportPage", "authors.referable", "$node.list"])
		expect(calls).not.toContain(internal);
	const { publish } = permissionsOf("api", routeActions);
	expect(publish.filter(subject => subject.includes(".REQB."))).toEqual(calls.map(action => `*.REQB.${action}`));
	// It answers nobody but the REPL, and tells nobody of changes.
	expect(publish.filter(subject => subject.includes(".RES."))).toEqual(["*.RES.repl.*"]);
	expect(publish.some(subject => subject.includes(".EVENT"))).toBe(false);
	expect(publish).not.toContain("*.REQ.*.*");
});

test("games checks references; authors and categories ask games.countBy; the tool exports and imports", () => {
	expect(callsOfKind("games", routeActions)).toEqual(
		expect.arrayContaining(["authors.referable", "authors.get", "categories.referable", "categories.get"]),
	);
	expect(callsOfKind("authors", routeActions)).toEqual(["games.countBy", "games.ready"]);
	expect(callsOfKind("categories", routeActions)).toEqual(["games.countBy", "games.ready"]);
	expect(callsOfKind("transfer", routeActions)).toEqual(expect.arrayContaining(["games.exportPage", "authors.importRecords"]));
	expect(callsOfKind("transfer", routeActions)).not.toContain("games.remove");
});

test("each kind reads only its own requests, replies and inbox, and answers only the kinds that call it", () => {
	for (const kind of NODE_KINDS) {
		const { subscribe } = permissionsOf(kind, routeActions);
		const others = NODE_KINDS.filter(other => other !== kind);
		for (const other of others) {
			expect(subscribe).not.toContain(`*.RES.${other}.*`);
			expect(subscribe).not.toContain(`*.REQ.${other}.*`);
			expect(subscribe).not.toContain(`_INBOX_${other}.>`);
		}
		expect(subscribe).toEqual(expect.arrayContaining([`*.RES.${kind}.*`, `*.REQ.${kind}.*`, `_INBOX_${kind}.>`]));
		expect(subscribe.some(subject => subject.endsWith(".>") && !subject.startsWith("_INBOX") && !subject.includes(".EVENTB."))).toBe(
			false,
		);
	}
	const answersOf = (kind: (typeof NODE_KINDS)[number]) =>
		permissionsOf(kind, routeActions).publish.filter(subject => subject.includes(".RES."));
	expect(answersOf("authors")).toEqual(["*.RES.api.*", "*.RES.games.*", "*.RES.transfer.*", "*.RES.repl.*"]);
	expect(answersOf("games")).toEqual([
		"*.RES.api.*",
		"*.RES.authors.*",
		"*.RES.categories.*",
		"*.RES.transfer.*",
		"*.RES.follower.*",
		"*.RES.repl.*",
	]);
	expect(answersOf("transfer")).toEqual([]);
});
