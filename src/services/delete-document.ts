import { isoNow } from '../domain/clock.js';
import { journal, removeUnreferencedBlobs } from '../store/blob-locks.js';
import { deleteDocumentRows, softDeleteDocument } from '../store/documents.js';
import { releaseRevisionBytes } from '../store/revisions.js';
import { recordEvent } from '../webhooks/events.js';
import type { Deps, Principal } from './deps.js';
import { isLive } from './events.js';

/**
 * `DELETE /documents/{id}`: soft delete hides the document; permanent delete removes its rows
 * (fields and revisions go with them), then the blobs no other row still uses.
 */
export async function deleteDocument(
  deps: Deps,
  principal: Principal,
  input: { documentId: string; permanent: boolean; onCleanupError?: (error: unknown) => void },
): Promise<void> {
  const { store, blobs, clock } = deps;
  const { workspaceId } = principal;
  const id = input.documentId;
  if (!input.permanent) {
    await store.db.transaction().execute(async (trx) => {
      await softDeleteDocument(trx, workspaceId, id, isoNow(clock));
      await recordEvent(trx, workspaceId, 'document_deleted', { id });
    });
    return;
  }
  const hashes = await store.db.transaction().execute(async (trx) => {
    // The files its revisions keep go with them (the rows cascade); today they are the document's
    // own. Their snapshots' bytes go back to the workspace's budget.
    await releaseRevisionBytes(trx, 'document', workspaceId, id);
    // One soft-deleted before was announced then.
    const live = await isLive(trx, 'documents', workspaceId, id);
    const gone = await deleteDocumentRows(trx, workspaceId, id);
    // In the blob journal with the delete: a crash before the files are removed leaves entries
    // that the sweep settles (blob-locks.ts).
    await journal(trx, gone, 'delete');
    if (live) await recordEvent(trx, workspaceId, 'document_deleted', { id });
    return gone;
  });
  // After the rows are gone. A crash or an error before this leaves unreferenced blobs and their
  // journal entries, which the sweeps settle; the document is gone all the same.
  await removeUnreferencedBlobs(store, blobs, hashes).catch((error: unknown) => input.onCleanupError?.(error));
}
