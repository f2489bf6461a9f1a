import type { ServerResponse } from "node:http";
import type { Service, ServiceSchema } from "moleculer";
import ApiGateway, { type ApiSettingsSchema } from "moleculer-web";
import { config } from "../lib/config";
import { toFailure } from "../lib/failures";
import { withoutPrototypeKeys } from "../lib/json";

/** The whole HTTP surface: only these paths reach the services. */
const aliases = {
	"PUT /category": "categories.create",
	"PUT /category/:id": "categories.update",
	"GET /category": "categories.list",
	"GET /category/:id": "categories.get",
	"DELETE /category/:id": "categories.remove",

	"PUT /author": "authors.create",
	"PUT /author/:id": "authors.update",
	"GET /author": "authors.list",
	"POST /author": "authors.page",
	"GET /author/:id": "authors.get",
	"DELETE /author/:id": "authors.remove",

	"PUT /game": "games.create",
	"PUT /game/:id": "games.update",
	"GET /game": "games.list",
	"GET /game/:query": "games.list",
	"DELETE /game/:id": "games.remove",
};

const ApiService: ServiceSchema<ApiSettingsSchema> = {
	name: "api",
	mixins: [ApiGateway],
	settings: {
		port: config.port,
		routes: [
			{
				path: "/",
				mappingPolicy: "restrict",
				autoAliases: false,
				aliases,
				bodyParsers: { json: { limit: config.bodyLimit, reviver: withoutPrototypeKeys } },
				// On stop the gateway waits for its own requests (middlewares/drain.middleware.ts);
				// tracked, their calls would make the broker wait for them before the gateway even
				// stops listening.
				callOptions: { tracking: false },
			},
		],
		// Every failure, routed or not, answers JSON `{ msg }` with the status of lib/failures.ts.
		onError(this: Service, _req: unknown, res: ServerResponse, err: Error) {
			const { status, body } = toFailure(err);
			if (status >= 500) this.logger.error("Request failed:", err);
			res.setHeader("Content-Type", "application/json; charset=utf-8");
			res.writeHead(status);
			res.end(JSON.stringify(body));
		},
	},
};

export default ApiService;
