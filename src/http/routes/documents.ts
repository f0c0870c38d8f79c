import crypto from 'node:crypto';
import fs from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import type { Static } from 'typebox';
import type { DownloadSigner } from '../../blobs/download-url.js';
import type { Staging, TempBlob } from '../../blobs/staging.js';
import type { BlobStore, ByteRange } from '../../blobs/store.js';
import { AppError, invalid } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { analyzeUpload, MIME, UnsupportedFileType, type AnalyzeDeps } from '../../files/analyze.js';
import { UnreadableDocument } from '../../files/errors.js';
import { QueueFull } from '../../files/fair-queue.js';
import { cleanup as cleanupRendition } from '../../files/libreoffice.js';
import { removeUnreferencedBlobs, withCommittedBlobs } from '../../store/blob-locks.js';
import type { Store } from '../../store/db.js';
import { pathId } from '../params.js';
import type { UploadSlots } from '../slow-clients.js';
import {
  deleteDocument,
  getDocumentRow,
  getSignedDocumentRow,
  insertDocument,
  listDocuments,
  listFields,
  toDocument,
  updateDocument,
  type DocumentView,
} from '../../store/documents.js';
import type { DocumentRow } from '../../store/schema.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { keyIdOf, workspaceOf } from '../principal.js';
import { Deleted, Ok, OkList, responses } from '../schemas/common.js';
import { DocumentParams, DocumentSchema, DocumentWithFields, FileQuery, ListDocumentsQuery, UpdateDocumentBody } from '../schemas/documents.js';
import { DeleteQuery, NoQuery } from '../schemas/forms.js';

export interface DocumentRouteDeps extends AnalyzeDeps {
  store: Store;
  blobs: BlobStore;
  /** Where uploads are received before they are accepted and put into `blobs`. */
  staging: Staging;
  /** Signed download URLs (`downloadUrl`). */
  downloads: DownloadUrlDeps;
  maxUploadBytes: number;
  /** Bytes of revision snapshots one workspace may store (see `PublishOptions.budgetBytes`). */
  revisionBytesPerWorkspace?: number;
  uploads: UploadSlots;
}


export interface DownloadUrlDeps {
  signer: DownloadSigner;
  /** `PUBLIC_BASE_URL`; `null`: the scheme and host the request came to. */
  publicBaseUrl: string | null;
  expiresS: number;
  /** Epoch milliseconds. */
  now: () => number;
}

export const documentId = (id: string): string => pathId('Document', id);

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

/** Whether an `If-None-Match` header names `etag` (or is `*`); weak tags compare by their value. */
function matchesEtag(header: string | string[] | undefined, etag: string): boolean {
  if (typeof header !== 'string') return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

/**
 * One byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`) of a file of `size` bytes, clamped to it;
 * `null` for a header this server does not honour (several ranges, another unit, a malformed one:
 * the whole file is sent, as RFC 9110 allows); `unsatisfiable` for a range past the end.
 */
export function parseRange(header: string, size: number): ByteRange | null | 'unsatisfiable' {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (match[2] !== '' && Number(match[2]) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

function hashingCounter() {
  const hash = crypto.createHash('sha256');
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  return { stream, digest: () => hash.digest('hex'), bytes: () => bytes };
}

interface ReceivedUpload {
  filename: string;
  title: string | undefined;
  sha256: string;
  sizeBytes: number;
}

/**
 * Streams the multipart body: the `file` part goes to `temp` while it is hashed and counted (the
 * body is never held in memory); `title` is the only other part accepted.
 */
async function receive(request: FastifyRequest, temp: TempBlob, maxBytes: number): Promise<ReceivedUpload> {
  let received: Omit<ReceivedUpload, 'title'> | null = null;
  let title: string | undefined;
  const parts = request.parts({ limits: { files: 1, fileSize: maxBytes, parts: 4, fields: 2, fieldSize: 4096 } });
  for await (const part of parts) {
    if (part.type === 'file') {
      if (part.fieldname !== 'file') {
        part.file.resume();
        throw invalid(part.fieldname, 'unexpected file part; send the document as the part named "file"');
      }
      const counter = hashingCounter();
      await pipeline(part.file, counter.stream, temp.stream());
      if (part.file.truncated) throw fileTooLarge(maxBytes);
      received = { filename: cleanFilename(part.filename), sha256: counter.digest(), sizeBytes: counter.bytes() };
    } else if (part.fieldname === 'title') {
      if (typeof part.value !== 'string') throw invalid('title', 'must be text');
      title = part.value;
    } else {
      throw invalid(part.fieldname, 'unknown part (allowed: file, title)');
    }
  }
  if (!received) throw invalid('file', 'is required: send the document as a multipart/form-data part named "file"');
  return { ...received, title };
}

/** What an upload failure means for the client. */
function asUploadError(error: unknown, maxBytes: number): unknown {
  if (error instanceof AppError) return error;
  if (error instanceof UnsupportedFileType) {
    return new AppError('unsupported_file_type', 'Only PDF (starting with %PDF-) and DOCX (a ZIP holding word/document.xml) files are accepted; the type is read from the bytes, not the name.');
  }
  if (error instanceof UnreadableDocument) return new AppError('unreadable_document', `The document cannot be read: ${error.message}.`);
  if (error instanceof QueueFull) {
    return new AppError('unavailable', `The service is busy reading uploads (${error.message}); send this one again in ${error.retryAfterS} s.`, {
      'retry-after': String(error.retryAfterS),
    });
  }
  const { code, message } = error as { code?: string; message?: string };
  if (code === 'FST_REQ_FILE_TOO_LARGE') return fileTooLarge(maxBytes);
  // busboy's words for a body that is not well-formed multipart.
  if (typeof message === 'string' && /^(Multipart: |Unexpected end of (multipart data|form|file)|Malformed part header|Part terminated early|Unsupported Content-Type|Boundary required)/.test(message)) {
    return new AppError('validation_failed', 'The multipart body is malformed: send multipart/form-data with a boundary and a complete part named "file".');
  }
  return error;
}

function fileTooLarge(maxBytes: number): AppError {
  return new AppError('file_too_large', `The file is larger than ${maxBytes} bytes, the most this service accepts.`);
}

function checkTitle(title: string | undefined): string | undefined {
  if (title === undefined) return undefined;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(title)) throw invalid('title', 'must not contain control characters');
  const trimmed = title.trim();
  if (trimmed.length === 0) throw invalid('title', 'must not be blank');
  if ([...trimmed].length > 200) throw invalid('title', 'must be at most 200 characters long');
  return trimmed;
}

/** Hashes `file` into a new staged file (a LibreOffice rendition, made outside the staging area). */
async function copyIntoTemp(staging: Staging, file: string): Promise<{ temp: TempBlob; sha256: string; size: number }> {
  const temp = await staging.createTemp();
  const counter = hashingCounter();
  try {
    await pipeline(fs.createReadStream(file), counter.stream, temp.stream());
  } catch (error) {
    await temp.discard();
    throw error;
  }
  return { temp, sha256: counter.digest(), size: counter.bytes() };
}

export function documentRoutes(app: FastifyInstance, deps: DocumentRouteDeps): void {
  const { store, blobs, staging } = deps;
  const tags = ['Documents'];

  app.post('/api/v1/documents', {
    config: { grants: ['documents:write'] },
    schema: {
      tags,
      summary: 'Upload a PDF or DOCX (multipart/form-data: file, optional title)',
      consumes: ['multipart/form-data'],
      querystring: NoQuery,
      response: responses(201, Ok(DocumentSchema), { location: 'The document' }),
    },
    handler: async (request, reply) => {
      if (!request.isMultipart()) {
        throw new AppError('unsupported_media_type', 'Upload the document as multipart/form-data with a part named "file".');
      }
      const workspaceId = workspaceOf(request);
      let release: (() => void) | null = null;
      try {
        release = deps.uploads.acquire(workspaceId);
        return await storeUpload(request, reply, workspaceId);
      } catch (error) {
        // The rest of a refused upload is not read: the connection cannot be used again.
        reply.header('connection', 'close');
        throw asUploadError(error, deps.maxUploadBytes);
      } finally {
        release?.();
      }
    },
  });

  async function storeUpload(request: FastifyRequest, reply: FastifyReply, workspaceId: string) {
    const temp = await staging.createTemp();
    let rendition: { temp: TempBlob; sha256: string; size: number } | null = null;
    let renditionPath: string | null = null;
    try {
      const upload = await receive(request, temp, deps.maxUploadBytes);
      const title = checkTitle(upload.title) ?? [...upload.filename].slice(0, 200).join('');
      const analysis = await analyzeUpload(temp.path, deps, workspaceId);
      renditionPath = analysis.renditionPath;
      if (renditionPath) rendition = await copyIntoTemp(staging, renditionPath);

      // Files first, then the row, in one section that owns these hashes (the database's write
      // lock is taken only for the row): a crash in between leaves only unreferenced blobs, which
      // the sweeps remove; never a row without its file.
      const hashes = rendition ? [upload.sha256, rendition.sha256] : [upload.sha256];
      const now = new Date().toISOString();
      const row = {
        id: newId(),
        workspace_id: workspaceId,
        title,
        status: 'draft',
        original_filename: upload.filename,
        file_type: analysis.fileType,
        mime_type: MIME[analysis.fileType],
        size_bytes: upload.sizeBytes,
        sha256: upload.sha256,
        rendition_sha256: rendition?.sha256 ?? null,
        page_source: analysis.pageSource,
        page_count: analysis.pageCount,
        page_dimensions: JSON.stringify(analysis.pageDimensions),
        current_version: null,
        has_unpublished_changes: 1,
        deleted_at: null,
        created_at: now,
        updated_at: now,
      };
      let document;
      try {
        document = await withCommittedBlobs(
          store,
          hashes,
          async () => {
            await blobs.put(temp.path, upload.sha256, upload.sizeBytes);
            if (rendition) await blobs.put(rendition.temp.path, rendition.sha256, rendition.size);
          },
          (trx) => insertDocument(trx, row),
        );
      } catch (error) {
        await removeUnreferenced(hashes).catch(() => {});
        throw error;
      }
      reply.code(201).header('location', `/api/v1/documents/${document.id}`);
      return { success: true, data: await present(request, document) };
    } finally {
      await temp.discard();
      if (rendition) await rendition.temp.discard();
      if (renditionPath) await cleanupRendition(renditionPath);
    }
  }

  /** The document as answered: with a `downloadUrl` made now (a presigned URL of the store, or one formsign serves). */
  async function present(request: FastifyRequest, document: DocumentView): Promise<DocumentView & { downloadUrl: string }> {
    const { signer, publicBaseUrl, expiresS, now } = deps.downloads;
    const presigned = await blobs.presign(document.sha256, {
      expiresInS: expiresS,
      contentType: MIME[document.fileType],
      contentDisposition: contentDisposition(document.originalFilename),
    });
    if (presigned) return { ...document, downloadUrl: presigned };
    const expires = Math.floor(now() / 1000) + expiresS;
    const base = publicBaseUrl ?? `${request.protocol}://${request.host}`;
    return { ...document, downloadUrl: `${base}${document.originalUrl}?expires=${expires}&signature=${signer.sign(document.id, expires)}` };
  }

  /** Removes the blobs among `hashes` that no row refers to any more. */
  async function removeUnreferenced(hashes: string[]): Promise<void> {
    await removeUnreferencedBlobs(store, blobs, hashes);
  }

  app.get<{ Querystring: Static<typeof ListDocumentsQuery> }>('/api/v1/documents', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'List documents, newest first', querystring: ListDocumentsQuery, response: responses(200, OkList(DocumentSchema)) },
    handler: async (request) => {
      const page = applyPagination(request.query);
      const { items, total } = await listDocuments(store.db, workspaceOf(request), { status: request.query.status }, page);
      return listEnvelope(await Promise.all(items.map((item) => present(request, item))), total, page);
    },
  });

  app.get<{ Params: Static<typeof DocumentParams> }>('/api/v1/documents/:id', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'Get a document with its fields', params: DocumentParams, querystring: NoQuery, response: responses(200, Ok(DocumentWithFields)) },
    handler: async (request) => {
      const row = await getDocumentRow(store.db, workspaceOf(request), documentId(request.params.id));
      return { success: true, data: { ...(await present(request, toDocument(row))), fields: await listFields(store.db, row.id) } };
    },
  });

  app.get<{ Params: Static<typeof DocumentParams>; Querystring: Static<typeof FileQuery> }>('/api/v1/documents/:id/file', {
    config: { grants: ['documents:read'], signedDownload: true },
    schema: {
      tags,
      summary: 'Download the original file (with the key, or through a signed downloadUrl without it); Range, ETag and If-None-Match',
      params: DocumentParams,
      querystring: FileQuery,
    },
    handler: async (request, reply) => {
      const id = documentId(request.params.id);
      const { expires, signature } = request.query;
      let row: DocumentRow;
      if (signature !== undefined) {
        const verdict = deps.downloads.signer.verify(id, expires ?? '', signature, deps.downloads.now());
        if (verdict !== 'ok') {
          throw new AppError('invalid_signature', verdict === 'expired' ? 'This download URL has expired: read the document again for a new downloadUrl.' : 'This download URL is not valid (its signature does not match): use the downloadUrl exactly as given.');
        }
        row = await getSignedDocumentRow(store.db, id);
      } else {
        row = await getDocumentRow(store.db, workspaceOf(request), id);
      }
      const etag = `"${row.sha256}"`;
      const size = Number(row.size_bytes);
      reply
        .header('etag', etag)
        .header('accept-ranges', 'bytes')
        .header('cache-control', signature === undefined ? 'private, no-cache' : 'private, max-age=60')
        .header('x-content-type-options', 'nosniff');
      if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
      let range: ByteRange | null = null;
      const ifRange = request.headers['if-range'];
      if (typeof request.headers.range === 'string' && (ifRange === undefined || ifRange === etag)) {
        const asked = parseRange(request.headers.range, size);
        if (asked === 'unsatisfiable') {
          throw new AppError('range_not_satisfiable', `The file has ${size} bytes: ask for a range within bytes=0-${Math.max(0, size - 1)}.`, { 'content-range': `bytes */${size}` });
        }
        range = asked;
      }
      let opened;
      try {
        opened = await blobs.open(row.sha256, range ?? undefined);
      } catch (error) {
        request.log.error({ err: error, sha256: row.sha256, store: blobs.kind }, 'stored file cannot be read');
        throw error;
      }
      reply.header('content-type', row.mime_type).header('content-disposition', contentDisposition(row.original_filename));
      if (range) {
        reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${opened.size}`).header('content-length', String(range.end - range.start + 1));
      } else {
        reply.header('content-length', String(opened.size));
      }
      return reply.send(opened.stream);
    },
  });

  app.put<{ Params: Static<typeof DocumentParams>; Body: Static<typeof UpdateDocumentBody> }>('/api/v1/documents/:id', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Update title or status', params: DocumentParams, querystring: NoQuery, body: UpdateDocumentBody, response: responses(200, Ok(DocumentSchema)) },
    handler: async (request) => {
      const id = documentId(request.params.id);
      const document = await updateDocument(store, workspaceOf(request), id, {
        title: checkTitle(request.body.title),
        status: request.body.status,
      }, { keyId: keyIdOf(request), budgetBytes: deps.revisionBytesPerWorkspace });
      return { success: true, data: await present(request, document) };
    },
  });

  app.delete<{ Params: Static<typeof DocumentParams>; Querystring: Static<typeof DeleteQuery> }>('/api/v1/documents/:id', {
    config: { grants: ['documents:delete'] },
    schema: { tags, summary: 'Delete a document (soft; ?permanent=true removes it and its file)', params: DocumentParams, querystring: DeleteQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const id = documentId(request.params.id);
      const hashes = await deleteDocument(store.db, workspaceOf(request), id, request.query.permanent === true);
      // After the rows are gone. A crash or an error before this leaves unreferenced blobs,
      // which the start-up sweep removes; the answer is 200 all the same, since the document is gone.
      await removeUnreferenced(hashes).catch((error: unknown) => request.log.warn({ err: error }, 'could not remove a stored file'));
      return { success: true, data: { id, deleted: true } };
    },
  });
}
