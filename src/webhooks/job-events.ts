import type { Kysely } from 'kysely';
import { toDocument } from '../store/documents.js';
import { PARSE_JOB, toParseJob } from '../store/parse-jobs.js';
import type { Database } from '../store/schema.js';
import { recordEvent } from './events.js';

/**
 * A parse job reached `completed` or `failed`: its event, in the transaction that wrote the job's
 * final state (called by the queue after that write). `data.document` is `null` when the document
 * was deleted meanwhile.
 */
export async function parseJobSettled(trx: Kysely<Database>, job: { id: string; kind: string; workspace_id: string }, status: 'completed' | 'failed'): Promise<void> {
  if (job.kind !== PARSE_JOB) return;
  await recordEvent(trx, job.workspace_id, status === 'completed' ? 'parse_job_completed' : 'parse_job_failed', async () => {
    const row = await trx.selectFrom('jobs').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow();
    const document = await trx.selectFrom('documents').selectAll().where('id', '=', row.document_id).where('deleted_at', 'is', null).executeTakeFirst();
    return { document: document ? toDocument(document) : null, parseJob: toParseJob(row) };
  });
}
