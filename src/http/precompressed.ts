import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { negotiate } from '@fastify/accept-negotiator';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseTags } from './conditional.js';

/**
 * Large answers that many requests share (a form with its content: up to 2 MiB of JSON), sent
 * compressed once rather than once per request. Without this, 100 reads at once of the largest
 * form cost 100 compressions of 2 MiB (the server's two cores busy for seconds, other clients
 * waiting up to 1.4 s) and about 14 MB of memory each (1.4 GB in all): `bench/stall-forms.ts`,
 * attack 2b. The answer is negotiated as the compression plugin of app.ts does (br, then gzip;
 * `x-no-compression`), with its settings (brotli quality 4), so a client cannot tell the two apart.
 *
 * What is kept: per `owner` (an object that lives as long as the content it stands for, such as
 * the cached content buffer of one form at one stamp: a WeakMap, so nothing outlives it), the
 * compressed bytes of up to MAX_VARIANTS answers (`variant`: whatever else makes up the answer,
 * such as the form's own JSON). Requests that miss together share one compression.
 */

/** As the compression plugin (app.ts): answers below this are sent as they are. */
export const COMPRESS_THRESHOLD = 1024;
export const BROTLI_QUALITY = 4;

const ENCODINGS = ['br', 'gzip'] as const;
type Encoding = (typeof ENCODINGS)[number];
const MAX_VARIANTS = 8;
const NOTHING = Buffer.alloc(0);

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);
const kept = new WeakMap<object, Map<string, Promise<Buffer>>>();

/** The encoding the compression plugin would choose for this request, or null (none). */
export function chosenEncoding(request: FastifyRequest): Encoding | null {
  if (request.headers['x-no-compression'] !== undefined) return null;
  const header = request.headers['accept-encoding'];
  if (typeof header !== 'string') return null;
  // As the plugin: `*` and `x-gzip` stand for gzip.
  const chosen = negotiate(header.toLowerCase().replace(/\*|x-gzip/gu, 'gzip'), [...ENCODINGS]);
  return chosen === 'br' || chosen === 'gzip' ? chosen : null;
}

function compress(encoding: Encoding, body: Buffer): Promise<Buffer> {
  return encoding === 'br' ? brotli(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } }) : gzip(body);
}

/**
 * Sends `body()` (JSON, or of `type`) compressed from what is kept for `owner` and `variant` when
 * the request accepts a compression, else as it is. `body` is only called when its bytes are
 * needed. At most `maxVariants` compressed answers are kept per owner (the oldest out first).
 */
export async function sendShared(
  request: FastifyRequest,
  reply: FastifyReply,
  owner: object,
  variant: string,
  body: () => Buffer,
  { maxVariants = MAX_VARIANTS, type = 'application/json; charset=utf-8' }: { maxVariants?: number; type?: string } = {},
): Promise<FastifyReply> {
  reply.type(type);
  // Revalidated with the tag the handler set: the tag hook answers 304 (conditional.ts), so
  // nothing is built or compressed for it.
  const tag = reply.getHeader('etag');
  const wanted = request.headers['if-none-match'];
  if (tag !== undefined && typeof wanted === 'string') {
    const tags = parseTags(wanted);
    if (tags.includes('*') || tags.includes(String(tag))) return reply.send(NOTHING);
  }
  const encoding = chosenEncoding(request);
  if (encoding === null) return reply.send(body());
  const key = `${encoding}\n${variant}`;
  let variants = kept.get(owner);
  let compressed = variants?.get(key);
  if (compressed === undefined) {
    const bytes = body();
    // Small answers are the plugin's to leave as they are.
    if (bytes.length < COMPRESS_THRESHOLD) return reply.send(bytes);
    if (!variants) kept.set(owner, (variants = new Map()));
    // Oldest out first: a form's own JSON changes only with a new stamp, so more are rare.
    while (variants.size >= Math.max(1, maxVariants)) variants.delete(variants.keys().next().value!);
    const made = compress(encoding, bytes);
    const mine = variants;
    mine.set(key, made);
    // A failed compression is not kept (unless another has taken its place meanwhile).
    made.catch(() => mine.get(key) === made && mine.delete(key));
    compressed = made;
  }
  const payload = await compressed;
  // As the plugin: Vary gains accept-encoding, whatever it held.
  const vary = reply.getHeader('vary');
  reply.header('vary', vary === undefined ? 'accept-encoding' : `${String(vary)}, accept-encoding`);
  // The plugin leaves an answer whose Content-Encoding is set as it is.
  return reply.header('content-encoding', encoding).send(payload);
}
