import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { MIME } from '../files/analyze.js';
import { readPageDimensions, toDocument, type DocumentHead, type DocumentView } from '../store/documents.js';
import type { Database } from '../store/schema.js';
import { LIST_STEP_PAGES } from './list-streams.js';
import type { RouteDeps } from './route-deps.js';

/** The name a client gave its file, without any folder part or control characters, at most 255 characters. */
export function cleanFilename(raw: string | undefined): string {
  const base = (raw ?? '').split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  // Control characters, and bidirectional overrides that could disguise the name's extension.
  const clean = base.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '').trim();
  return [...clean].slice(0, 255).join('') || 'document';
}

/** `attachment; filename="…"` with an ASCII fallback and the exact name in RFC 5987 form. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/**
 * The live document as answered (create, list, get, update, publish): with a `downloadUrl` made now
 * (a presigned URL of the store, or one formsign serves). Revision snapshots never pass through here.
 */
export async function presentDocument(deps: RouteDeps, request: FastifyRequest, document: DocumentView): Promise<DocumentView & { downloadUrl: string }> {
  const { signer, publicBaseUrl, expiresS } = deps.downloads;
  const presigned = await deps.blobs.presign(document.sha256, {
    expiresInS: expiresS,
    contentType: MIME[document.fileType],
    contentDisposition: contentDisposition(document.originalFilename),
  });
  if (presigned) return { ...document, downloadUrl: presigned };
  const expires = Math.floor(deps.clock.now() / 1000) + expiresS;
  const base = publicBaseUrl ?? `${request.protocol}://${request.host}`;
  return { ...document, downloadUrl: `${base}${document.originalUrl}?expires=${expires}&signature=${signer.sign(document.id, expires)}` };
}

/** Stands in for `pageDimensions` until the stored text replaces it (unguessable: no title can hold it). */
const DIMENSIONS_MARK = `\u0000pageDimensions:${crypto.randomBytes(16).toString('hex')}`;
const DIMENSIONS_MARK_JSON = JSON.stringify(DIMENSIONS_MARK);

/**
 * The live document as answered (`presentDocument`), as JSON, with its `pageDimensions` spliced in
 * as stored rather than parsed and serialised again: a document may have 10,000 pages (260 KB of
 * them), and a list of 100 such documents took 1.7–2.9 s of the event loop through the schema's
 * serialiser (docs/decisions.md). The text was written by the upload from the same array.
 */
export async function presentDocumentJson(deps: RouteDeps, request: FastifyRequest, head: DocumentHead, pageDimensions: string): Promise<string> {
  const marked = await presentDocument(deps, request, toDocument(head, DIMENSIONS_MARK as unknown as DocumentView['pageDimensions']));
  const text = JSON.stringify(marked);
  const at = text.indexOf(DIMENSIONS_MARK_JSON);
  return `${text.slice(0, at)}${pageDimensions}${text.slice(at + DIMENSIONS_MARK_JSON.length)}`;
}

/** `heads` in consecutive runs of at most `LIST_STEP_PAGES` pages (a longer document is a run of its own). */
function steps(heads: DocumentHead[]): DocumentHead[][] {
  const runs: DocumentHead[][] = [];
  let pages = Infinity;
  for (const head of heads) {
    const count = Number(head.page_count);
    if (pages + count > LIST_STEP_PAGES) {
      runs.push([]);
      pages = 0;
    }
    runs.at(-1)!.push(head);
    pages += count;
  }
  return runs;
}

/**
 * `GET /documents`: the envelope of `listEnvelope`, its documents written by `presentDocumentJson`
 * with their page sizes read a step (`LIST_STEP_PAGES`) at a time. One step: the whole answer as a
 * string. More: a stream (`ListStreams`) that reads the next step's page sizes only when the
 * client, or the compressor, has taken the last one. A document deleted for good between the page
 * and its sizes being read is left out: it no longer exists. Should a step fail once the answer
 * has begun, the connection is cut, so that the client cannot take a part for the whole.
 */
export async function documentListAnswer(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  db: Kysely<Database>,
  workspaceId: string,
  heads: DocumentHead[],
  meta: { total: number; page: number; limit: number },
): Promise<string | Readable> {
  const runs = steps(heads);
  const tail = `],"meta":${JSON.stringify(meta)}}`;
  let first = true;
  const write = async (run: DocumentHead[]): Promise<string> => {
    const sizes = await readPageDimensions(db, workspaceId, run.map((head) => head.id));
    let text = '';
    for (const head of run) {
      const pageDimensions = sizes.get(head.id);
      if (pageDimensions === undefined) continue;
      text += (first ? '' : ',') + (await presentDocumentJson(deps, request, head, pageDimensions));
      first = false;
    }
    return text;
  };
  if (runs.length <= 1) return `{"success":true,"data":[${runs.length === 1 ? await write(runs[0]!) : ''}${tail}`;
  const release = deps.lists.acquire(workspaceId);
  // Cut when its client takes nothing for a while (`ListStreams.idleMs`), counted from when the
  // last part was ready: not while a step waits for its turn or runs, which is not the client's doing.
  let stepping = false;
  const cut = () => {
    reply.raw.destroy();
    stream.destroy();
  };
  const idle = setTimeout(() => (stepping ? idle.refresh() : cut()), deps.lists.idleMs).unref();
  const stream = Readable.from(
    (async function* () {
      yield Buffer.from('{"success":true,"data":[');
      for (const run of runs) {
        stepping = true;
        // A step whose list was given up before its turn came does nothing.
        const part = await deps.lists.step(workspaceId, () => (stream.destroyed ? Promise.resolve('') : write(run)));
        stepping = false;
        idle.refresh();
        yield Buffer.from(part);
      }
      yield Buffer.from(tail);
    })(),
    { objectMode: false },
  );
  // The slot is given back when the stream has closed: ended, failed, or given up and its step
  // settled (a step is never abandoned in the queue: each open list has at most one there).
  stream.once('close', () => {
    clearTimeout(idle);
    release();
  });
  // Given up when the answer ends without it: the client went, or a later hook failed and the
  // stream was never sent.
  if (reply.raw.destroyed) stream.destroy();
  else reply.raw.once('close', () => stream.destroy());
  return stream;
}
