import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import type { Static } from 'typebox';
import type { TempBlob } from '../../blobs/store.js';
import { AppError, invalid } from '../../domain/errors.js';
import { UnsupportedFileType } from '../../files/analyze.js';
import { UnreadableDocument } from '../../files/errors.js';
import { QueueFull } from '../../files/fair-queue.js';
import { deleteDocument } from '../../services/delete-document.js';
import { updateDocument } from '../../services/update-document.js';
import { hashingCounter, uploadDocument, type ReceivedUpload } from '../../services/upload-document.js';
import { getDocumentRow, listDocuments, toDocument } from '../../store/documents.js';
import { listFields } from '../../store/fields.js';
import { documentId } from '../params.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { principalOf, workspaceOf } from '../principal.js';
import type { RouteDeps } from '../route-deps.js';
import { DeleteQuery, Deleted, NoQuery, Ok, OkList, responses } from '../schemas/common.js';
import { DocumentParams, DocumentSchema, DocumentWithFields, ListDocumentsQuery, UpdateDocumentBody } from '../schemas/documents.js';

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

/** Documents: upload, list, read, download, update (title, status), delete. */
export function documentRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { store, blobs } = deps;
  const tags = ['Documents'];

  app.post('/documents', {
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
      const principal = principalOf(request);
      let release: (() => void) | null = null;
      try {
        release = deps.uploads.acquire(principal.workspaceId);
        const document = await uploadDocument(deps, principal, { receive: (temp) => receive(request, temp, deps.maxUploadBytes) });
        reply.code(201).header('location', `/api/v1/documents/${document.id}`);
        return { success: true, data: document };
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
    handler: async (request) => {
      const page = applyPagination(request.query);
      const { items, total } = await listDocuments(store.db, workspaceOf(request), { status: request.query.status }, page);
      return listEnvelope(items, total, page);
    },
  });

  app.get<{ Params: Static<typeof DocumentParams> }>('/documents/:id', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'Get a document with its fields', params: DocumentParams, querystring: NoQuery, response: responses(200, Ok(DocumentWithFields)) },
    handler: async (request) => {
      const row = await getDocumentRow(store.db, workspaceOf(request), documentId(request.params.id));
      return { success: true, data: { ...toDocument(row), fields: await listFields(store.db, row.id) } };
    },
  });

  app.get<{ Params: Static<typeof DocumentParams> }>('/documents/:id/file', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'Download the original file', params: DocumentParams, querystring: NoQuery },
    handler: async (request, reply) => {
      const row = await getDocumentRow(store.db, workspaceOf(request), documentId(request.params.id));
      let opened;
      try {
        opened = await blobs.open(row.sha256);
      } catch (error) {
        request.log.error({ err: error, sha256: row.sha256 }, 'stored file missing');
        throw error;
      }
      reply
        .header('content-type', row.mime_type)
        .header('content-length', String(opened.size))
        .header('content-disposition', contentDisposition(row.original_filename))
        .header('x-content-type-options', 'nosniff');
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
      return { success: true, data: document };
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
