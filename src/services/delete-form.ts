import { isoNow } from '../domain/clock.js';
import { deleteFormRow, softDeleteForm } from '../store/forms.js';
import { releaseRevisionBytes } from '../store/revisions.js';
import { recordEvent } from '../webhooks/events.js';
import type { Deps, Principal } from './deps.js';
import { isLive } from './events.js';

/** `DELETE /forms/{id}`: soft delete hides the form; permanent delete removes it (also when already soft-deleted). */
export async function deleteForm(deps: Deps, principal: Principal, input: { formId: string; permanent: boolean }): Promise<void> {
  const { store, clock } = deps;
  const { workspaceId } = principal;
  const { formId: id } = input;
  if (input.permanent) {
    await store.db.transaction().execute(async (trx) => {
      // Its revisions go with it (the rows cascade): their bytes go back to the workspace's budget.
      await releaseRevisionBytes(trx, 'form', workspaceId, id);
      // One soft-deleted before was announced then.
      const live = await isLive(trx, 'forms', workspaceId, id);
      await deleteFormRow(trx, workspaceId, id);
      if (live) await recordEvent(trx, workspaceId, 'form_deleted', { id });
    });
    return;
  }
  await store.db.transaction().execute(async (trx) => {
    await softDeleteForm(trx, workspaceId, id, isoNow(clock));
    await recordEvent(trx, workspaceId, 'form_deleted', { id });
  });
}
