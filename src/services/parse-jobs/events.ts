import type { Transaction } from 'kysely';
import { toDocument } from '../../store/documents.js';
import type { Database, JobRow } from '../../store/schema.js';
import { recordEvent } from '../../webhooks/events.js';
import { PARSE_JOB } from '../../store/parse-jobs.js';
import { toParseJob } from './view.js';

/**
 * A parse job reached `completed` or `failed`: its webhook event, in the transaction that wrote the
 * job's final state (the queue calls it there: `QueueOptions.settled`). `data.document` is `null`
 * when the document was deleted meanwhile.
 */
export async function parseJobSettled(trx: Transaction<Database>, job: JobRow, status: 'completed' | 'failed'): Promise<void> {
  if (job.kind !== PARSE_JOB) return;
  await recordEvent(trx, job.workspace_id, status === 'completed' ? 'parse_job_completed' : 'parse_job_failed', async () => {
    const row = await trx.selectFrom('jobs').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow();
    const document = await trx.selectFrom('documents').selectAll().where('id', '=', row.document_id).where('deleted_at', 'is', null).executeTakeFirst();
    return { document: document ? toDocument(document) : null, parseJob: toParseJob(row, Date.now()) };
  });
}
