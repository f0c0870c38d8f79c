import crypto from 'node:crypto';
import fs from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import type { Static } from 'typebox';
import type { BlobStore, TempBlob } from '../../blobs/store.js';
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
  insertDocument,
  listDocuments,
  listFields,
  toDocument,
  updateDocument,
} from '../../store/documents.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { keyIdOf, workspaceOf } from '../principal.js';
import { Deleted, Ok, OkList, responses } from '../schemas/common.js';
import { DocumentParams, DocumentSchema, DocumentWithFields, ListDocumentsQuery, UpdateDocumentBody } from '../schemas/documents.js';
import { DeleteQuery, NoQuery } from '../schemas/forms.js';

export interface DocumentRouteDeps extends AnalyzeDeps {
  store: Store;
  blobs: BlobStore;
  maxUploadBytes: number;
  /** Bytes of revision snapshots one workspace may store (see `PublishOptions.budgetBytes`). */
  revisionBytesPerWorkspace?: number;
  uploads: UploadSlots;
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

/** Hashes `file` into a new temporary blob (a LibreOffice rendition, made outside the blob store). */
async function copyIntoTemp(blobs: BlobStore, file: string): Promise<{ temp: TempBlob; sha256: string }> {
  const temp = await blobs.createTemp();
  const counter = hashingCounter();
  try {
    await pipeline(fs.createReadStream(file), counter.stream, temp.stream());
  } catch (error) {
    await temp.discard();
    throw error;
  }
  return { temp, sha256: counter.digest() };
}

export function documentRoutes(app: FastifyInstance, deps: DocumentRouteDeps): void {
  const { store, blobs } = deps;
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
    const temp = await blobs.createTemp();
    let rendition: { temp: TempBlob; sha256: string } | null = null;
    let renditionPath: string | null = null;
    try {
      const upload = await receive(request, temp, deps.maxUploadBytes);
      const title = checkTitle(upload.title) ?? [...upload.filename].slice(0, 200).join('');
      const analysis = await analyzeUpload(temp.path, deps, workspaceId);
      renditionPath = analysis.renditionPath;
      if (renditionPath) rendition = await copyIntoTemp(blobs, renditionPath);

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
            await blobs.commit(temp, upload.sha256);
            if (rendition) await blobs.commit(rendition.temp, rendition.sha256);
          },
          (trx) => insertDocument(trx, row),
        );
      } catch (error) {
        await removeUnreferenced(hashes).catch(() => {});
        throw error;
      }
      reply.code(201).header('location', `/api/v1/documents/${document.id}`);
      return { success: true, data: document };
    } finally {
      await temp.discard();
      if (rendition) await rendition.temp.discard();
      if (renditionPath) await cleanupRendition(renditionPath);
    }
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
      return listEnvelope(items, total, page);
    },
  });

  app.get<{ Params: Static<typeof DocumentParams> }>('/api/v1/documents/:id', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'Get a document with its fields', params: DocumentParams, querystring: NoQuery, response: responses(200, Ok(DocumentWithFields)) },
    handler: async (request) => {
      const row = await getDocumentRow(store.db, workspaceOf(request), documentId(request.params.id));
      return { success: true, data: { ...toDocument(row), fields: await listFields(store.db, row.id) } };
    },
  });

  app.get<{ Params: Static<typeof DocumentParams> }>('/api/v1/documents/:id/file', {
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

  app.put<{ Params: Static<typeof DocumentParams>; Body: Static<typeof UpdateDocumentBody> }>('/api/v1/documents/:id', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Update title or status', params: DocumentParams, querystring: NoQuery, body: UpdateDocumentBody, response: responses(200, Ok(DocumentSchema)) },
    handler: async (request) => {
      const id = documentId(request.params.id);
      const document = await updateDocument(store, workspaceOf(request), id, {
        title: checkTitle(request.body.title),
        status: request.body.status,
      }, { keyId: keyIdOf(request), budgetBytes: deps.revisionBytesPerWorkspace });
      return { success: true, data: document };
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
