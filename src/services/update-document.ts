import { AppError } from '../domain/errors.js';
import { assertForwardTransition, type Status } from '../domain/status.js';
import { toDocument, updateDocumentRow, type DocumentView } from '../store/documents.js';
import { lockLiveDocument, nextStamp } from '../store/live.js';
import { parentStamp, withVersionRetry } from '../store/revisions.js';
import type { DocumentRow } from '../store/schema.js';
import type { Deps, Principal } from './deps.js';
import { checkDocumentTitle } from './document-title.js';
import { documentUpdated } from './events.js';
import { optionsOf, publishDocumentLocked } from './publish.js';

/**
 * `PUT /documents/{id}`, as `updateForm`: a new title, a status change (archive, restore), and
 * `status: "published"` publishes unless there is nothing to publish.
 */
export async function updateDocument(
  deps: Deps,
  principal: Principal,
  input: { documentId: string; title?: string; status?: Status },
): Promise<DocumentView> {
  const { store, clock } = deps;
  const { workspaceId } = principal;
  const id = input.documentId;
  const patch = { title: checkDocumentTitle(input.title), status: input.status };
  const publishing = optionsOf(deps, principal, null);
  return withVersionRetry(() => store.db.transaction().execute(async (trx) => {
    const row = await lockLiveDocument(trx, store.dialect, workspaceId, id);
    const current = row.status as Status;
    if (patch.status !== undefined) assertForwardTransition('document', current, patch.status);
    if (current === 'archived' && patch.title !== undefined) {
      throw new AppError('document_not_editable', 'This document is archived and read only.');
    }
    const changes: Partial<DocumentRow> = {};
    if (patch.title !== undefined && patch.title !== row.title) {
      changes.title = patch.title;
      changes.has_unpublished_changes = 1;
    }
    // Publishing sets the status itself, with the revision.
    if (patch.status !== undefined && patch.status !== current && patch.status !== 'published') changes.status = patch.status;
    let updated = row;
    if (Object.keys(changes).length > 0) {
      changes.updated_at = nextStamp(row.updated_at, clock.now());
      await updateDocumentRow(trx, id, changes);
      updated = { ...row, ...changes };
      await documentUpdated(trx, workspaceId, id);
    }
    if (patch.status === 'published') {
      const published = await publishDocumentLocked(clock, trx, updated, publishing);
      if (published) return published.document;
      // Nothing to publish: the draft equals its last revision (and is marked so now, which moved
      // its stamp when it was marked otherwise).
      updated = { ...updated, has_unpublished_changes: 0, updated_at: updated.has_unpublished_changes ? await parentStamp(trx, 'document', id) : updated.updated_at };
    }
    return toDocument(updated);
  }));
}
