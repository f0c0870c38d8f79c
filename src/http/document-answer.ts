import crypto from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { MIME } from '../files/analyze.js';
import { toDocument, type DocumentView } from '../store/documents.js';
import type { DocumentRow } from '../store/schema.js';
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
export async function presentDocumentJson(deps: RouteDeps, request: FastifyRequest, row: DocumentRow): Promise<string> {
  const marked = await presentDocument(deps, request, toDocument(row, DIMENSIONS_MARK as unknown as DocumentView['pageDimensions']));
  const text = JSON.stringify(marked);
  const at = text.indexOf(DIMENSIONS_MARK_JSON);
  return `${text.slice(0, at)}${row.page_dimensions}${text.slice(at + DIMENSIONS_MARK_JSON.length)}`;
}
