import fs from 'node:fs';
import { Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { sha256Counter } from '../blobs/sha256.js';
import type { Staging, TempBlob } from '../blobs/staging.js';
import type { BlobUpload } from '../blobs/store.js';
import { isoNow } from '../domain/clock.js';
import { newId } from '../domain/ids.js';
import { analyzeUpload, MIME } from '../files/analyze.js';
import { cleanup as cleanupRendition } from '../files/libreoffice.js';
import { abandonUpload, beginUpload, commitUpload, removeUnreferencedBlobs, withCommittedBlobs, type StoreUpload } from '../store/blob-locks.js';
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

/** Hashes `file` into a new staged file (a LibreOffice rendition, made outside the staging area). */
async function copyIntoTemp(staging: Staging, file: string): Promise<{ temp: TempBlob; sha256: string; size: number }> {
  const temp = await staging.createTemp();
  const counter = sha256Counter();
  try {
    await pipeline(fs.createReadStream(file), counter.stream, temp.stream());
    return { temp, sha256: await counter.digest(), size: counter.bytes() };
  } catch (error) {
    await temp.discard();
    throw error;
  }
}

/**
 * Writes every chunk both to `file` (the staged copy, which the checks read) and into the blob
 * store's upload, and asks for the next chunk when both took it: the store is written while the
 * body arrives, and a slow store slows the receiving down instead of filling memory.
 */
function teeStream(file: Writable, writer: BlobUpload): Writable {
  const tee = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      let waiting = 2;
      let called = false;
      const done = (error?: unknown) => {
        if (called) return;
        if (error) {
          called = true;
          callback(error as Error);
        } else if (--waiting === 0) {
          called = true;
          callback();
        }
      };
      writer.write(chunk).then(() => done(), done);
      if (file.write(chunk)) done();
      else file.once('drain', () => done());
    },
    final(callback) {
      file.end();
      finished(file).then(() => callback(), callback);
    },
    destroy(error, callback) {
      file.destroy();
      callback(error);
    },
  });
  file.on('error', (error) => tee.destroy(error));
  return tee;
}

/**
 * `POST /documents`: `input.receive` streams the client's file into the temporary blob it is
 * given (the body is never held in memory) and, where the blob store takes a stream (postgres,
 * s3), into the store at the same time under an upload id; then the file is read (type, pages)
 * while the store finishes, a DOCX's PDF rendition made, the files committed under their hashes
 * and the row written; temporary files, and the store's upload if it is not committed, are
 * removed whatever happens. Throws `UnsupportedFileType`, `UnreadableDocument`, `QueueFull` or
 * an `AppError`.
 */
export async function uploadDocument(
  deps: Deps,
  principal: Principal,
  input: { receive(temp: TempBlob): Promise<ReceivedUpload> },
): Promise<DocumentView> {
  const { store, blobs, staging } = deps;
  const { workspaceId } = principal;
  const temp = await staging.createTemp();
  let stored: StoreUpload | null = null;
  let done = false;
  let rendition: { temp: TempBlob; sha256: string; size: number } | null = null;
  let renditionPath: string | null = null;
  try {
    stored = await beginUpload(store, blobs, temp.path);
    const writer = stored?.writer;
    const upload = await input.receive(writer ? { ...temp, stream: () => teeStream(temp.stream(), writer) } : temp);
    const title = checkDocumentTitle(upload.title) ?? [...upload.filename].slice(0, 200).join('');
    // The store completes its upload (last chunk, multipart completion) while the file is read;
    // a store that takes the staged file whole at `put` (disk) gets it ready meanwhile (should
    // that fail, `put` meets the failure again and answers for it).
    const ending = writer ? writer.end() : blobs.prepare(temp.path).catch(() => {});
    ending.catch(() => {});
    const analysis = await analyzeUpload(temp.path, deps, workspaceId);
    await ending;
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
      const document = await withCommittedBlobs(
        store,
        hashes,
        async (db) => {
          if (stored) await commitUpload(store, db, stored, upload.sha256, upload.sizeBytes);
          else await blobs.put(temp.path, upload.sha256, upload.sizeBytes);
          if (rendition) await blobs.put(rendition.temp.path, rendition.sha256, rendition.size);
        },
        async (trx) => {
          const document = await insertDocument(trx, row);
          await recordEvent(trx, principal.workspaceId, 'document_created', { document });
          return document;
        },
      );
      done = true;
      return document;
    } catch (error) {
      await removeUnreferencedBlobs(store, blobs, hashes).catch(() => {});
      throw error;
    }
  } finally {
    // Refused or failed: the store's copy goes with its journal row (a crash leaves both to the sweep).
    if (stored && !done) await abandonUpload(store, blobs, stored).catch(() => {});
    await temp.discard();
    if (rendition) await rendition.temp.discard();
    if (renditionPath) await cleanupRendition(renditionPath);
  }
}
