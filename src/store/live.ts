import type { Kysely, Transaction } from 'kysely';
import { notFound } from '../domain/errors.js';
import type { Dialect } from './db.js';
import type { Database, DocumentRow, FormRow } from './schema.js';
import { forUpdate } from './tx.js';

/** The live (not soft-deleted) documents of a workspace. */
export function liveDocuments(db: Kysely<Database>, workspaceId: string) {
  return db.selectFrom('documents').where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
}

/** The live (not soft-deleted) forms of a workspace. */
export function liveForms(db: Kysely<Database>, workspaceId: string) {
  return db.selectFrom('forms').where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
}

/** The live document's row, locked for the rest of the transaction (404 when it is not there). */
export async function lockLiveDocument(trx: Transaction<Database>, dialect: Dialect, workspaceId: string, id: string): Promise<DocumentRow> {
  const row = await forUpdate(liveDocuments(trx, workspaceId).selectAll().where('id', '=', id), dialect).executeTakeFirst();
  if (!row) throw notFound('Document');
  return row;
}

/** The live form's row, locked for the rest of the transaction (404 when it is not there). */
export async function lockLiveForm(trx: Transaction<Database>, dialect: Dialect, workspaceId: string, id: string): Promise<FormRow> {
  const row = await forUpdate(liveForms(trx, workspaceId).selectAll().where('id', '=', id), dialect).executeTakeFirst();
  if (!row) throw notFound('Form');
  return row;
}

/**
 * The form's next `updated_at`: `now` (epoch ms: the services pass `deps.clock`; scripts and
 * tests may leave it out), or 1 ms past the last one
 * when the clock has not moved past it (the same millisecond, or another server's clock behind).
 * Every change of a form is made under its row lock and moves the stamp forward, so the stamp is
 * the draft's version: the evaluation cache (src/services/evaluate.ts) compares it to know a draft
 * is unchanged, also across servers.
 */
export function nextStamp(previous: string, now: number = Date.now()): string {
  const last = Date.parse(previous);
  return new Date(Number.isFinite(last) && last >= now ? last + 1 : now).toISOString();
}
