/**
 * The docs page (GET /docs): Swagger UI from the swagger-ui-dist package, served by the gateway
 * itself, reading GET /openapi.json. The page has no inline script or style, so its Content-Security-Policy
 * (lib/http/http-guards.ts docsSecurityHeaders) allows only files of the gateway's own origin.
 */

/** The files of swagger-ui-dist the page loads; the package's other files (its demo page among them) are not served. */
export const DOCS_ASSETS = ["swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png"];

export const DOCS_PAGE = `<!doctype html>
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
export const DOCS_SCRIPT = `"use strict";
window.addEventListener("DOMContentLoaded", function () {
	window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", validatorUrl: null, deepLinking: true });
});
`;
