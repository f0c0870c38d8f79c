import type { Kysely } from 'kysely';
import { toDocument } from '../store/documents.js';
import { questionCounts, toForm } from '../store/forms.js';
import type { Database } from '../store/schema.js';
import { recordEvent } from '../webhooks/events.js';

/**
 * The `…_updated` webhook events of the use cases, recorded in the transaction `trx` that commits
 * the change (`recordEvent`): the resource is read there, as committed, only when an endpoint of
 * the workspace listens.
 */
export async function documentUpdated(trx: Kysely<Database>, workspaceId: string, id: string): Promise<void> {
  await recordEvent(trx, workspaceId, 'document_updated', async () => ({
    document: toDocument(await trx.selectFrom('documents').selectAll().where('id', '=', id).executeTakeFirstOrThrow()),
  }));
}

export async function formUpdated(trx: Kysely<Database>, workspaceId: string, id: string): Promise<void> {
  await recordEvent(trx, workspaceId, 'form_updated', async () => {
    const row = await trx.selectFrom('forms').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    return { form: toForm(row, (await questionCounts(trx, [id])).get(id) ?? 0) };
  });
}

/** Whether the document or form `id` is live (not soft-deleted): a permanent delete of a live one is announced. */
export async function isLive(trx: Kysely<Database>, table: 'documents' | 'forms', workspaceId: string, id: string): Promise<boolean> {
  const row = await trx.selectFrom(table).select('deleted_at').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return row !== undefined && row.deleted_at === null;
}
