import type { Kysely, Transaction } from 'kysely';
import { notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Status } from '../domain/status.js';
import { liveForms } from './live.js';
import type { Page } from './page.js';
import type { Database, FormRow } from './schema.js';

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

export async function createForm(db: Kysely<Database>, workspaceId: string, input: FormInput, now: string): Promise<Form> {
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
  await db.insertInto('forms').values(row).execute();
  return toForm(row, 0);
}

export async function listForms(
  db: Kysely<Database>,
  workspaceId: string,
  filter: { status?: Status },
  page: Page,
): Promise<{ items: Form[]; total: number }> {
  let query = liveForms(db, workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  const [count, rows] = await Promise.all([
    query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
  ]);
  const counts = await questionCounts(db, rows.map((r) => r.id));
  return { items: rows.map((r) => toForm(r, counts.get(r.id) ?? 0)), total: Number(count.n) };
}

/** Writes `changes` to a form's row (locked by the caller). */
export async function updateFormRow(trx: Transaction<Database>, id: string, changes: Partial<FormRow>): Promise<void> {
  await trx.updateTable('forms').set(changes).where('id', '=', id).execute();
}

/** Hides a live form (soft delete); 404 when there is none. */
export async function softDeleteForm(db: Kysely<Database>, workspaceId: string, id: string, now: string): Promise<void> {
  const result = await db
    .updateTable('forms')
    .set({ deleted_at: now })
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw notFound('Form');
}

/** Removes a form's row for good (its content and revisions cascade); 404 when there is none. */
export async function deleteFormRow(trx: Transaction<Database>, workspaceId: string, id: string): Promise<void> {
  const result = await trx.deleteFrom('forms').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  if (Number(result.numDeletedRows) === 0) throw notFound('Form');
}

/** How many questions each of these forms has. */
export async function questionCounts(db: Kysely<Database>, formIds: string[]): Promise<Map<string, number>> {
  if (formIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('form_questions')
    .select(['form_id', (eb) => eb.fn.countAll().as('n')])
    .where('form_id', 'in', formIds)
    .groupBy('form_id')
    .execute();
  return new Map(rows.map((r) => [r.form_id, Number(r.n)]));
}
