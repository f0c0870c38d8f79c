import type { Kysely, Transaction } from 'kysely';
import { AppError, notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { assertForwardTransition, type Status } from '../domain/status.js';
import type { Dialect, Store } from './db.js';
import type { Database, FormRow } from './schema.js';
import { forUpdate } from './tx.js';
import { recordEvent } from '../webhooks/events.js';
import { questionCounts } from './form-content.js';
import { attributeChanges, prepareFormPublish, publishFormLocked, releaseRevisionBytes, stillPrepared, withVersionRetry, type PublishOptions } from './revisions.js';

export interface Form {
  id: string;
  workspaceId: string;
  title: string;
  description: string | null;
  status: Status;
  settings: Record<string, unknown>;
  currentVersion: number | null;
  hasUnpublishedChanges: boolean;
  questionCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface FormInput {
  title: string;
  description?: string | null;
  settings?: Record<string, unknown>;
}

export interface FormPatch {
  title?: string;
  description?: string | null;
  settings?: Record<string, unknown>;
  status?: Status;
}

export interface Page {
  offset: number;
  limit: number;
}

export function toForm(row: FormRow, questionCount: number): Form {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    title: row.title,
    description: row.description,
    status: row.status as Status,
    settings: JSON.parse(row.settings) as Record<string, unknown>,
    currentVersion: row.current_version === null ? null : Number(row.current_version),
    hasUnpublishedChanges: Boolean(row.has_unpublished_changes),
    questionCount,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * The form's next `updated_at`: now, or 1 ms past the last one when the clock has not moved past
 * it (the same millisecond, or another server's clock behind). Every change of a form is made
 * under its row lock and moves the stamp forward, so the stamp is the draft's version: the
 * evaluation cache (src/http/routes/content.ts) compares it to know a draft is unchanged, also
 * across servers.
 */
export function nextStamp(previous: string): string {
  const now = Date.now();
  const last = Date.parse(previous);
  return new Date(Number.isFinite(last) && last >= now ? last + 1 : now).toISOString();
}

function live(db: Kysely<Database>, workspaceId: string) {
  return db.selectFrom('forms').where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
}

/** The live form's row, locked for the rest of the transaction (404 when it is not there). */
export async function lockLiveForm(trx: Transaction<Database>, dialect: Dialect, workspaceId: string, id: string): Promise<FormRow> {
  const row = await forUpdate(live(trx, workspaceId).selectAll().where('id', '=', id), dialect).executeTakeFirst();
  if (!row) throw notFound('Form');
  return row;
}

export async function createForm(db: Kysely<Database>, workspaceId: string, input: FormInput): Promise<Form> {
  const now = new Date().toISOString();
  const row: FormRow = {
    id: newId(),
    workspace_id: workspaceId,
    title: input.title,
    description: input.description ?? null,
    status: 'draft',
    settings: JSON.stringify(input.settings ?? {}),
    current_version: null,
    has_unpublished_changes: 1,
    deleted_at: null,
    created_at: now,
    updated_at: now,
  };
  const form = toForm(row, 0);
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('forms').values(row).execute();
    await recordEvent(trx, workspaceId, 'form_created', { form });
  });
  return form;
}

/** A form's `form_updated` event, in the transaction that changed it (read there when someone listens). */
export async function formUpdated(trx: Kysely<Database>, workspaceId: string, id: string): Promise<void> {
  await recordEvent(trx, workspaceId, 'form_updated', async () => {
    const row = await trx.selectFrom('forms').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    return { form: toForm(row, (await questionCounts(trx, [id])).get(id) ?? 0) };
  });
}

export async function listForms(
  db: Kysely<Database>,
  workspaceId: string,
  filter: { status?: Status },
  page: Page,
): Promise<{ items: Form[]; total: number }> {
  let query = live(db, workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  const [count, rows] = await Promise.all([
    query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
  ]);
  const counts = await questionCounts(db, rows.map((r) => r.id));
  return { items: rows.map((r) => toForm(r, counts.get(r.id) ?? 0)), total: Number(count.n) };
}

/**
 * Applies the keys given; `status: "published"` then publishes the result (a new revision, by the
 * key `publishing.keyId`, within its budget) unless it is published already with nothing changed, which changes nothing.
 */
export async function updateForm(store: Store, workspaceId: string, id: string, patch: FormPatch, publishing: PublishOptions): Promise<Form> {
  // Publishing's heavy part first, outside the transaction (see `prepareFormPublish`).
  const prepared = patch.status === 'published' ? await prepareFormPublish(store, workspaceId, id, patch, publishing) : undefined;
  return withVersionRetry(() => store.db.transaction().execute(async (trx) => {
    const row = await lockLiveForm(trx, store.dialect, workspaceId, id);
    const ready = stillPrepared(row, prepared) ? prepared : undefined;
    const current = row.status as Status;
    const { status, ...content } = patch;
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
      changes.updated_at = ready && contentChanged ? ready.patchedStamp : nextStamp(row.updated_at);
      await trx.updateTable('forms').set(changes).where('id', '=', id).execute();
      updated = { ...row, ...changes };
      await formUpdated(trx, workspaceId, id);
    }
    if (status === 'published') {
      const published = await publishFormLocked(trx, updated, publishing, ready);
      if (published) return published.form;
      // Nothing to publish: the draft equals its last revision (and is marked so now).
      updated = { ...updated, has_unpublished_changes: 0 };
    }
    const count = (await questionCounts(trx, [id])).get(id) ?? 0;
    return toForm(updated, count);
  }));
}

/** Soft delete hides the form; permanent delete removes it (also when already soft-deleted). */
export async function deleteForm(db: Kysely<Database>, workspaceId: string, id: string, permanent: boolean): Promise<void> {
  if (permanent) {
    await db.transaction().execute(async (trx) => {
      // Its revisions go with it (the rows cascade): their bytes go back to the workspace's budget.
      await releaseRevisionBytes(trx, 'form', workspaceId, id);
      const gone = await trx.deleteFrom('forms').where('workspace_id', '=', workspaceId).where('id', '=', id).returning('deleted_at').execute();
      if (gone.length === 0) throw notFound('Form');
      // A form soft-deleted before was announced then.
      if (gone[0]!.deleted_at === null) await recordEvent(trx, workspaceId, 'form_deleted', { id });
    });
    return;
  }
  await db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('forms')
      .set({ deleted_at: new Date().toISOString() })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) throw notFound('Form');
    await recordEvent(trx, workspaceId, 'form_deleted', { id });
  });
}
