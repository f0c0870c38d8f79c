import type { Kysely, Transaction } from 'kysely';
import { notFound } from '../domain/errors.js';
import type { Dialect } from './db.js';
import type { Database, DocumentRow, JobRow } from './schema.js';
import { forUpdate } from './tx.js';

/** Parse jobs are rows of the job queue (src/jobs/queue.ts) of this kind. */
export const PARSE_JOB = 'parse';

/** A parse job of a document (404 when there is none). */
export async function getParseJobRow(db: Kysely<Database>, documentId: string, jobId: string): Promise<JobRow> {
  const row = await db.selectFrom('jobs').selectAll().where('id', '=', jobId).where('document_id', '=', documentId).where('kind', '=', PARSE_JOB).executeTakeFirst();
  if (!row) throw notFound('Parse job');
  return row;
}

/** A parse job of a document without its result (`result` is null: read the row for it); 404 when there is none. */
export async function getParseJobHead(db: Kysely<Database>, documentId: string, jobId: string): Promise<JobRow> {
  const row = await db
    .selectFrom('jobs')
    .select([
      'id', 'kind', 'workspace_id', 'document_id', 'status', 'attempts', 'max_attempts', 'run_at', 'lease_owner', 'lease_expires_at', 'params',
      'error_code', 'error_message', 'applied', 'progress_done', 'progress_total', 'created_at', 'started_at', 'completed_at', 'updated_at',
    ]) // prettier-ignore
    .where('id', '=', jobId)
    .where('document_id', '=', documentId)
    .where('kind', '=', PARSE_JOB)
    .executeTakeFirst();
  if (!row) throw notFound('Parse job');
  return { ...row, result: null };
}

/** A parse job of a document, locked for the rest of the transaction (404 when there is none). */
export async function lockParseJobRow(trx: Transaction<Database>, dialect: Dialect, documentId: string, jobId: string): Promise<JobRow> {
  const job = await forUpdate(
    trx.selectFrom('jobs').selectAll().where('id', '=', jobId).where('document_id', '=', documentId).where('kind', '=', PARSE_JOB),
    dialect,
  ).executeTakeFirst();
  if (!job) throw notFound('Parse job');
  return job;
}

/** Records that a job's fields were applied (JSON of `Applied`). */
export async function setJobApplied(trx: Transaction<Database>, jobId: string, applied: string, at: string): Promise<void> {
  await trx.updateTable('jobs').set({ applied, updated_at: at }).where('id', '=', jobId).execute();
}

/** A document by id whatever its workspace (the worker's read of a job's document); `undefined` when gone for good. */
export async function documentOfJob(db: Kysely<Database>, documentId: string): Promise<DocumentRow | undefined> {
  return db.selectFrom('documents').selectAll().where('id', '=', documentId).executeTakeFirst();
}

/** Locks a job's document row, whatever its state, for the rest of the transaction. */
export async function lockDocumentOfJob(trx: Transaction<Database>, dialect: Dialect, documentId: string): Promise<void> {
  await forUpdate(trx.selectFrom('documents').select('id').where('id', '=', documentId), dialect).execute();
}

/** The live document of a job, locked (`undefined` when deleted, softly or for good). */
export async function lockLiveDocumentOfJob(trx: Transaction<Database>, dialect: Dialect, documentId: string): Promise<DocumentRow | undefined> {
  return forUpdate(trx.selectFrom('documents').selectAll().where('id', '=', documentId).where('deleted_at', 'is', null), dialect).executeTakeFirst();
}
