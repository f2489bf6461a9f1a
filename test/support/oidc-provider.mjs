// oidc-provider (an OpenID Certified authorization server, from npm) for the sign-in tests (test/support/certified-provider.ts),
// in a process of its own: the package is ES modules only. Everything comes from the environment: PORT, the signing keys
// (KEYS, private JWKs, the first signs), the catalogue's resource and audience. Two clients get tokens by the client-credentials
// grant with a resource indicator: `editor` (scope catalogue-editor) and `reader` (scope catalogue-reader); a second resource
// gives tokens for another audience. Tokens are JWTs (RFC 9068), signed ES256.
import Provider from "oidc-provider";

const { PORT, KEYS, RESOURCE, AUDIENCE, OTHER_RESOURCE } = process.env;
const secret = "certified-provider-secret-0123456789";
const client = (id, scope) => ({
	client_id: id,
	client_secret: secret,
	grant_types: ["client_credentials"],
	redirect_uris: [],
	response_types: [],
	scope,
	id_token_signed_response_alg: "ES256",
});

const provider = new Provider(`http://127.0.0.1:${PORT}`, {
	clients: [client("editor", "catalogue-editor"), client("reader", "catalogue-reader")],
	jwks: { keys: JSON.parse(KEYS) },
	scopes: ["catalogue-editor", "catalogue-reader"],
	ttl: { ClientCredentials: 300 },
	features: {
		devInteractions: { enabled: false },
		clientCredentials: { enabled: true },
		resourceIndicators: {
			enabled: true,
			defaultResource: () => RESOURCE,
			useGrantedResource: () => true,
			getResourceServerInfo: (_ctx, resource) => ({
				scope: "catalogue-editor catalogue-reader",
				audience: resource === OTHER_RESOURCE ? "another-application" : AUDIENCE,
				accessTokenFormat: "jwt",
				accessTokenTTL: 300,
				jwt: { sign: { alg: "ES256" } },
			}),
		},
	},
});

provider.listen(Number(PORT), "127.0.0.1", () => process.stdout.write("listening\n"));
