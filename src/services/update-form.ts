import { AppError, invalid } from '../domain/errors.js';
import { SETTINGS_MAX_BYTES } from '../domain/limits.js';
import { assertForwardTransition, type Status } from '../domain/status.js';
import { questionCounts, toForm, updateFormRow, type Form, type FormPatch } from '../store/forms.js';
import { lockLiveForm, nextStamp } from '../store/live.js';
import { parentStamp, withVersionRetry } from '../store/revisions.js';
import { formUpdated } from './events.js';
import type { Deps, Principal } from './deps.js';
import { attributeChanges, optionsOf, prepareFormPublish, publishFormLocked, stillPrepared } from './publish.js';

/**
 * `PUT /forms/{id}`: applies the keys given; `status: "published"` then publishes the result (a
 * new revision, by the principal's key, within its budget) unless it is published already with
 * nothing changed, which changes nothing. Archiving and restoring are status changes too.
 */
export async function updateForm(deps: Deps, principal: Principal, input: { formId: string; patch: FormPatch }): Promise<Form> {
  const { store, clock } = deps;
  const { workspaceId } = principal;
  const { formId: id, patch } = input;
  const publishing = optionsOf(deps, principal, null);
  // Publishing's heavy part first, outside the transaction (see `prepareFormPublish`).
  const prepared = patch.status === 'published' ? await prepareFormPublish(deps, workspaceId, id, patch, publishing) : undefined;
  return withVersionRetry(() => store.db.transaction().execute(async (trx) => {
    const row = await lockLiveForm(trx, store.dialect, workspaceId, id);
    const ready = stillPrepared(row, prepared) ? prepared : undefined;
    const current = row.status as Status;
    const { status, settingsMerge, ...content } = patch;
    // Merged under the row lock: concurrent merges of different keys all land.
    if (settingsMerge !== undefined) content.settings = mergeSettings(JSON.parse(row.settings) as Record<string, unknown>, settingsMerge);
    if (status !== undefined) assertForwardTransition('form', current, status);
    const editsContent = Object.values(content).some((value) => value !== undefined);
    if (current === 'archived' && editsContent) {
      throw new AppError('form_not_editable', 'This form is archived and read only; create a new form to make changes.');
    }
    const changes = attributeChanges(row, content);
    const contentChanged = Object.keys(changes).length > 0;
    if (contentChanged) changes.has_unpublished_changes = 1;
    // Publishing sets the status itself, with the revision.
    if (status !== undefined && status !== current && status !== 'published') changes.status = status;
    let updated = row;
    if (Object.keys(changes).length > 0) {
      // The stamp a prepared publish was worked out with, so that its snapshot says what is stored.
      changes.updated_at = ready && contentChanged ? ready.patchedStamp : nextStamp(row.updated_at, clock.now());
      await updateFormRow(trx, id, changes);
      updated = { ...row, ...changes };
      await formUpdated(trx, workspaceId, id);
    }
    if (status === 'published') {
      const published = await publishFormLocked(clock, trx, updated, publishing, ready);
      if (published) return published.form;
      // Nothing to publish: the draft equals its last revision (and is marked so now, which moved
      // its stamp when it was marked otherwise).
      updated = { ...updated, has_unpublished_changes: 0, updated_at: updated.has_unpublished_changes ? await parentStamp(trx, 'form', id) : updated.updated_at };
    }
    const count = (await questionCounts(trx, [id])).get(id) ?? 0;
    return toForm(updated, count);
  }));
}

/** `settings` with `merge`'s keys set, those set to `null` removed; at most `SETTINGS_MAX_BYTES` as JSON. */
export function mergeSettings(settings: Record<string, unknown>, merge: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...settings };
  for (const [key, value] of Object.entries(merge)) {
    if (value === null) delete out[key];
    // Defined, not assigned: a key named `__proto__` is a key like any other here.
    else Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  const bytes = Buffer.byteLength(JSON.stringify(out));
  if (bytes > SETTINGS_MAX_BYTES) throw invalid('settings', `would be ${bytes} bytes as JSON after the merge; settings hold at most ${SETTINGS_MAX_BYTES} bytes`);
  return out;
}
