/**
 * How the gateway sends an action's answer: a cached read as the cache keeps it (or a 304 when the client's tag is current), any
 * other GET with a weak tag of its JSON, and large JSON compressed for a client that asks for br or gzip.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import etag from "etag";
import fresh from "fresh";
import type { ActionSchema, Context } from "moleculer";
import vary from "vary";
import { HttpAnswer, sourcesOf, type HttpWish } from "../cache/answers";
import { etagOf, heldTags } from "../cache/keys";
import { chosenEncoding, compress, COMPRESS_FROM_BYTES } from "./compression";
import { isRead } from "./methods";

/** What an action or a hook tells moleculer-web about the answer; what the gateway asks of a cached read (lib/cache/answers.ts). */
export type ResponseMeta = { $statusCode?: number; $responseType?: string; $responseHeaders?: Record<string, string>; $http?: HttpWish };

/** moleculer-web's notes on a routed request: the action it leads to. */
type RoutedRequest = IncomingMessage & { $action?: ActionSchema };

/**
 * Before a cached read is called: what the client accepts and which tags it holds, so that the
 * read answers with its bytes as sent. Searches (POST) ignore the tags they are sent.
 */
export function wishOf(ctx: Context<unknown, ResponseMeta>, req: IncomingMessage): void {
	const { $action } = req as RoutedRequest;
	if (!$action || !sourcesOf($action)) return;
	const held = isRead(req.method) ? heldTags(req.headers["if-none-match"], req.headers["cache-control"]) : [];
	ctx.meta.$http = { encoding: chosenEncoding(req.headers), held };
}

/**
 * Whether a read's conditional headers match the tag just set (`fresh`, as moleculer-web asks after the answer is sent: then with
 * the answer's `Content-Encoding` already set, which a 304 must not carry: a client's cache would take its stored answer as encoded).
 */
const clientHoldsIt = (req: IncomingMessage, res: ServerResponse) =>
	isRead(req.method) && fresh(req.headers, { etag: res.getHeader("ETag") });

/** A 304: no body, nothing said of one. */
function notModified(ctx: Context<unknown, ResponseMeta>): null {
	ctx.meta.$statusCode = 304;
	return null;
}

/**
 * A cached read's answer as the cache keeps it: tagged (a GET), then its bytes, or a 304 when the client's tag is current (the lookup
 * said so) or it holds any (`If-None-Match: *`, left to this check: the read had to succeed first).
 */
function sendAsKept(ctx: Context<unknown, ResponseMeta>, req: IncomingMessage, res: ServerResponse, answer: HttpAnswer): Buffer | null {
	if (isRead(req.method)) res.setHeader("ETag", etagOf(answer.tag));
	if (answer.body === null || clientHoldsIt(req, res)) return notModified(ctx);
	ctx.meta.$responseType = "application/json; charset=utf-8";
	if (answer.encoding) ctx.meta.$responseHeaders = { ...ctx.meta.$responseHeaders, "Content-Encoding": answer.encoding };
	return answer.body;
}

/**
 * The body to send for `data`. Answers other than a cached read's go as they are to a client that
 * asks for no encoding, and writes and searches, which never answer 304, are not hashed.
 */
export function sentAnswer(ctx: Context<unknown, ResponseMeta>, req: IncomingMessage, res: ServerResponse, data: unknown): unknown {
	vary(res, "Accept-Encoding");
	if (data instanceof HttpAnswer) return sendAsKept(ctx, req, res, data);
	const encoding = chosenEncoding(req.headers);
	// A 503 of /health/ready is not tagged: only a 200 is an answer to keep.
	const untagged = isRead(req.method) && !res.hasHeader("ETag") && ctx.meta.$statusCode === undefined;
	if ((encoding === null && !untagged) || data == null) return data;
	const json = JSON.stringify(data);
	ctx.meta.$responseType = "application/json; charset=utf-8";
	if (untagged) {
		res.setHeader("ETag", etag(json, { weak: true }));
		if (clientHoldsIt(req, res)) return notModified(ctx);
	}
	if (encoding === null || Buffer.byteLength(json) < COMPRESS_FROM_BYTES) return json;
	ctx.meta.$responseHeaders = { ...ctx.meta.$responseHeaders, "Content-Encoding": encoding };
	return compress(json, encoding);
}
