import type { Middleware, Service } from "moleculer";

/** How often each action runs, on every broker it is given to: `startCatalogue({ middlewares: [counter.middleware] })`. */
export function actionCounter(): { calls: Map<string, number>; middleware: Middleware } {
	const calls = new Map<string, number>();
	const middleware: Middleware = {
		localAction(next, action) {
			const name = String(action.name);
			return function (this: Service, ctx) {
				calls.set(name, (calls.get(name) ?? 0) + 1);
				return next.call(this, ctx);
			};
		},
	};
	return { calls, middleware };
}

/** The events each service handled, as `service event`, on every broker it is given to. */
export function eventCounter(): { handled: string[]; middleware: Middleware } {
	const handled: string[] = [];
	const middleware: Middleware = {
		localEvent(next, event) {
			return function (this: Service, ctx) {
				handled.push(`${event.service?.name} ${ctx.eventName}`);
				return next.call(this, ctx);
			};
		},
	};
	return { handled, middleware };
}
