/**
 * The docs page (GET /docs): Swagger UI from swagger-ui-dist, served by the gateway, reading GET /openapi.json. No inline script
 * or style, so its Content-Security-Policy (lib/http/http-guards.ts docsSecurityHeaders) allows only the gateway's own files.
 */
import type { Context } from "moleculer";
import type { ApiRouteSchema } from "moleculer-web";
import serveStatic from "serve-static";
import getAbsoluteFSPath from "swagger-ui-dist/absolute-path";
import { docsSecurityHeaders, limitUrlLength, optionsOnlyAsPreflight, serveOnly } from "./http-guards";

/** The files of swagger-ui-dist the page loads; the package's other files (its demo page among them) are not served. */
const DOCS_ASSETS = ["swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png"];

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Game catalogue: API</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
<script src="/docs/swagger-ui-bundle.js" defer></script>
<script src="/docs/docs.js" defer></script>
</head>
<body>
<div id="swagger-ui"></div>
</body>
</html>
`;

/** Starts Swagger UI on the document; no validator badge, which would call a server elsewhere. */
const DOCS_SCRIPT = `"use strict";
window.addEventListener("DOMContentLoaded", function () {
	window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", validatorUrl: null, deepLinking: true });
});
`;

/** The gateway's `/docs` route: the page, its script and the swagger-ui-dist files it loads, under a Content-Security-Policy of its own. */
export const docsRoute = (aliases: ApiRouteSchema["aliases"], rateLimit: ApiRouteSchema["rateLimit"]): ApiRouteSchema => ({
	path: "/docs",
	mappingPolicy: "restrict",
	autoAliases: false,
	aliases,
	// The same URL limit as the catalogue's paths: the document lists 414 on every operation.
	use: [
		limitUrlLength,
		optionsOnlyAsPreflight(false),
		docsSecurityHeaders,
		serveOnly(DOCS_ASSETS, serveStatic(getAbsoluteFSPath(), { index: false })),
	],
	// The page and its script get moleculer-web's weak tag of their text; serve-static tags the files.
	etag: "weak",
	rateLimit,
	callOptions: { tracking: false },
});

const answering = (type: string, body: string) => ({
	visibility: "published" as const,
	handler: (ctx: Context<unknown, { $responseType?: string }>) => {
		ctx.meta.$responseType = type;
		return body;
	},
});

/** The gateway's actions behind them: the OpenAPI document (GET /openapi.json), the page's HTML and its script. */
export const docsActions = (document: object) => ({
	openapi: { visibility: "published" as const, handler: () => document },
	docsPage: answering("text/html; charset=utf-8", DOCS_PAGE),
	docsScript: answering("text/javascript; charset=utf-8", DOCS_SCRIPT),
});
