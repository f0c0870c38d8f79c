import { isoNow } from '../domain/clock.js';
import { deleteFormRow, softDeleteForm } from '../store/forms.js';
import { releaseRevisionBytes } from '../store/revisions.js';
import type { Deps, Principal } from './deps.js';

/** `DELETE /forms/{id}`: soft delete hides the form; permanent delete removes it (also when already soft-deleted). */
export async function deleteForm(deps: Deps, principal: Principal, input: { formId: string; permanent: boolean }): Promise<void> {
  const { store, clock } = deps;
  const { workspaceId } = principal;
  const { formId: id } = input;
  if (input.permanent) {
    await store.db.transaction().execute(async (trx) => {
      // Its revisions go with it (the rows cascade): their bytes go back to the workspace's budget.
      await releaseRevisionBytes(trx, 'form', workspaceId, id);
      await deleteFormRow(trx, workspaceId, id);
    });
    return;
  }
  await softDeleteForm(store.db, workspaceId, id, isoNow(clock));
}
