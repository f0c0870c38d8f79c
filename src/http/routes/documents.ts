import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import type { Static } from 'typebox';
import type { TempBlob } from '../../blobs/staging.js';
import { sha256Counter } from '../../blobs/sha256.js';
import { BlobNotFound, UploadGone, type ByteRange } from '../../blobs/store.js';
import { AppError, invalid } from '../../domain/errors.js';
import { UnsupportedFileType } from '../../files/analyze.js';
import { ReaderUnavailable, UnreadableDocument } from '../../files/errors.js';
import { QueueFull } from '../../files/fair-queue.js';
import { deleteDocument } from '../../services/delete-document.js';
import { updateDocument } from '../../services/update-document.js';
import { uploadDocument, type ReceivedUpload } from '../../services/upload-document.js';
import { getDocumentRow, getSignedDocumentRow, listDocuments, type DocumentView } from '../../store/documents.js';
import type { DocumentRow } from '../../store/schema.js';
import { documentFieldsJson } from '../../services/read-document.js';
import { tagOfStamp } from '../conditional.js';
import { documentId } from '../params.js';
import { sendShared } from '../precompressed.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { isSignedQuery } from '../guard.js';
import { principalOf, workspaceOf } from '../principal.js';
import type { RouteDeps } from '../route-deps.js';
import { DeleteQuery, Deleted, NoQuery, Ok, OkList, responses } from '../schemas/common.js';
import { cleanFilename, contentDisposition, documentListAnswer, presentDocument, presentDocumentJson } from '../document-answer.js';
import { DocumentParams, DocumentSchema, DocumentWithFields, FileQuery, ListDocumentsQuery, UpdateDocumentBody } from '../schemas/documents.js';

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
      const counter = sha256Counter();
      await pipeline(part.file, counter.stream, temp.stream());
      if (part.file.truncated) throw fileTooLarge(maxBytes);
      received = { filename: cleanFilename(part.filename), sha256: await counter.digest(), sizeBytes: counter.bytes() };
    } else if (part.fieldname === 'title') {
      if (typeof part.value !== 'string') throw invalid('title', 'must be text');
      title = part.value;
    } else if (part.fieldname === 'file') {
      throw invalid('file', 'must be a file part (with a filename in its Content-Disposition), not a text value');
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
  // Received for longer than the sweep's grace period (another server's, with a shorter request
  // time limit, may have swept it): nothing of it was kept; the client may send it again.
  if (error instanceof UploadGone) return new AppError('unavailable', 'The upload took longer than the service keeps an unfinished upload; nothing was stored. Send it again.', { 'retry-after': '1' });
  if (error instanceof ReaderUnavailable) {
    return new AppError('unavailable', `The service cannot read uploads just now (${error.message}); nothing was stored. Send it again.`, { 'retry-after': '1' });
  }
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

/** The media type of a Content-Type header, lower case, without its parameters ('' when absent). */
function mediaType(header: string | undefined): string {
  return (header ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

/** Documents: upload, list, read, download, update (title, status), delete. */
export function documentRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { store, blobs } = deps;
  const tags = ['Documents'];

  const present = (request: FastifyRequest, document: DocumentView) => presentDocument(deps, request, document);

  app.post('/documents', {
    config: { grants: ['documents:write'] },
    schema: {
      tags,
      summary: 'Upload a PDF or DOCX (multipart/form-data: file, optional title)',
      consumes: ['multipart/form-data'],
      querystring: NoQuery,
      response: responses(201, Ok(DocumentSchema), { location: 'The document' }),
    },
    // Before any body parser runs: a JSON (or any other) body is refused as 415 whatever it holds,
    // malformed or over the JSON limit, and is not read.
    // (`request.isMultipart()` is only known once the multipart parser has run: the header is read here.)
    preParsing: async (request) => {
      if (mediaType(request.headers['content-type']) !== 'multipart/form-data') {
        throw new AppError('unsupported_media_type', 'Upload the document as multipart/form-data with a part named "file" (and optionally "title").', { connection: 'close' });
      }
    },
    handler: async (request, reply) => {
      const principal = principalOf(request);
      let release: (() => void) | null = null;
      try {
        release = deps.uploads.acquire(principal.workspaceId);
        const document = await uploadDocument(deps, principal, { receive: (temp) => receive(request, temp, deps.maxUploadBytes) });
        reply.code(201).header('location', `/api/v1/documents/${document.id}`);
        return { success: true, data: await present(request, document) };
      } catch (error) {
        // The rest of a refused upload is not read: the connection cannot be used again.
        reply.header('connection', 'close');
        throw asUploadError(error, deps.maxUploadBytes);
      } finally {
        release?.();
      }
    },
  });

  app.get<{ Querystring: Static<typeof ListDocumentsQuery> }>('/documents', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'List documents, newest first', querystring: ListDocumentsQuery, response: responses(200, OkList(DocumentSchema)) },
    handler: async (request, reply) => {
      const page = applyPagination(request.query);
      const workspaceId = workspaceOf(request);
      const { items, total } = await listDocuments(store.db, workspaceId, { status: request.query.status }, page);
      // Written out, each document with its page sizes as stored, in the envelope `listEnvelope`
      // makes; a list of long documents (megabytes of page sizes) is streamed (documentListAnswer).
      const answer = await documentListAnswer(deps, request, reply, store.db, workspaceId, items, listEnvelope([], total, page).meta);
      return reply.type('application/json; charset=utf-8').send(answer);
    },
  });

  app.get<{ Params: Static<typeof DocumentParams> }>('/documents/:id', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'Get a document with its fields', params: DocumentParams, querystring: NoQuery, response: responses(200, Ok(DocumentWithFields)) },
    handler: async (request, reply) => {
      const row = await getDocumentRow(store.db, workspaceOf(request), documentId(request.params.id));
      // The answer in parts: the document (with its downloadUrl, made now, and its page sizes as
      // stored: presentDocumentJson) before its fields, and the fields, made once per stamp of
      // the document. The fields are JSON.stringify's: ten times faster than the schema's
      // serialiser on 5,000 of them (40 ms against 4), and the same values, since a field's view
      // holds exactly its schema's keys (test/api/document-read.test.ts compares them with the
      // fields list's answer).
      const document = await presentDocumentJson(deps, request, row, row.page_dimensions);
      const head = `{"success":true,"data":${document.slice(0, -1)},"fields":`;
      const tail = '}}';
      const fields = await documentFieldsJson(deps, row);
      // Tagged here (as the tag hook would: by the document's stamp), since a compressed answer cannot be read for its tag.
      reply.header('etag', tagOfStamp(row.id, row.updated_at));
      // Compressed once for the reads that share the parts around the fields (the same downloadUrl,
      // within a second); those of the two latest are kept.
      return sendShared(request, reply, fields, head + tail, () => Buffer.concat([Buffer.from(head), fields, Buffer.from(tail)]), { maxVariants: 2 });
    },
  });

  app.get<{ Params: Static<typeof DocumentParams>; Querystring: Static<typeof FileQuery> }>('/documents/:id/file', {
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
      if (isSignedQuery(request.query)) {
        const verdict = deps.downloads.signer.verify(id, expires ?? '', signature ?? '', deps.clock.now());
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
        // A row whose file is gone (lost outside formsign: the crash guarantees never leave one):
        // said as such, as the parse job says it, not as an unexplained failure.
        if (error instanceof BlobNotFound) {
          throw new AppError('file_unavailable', 'The stored file of this document is missing from the service\'s file store, so it cannot be sent; this is the service\'s fault and has been logged. Quote the X-Request-Id to its operator.');
        }
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

  app.put<{ Params: Static<typeof DocumentParams>; Body: Static<typeof UpdateDocumentBody> }>('/documents/:id', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Update title or status', params: DocumentParams, querystring: NoQuery, body: UpdateDocumentBody, response: responses(200, Ok(DocumentSchema)) },
    handler: async (request) => {
      const document = await updateDocument(deps, principalOf(request), {
        documentId: documentId(request.params.id),
        title: request.body.title,
        status: request.body.status,
      });
      return { success: true, data: await present(request, document) };
    },
  });

  app.delete<{ Params: Static<typeof DocumentParams>; Querystring: Static<typeof DeleteQuery> }>('/documents/:id', {
    config: { grants: ['documents:delete'] },
    schema: { tags, summary: 'Delete a document (soft; ?permanent=true removes it and its file)', params: DocumentParams, querystring: DeleteQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const id = documentId(request.params.id);
      // A file that cannot be removed is logged; the answer is 200 all the same, since the
      // document is gone (the start-up sweep removes the file).
      await deleteDocument(deps, principalOf(request), {
        documentId: id,
        permanent: request.query.permanent === true,
        onCleanupError: (error) => request.log.warn({ err: error }, 'could not remove a stored file'),
      });
      return { success: true, data: { id, deleted: true } };
    },
  });
}
