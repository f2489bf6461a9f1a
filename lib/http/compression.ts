import type { IncomingHttpHeaders } from "node:http";
import { promisify } from "node:util";
import { brotliCompress, constants, gzip } from "node:zlib";
import Negotiator from "negotiator";

/**
 * Compresses an answer for clients that ask (docs/caching.md): as a whole, in zlib's thread pool, handed to moleculer-web as bytes.
 * Not the compression package, which wraps every response and slowed all later requests (docs/caching.md, "Compression").
 */

/** Answers of at least this many bytes are compressed; smaller ones cost more to compress than they save. */
export const COMPRESS_FROM_BYTES = 1024;

export type Encoding = "br" | "gzip";

/** br first when the client rates both alike: its answers are smaller. */
const ENCODINGS: Encoding[] = ["br", "gzip"];

/** negotiator 1's `encoding`, whose `preferred` option (ours on a tie) its types do not know yet. */
type EncodingNegotiator = { encoding(available: Encoding[], options: { preferred: Encoding[] }): Encoding | undefined };

/** The encoding the request's Accept-Encoding prefers among br and gzip; null for none (or no header). */
export function chosenEncoding(headers: IncomingHttpHeaders): Encoding | null {
	if (!headers["accept-encoding"]) return null;
	const negotiator = new Negotiator({ headers }) as unknown as EncodingNegotiator;
	return negotiator.encoding(ENCODINGS, { preferred: ENCODINGS }) ?? null;
}

const compressors: Record<Encoding, (text: string | Buffer) => Promise<Buffer>> = {
	br: text => promisify(brotliCompress)(text, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } }),
	gzip: text => promisify(gzip)(text),
};

/** `text` compressed with `encoding`, off the event loop. */
export function compress(text: string | Buffer, encoding: Encoding): Promise<Buffer> {
	return compressors[encoding](text);
}
