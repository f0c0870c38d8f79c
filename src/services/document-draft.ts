import type { Transaction } from 'kysely';
import { AppError } from '../domain/errors.js';
import { markDocumentChanged } from '../store/documents.js';
import { lockLiveDocument } from '../store/live.js';
import type { Database, DocumentRow } from '../store/schema.js';
import type { Deps } from './deps.js';
import { documentUpdated } from './events.js';

/**
 * Every change of a document's draft (its fields) goes through here: in one transaction holding
 * the document's row lock, after checking that the document exists in the workspace and is not
 * archived, runs `work`; then marks the draft changed, unless `work` answers `{ changed: false }`.
 * The transaction commits when this returns: the one place a field change becomes durable.
 */
export async function editDocumentDraft<T>(
  deps: Pick<Deps, 'store' | 'clock'>,
  workspaceId: string,
  documentId: string,
  work: (trx: Transaction<Database>, document: DocumentRow) => Promise<T>,
): Promise<T> {
  const { store, clock } = deps;
  return store.db.transaction().execute(async (trx) => {
    const document = await lockLiveDocument(trx, store.dialect, workspaceId, documentId);
    if (document.status === 'archived') throw new AppError('document_not_editable', 'This document is archived and read only: its fields cannot change.');
    const result = await work(trx, document);
    const unchanged = typeof result === 'object' && result !== null && (result as { changed?: boolean }).changed === false;
    if (!unchanged) {
      await markDocumentChanged(trx, document, clock.now());
      await documentUpdated(trx, workspaceId, documentId);
    }
    return result;
  });
}
