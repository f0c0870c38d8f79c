import crypto from 'node:crypto';
import fs from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Staging, TempBlob } from '../blobs/staging.js';
import { isoNow } from '../domain/clock.js';
import { newId } from '../domain/ids.js';
import { analyzeUpload, MIME } from '../files/analyze.js';
import { cleanup as cleanupRendition } from '../files/libreoffice.js';
import { removeUnreferencedBlobs, withCommittedBlobs } from '../store/blob-locks.js';
import { insertDocument, type DocumentView } from '../store/documents.js';
import { recordEvent } from '../webhooks/events.js';
import type { Deps, Principal } from './deps.js';
import { checkDocumentTitle } from './document-title.js';

/** What the transport read of an upload: the file went to the temporary blob it was given. */
export interface ReceivedUpload {
  filename: string;
  title: string | undefined;
  sha256: string;
  sizeBytes: number;
}

/** A stream that hashes (SHA-256) and counts what passes through it. */
export function hashingCounter() {
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

/**
 * `POST /documents`: `input.receive` streams the client's file into the temporary blob it is
 * given (the body is never held in memory); then the file is read (type, pages), a DOCX's PDF
 * rendition made, the files committed and the row written; temporary files are removed whatever
 * happens. Throws `UnsupportedFileType`, `UnreadableDocument`, `QueueFull` or an `AppError`.
 */
export async function uploadDocument(
  deps: Deps,
  principal: Principal,
  input: { receive(temp: TempBlob): Promise<ReceivedUpload> },
): Promise<DocumentView> {
  const { store, blobs, staging } = deps;
  const { workspaceId } = principal;
  const temp = await staging.createTemp();
  let rendition: { temp: TempBlob; sha256: string; size: number } | null = null;
  let renditionPath: string | null = null;
  try {
    const upload = await input.receive(temp);
    const title = checkDocumentTitle(upload.title) ?? [...upload.filename].slice(0, 200).join('');
    const analysis = await analyzeUpload(temp.path, deps, workspaceId);
    renditionPath = analysis.renditionPath;
    if (renditionPath) rendition = await copyIntoTemp(staging, renditionPath);

    // Files first, then the row, in one section that owns these hashes (the database's write
    // lock is taken only for the row): a crash in between leaves only unreferenced blobs and
    // their journal entries, which the sweeps settle; never a row without its file.
    const hashes = rendition ? [upload.sha256, rendition.sha256] : [upload.sha256];
    const now = isoNow(deps.clock);
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
    try {
      return await withCommittedBlobs(
        store,
        hashes,
        async () => {
          await blobs.put(temp.path, upload.sha256, upload.sizeBytes);
          if (rendition) await blobs.put(rendition.temp.path, rendition.sha256, rendition.size);
        },
        async (trx) => {
          const document = await insertDocument(trx, row);
          await recordEvent(trx, principal.workspaceId, 'document_created', { document });
          return document;
        },
      );
    } catch (error) {
      await removeUnreferencedBlobs(store, blobs, hashes).catch(() => {});
      throw error;
    }
  } finally {
    await temp.discard();
    if (rendition) await rendition.temp.discard();
    if (renditionPath) await cleanupRendition(renditionPath);
  }
}
