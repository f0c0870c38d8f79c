import type { Kysely, Transaction } from 'kysely';
import type { DetectedField, DetectionResult } from '../detect/types.js';
import { AppError, notFound } from '../domain/errors.js';
import { CHOICE_FIELD_TYPES, type FieldSpec } from '../domain/fields.js';
import type { JobQueue } from '../jobs/queue.js';
import type { Store } from './db.js';
import { liveDocuments, lockLiveDocument } from './documents.js';
import { applyCandidates, type Candidate } from './fields.js';
import type { Database, JobRow } from './schema.js';
import { forUpdate } from './tx.js';

export const PARSE_JOB = 'parse';
export const APPLY_MODES = ['draft', 'preview'] as const;
export const ENGINES = ['auto', 'layout', 'ai'] as const;
export type ApplyMode = (typeof APPLY_MODES)[number];
export type Engine = (typeof ENGINES)[number];

/** What a parse job was asked to do (`jobs.params`). */
export interface ParseParams {
  applyMode: ApplyMode;
  /** The engine that runs: `auto` is resolved when the job starts. */
  engine: Exclude<Engine, 'auto'>;
}

export interface Applied {
  createdFieldIds: string[];
  deletedFieldIds: string[];
  appliedAt: string;
}

export interface ParseJobView {
  id: string;
  documentId: string;
  status: string;
  applyMode: ApplyMode;
  engine: string;
  pollAfterMs: number | null;
  error: { code: string; message: string } | null;
  result: (DetectionResult & { applied: Applied | null }) | null;
  progress: Progress | null;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
}

/**
 * Pages done of pages in the document: while `processing` as the running attempt last reported
 * it (null until its first report), all of them once `completed`, the last value when `failed`,
 * null while `pending`.
 */
export interface Progress {
  pagesDone: number;
  pagesTotal: number;
}

function progressOf(row: JobRow, result: DetectionResult | null, expired: boolean): Progress | null {
  if (row.status === 'completed' && result) return { pagesDone: result.stats.pages, pagesTotal: result.stats.pages };
  // A job whose lease ran out starts again from the first page.
  if (expired || row.progress_done === null || row.progress_total === null) return null;
  return { pagesDone: Number(row.progress_done), pagesTotal: Number(row.progress_total) };
}

/** How long a client should wait before polling a job that has not finished. */
export const POLL_AFTER_MS = 1000;

export function toParseJob(row: JobRow, now = Date.now()): ParseJobView {
  const params = JSON.parse(row.params) as ParseParams;
  const finished = row.status === 'completed' || row.status === 'failed';
  // A job whose worker stopped renewing its lease waits for the next worker: pending again.
  const expired = row.status === 'processing' && row.lease_expires_at !== null && row.lease_expires_at < new Date(now).toISOString();
  const result = row.result ? (JSON.parse(row.result) as DetectionResult) : null;
  return {
    id: row.id,
    documentId: row.document_id,
    status: expired ? 'pending' : row.status,
    applyMode: params.applyMode,
    engine: params.engine,
    pollAfterMs: finished ? null : POLL_AFTER_MS,
    error: row.status === 'failed' && row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
    result: result ? { ...result, applied: row.applied ? (JSON.parse(row.applied) as Applied) : null } : null,
    progress: progressOf(row, result, expired),
    createdAt: row.created_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
  };
}

const archived = () => new AppError('document_not_editable', 'This document is archived and read only: fields cannot be detected into it.');

/** `POST /documents/{id}/parse-jobs`: queues the job (the engine already resolved). */
export async function startParseJob(
  store: Store,
  queue: JobQueue,
  workspaceId: string,
  documentId: string,
  params: ParseParams,
): Promise<ParseJobView> {
  return store.db.transaction().execute(async (trx) => {
    const document = await lockLiveDocument(trx, store.dialect, workspaceId, documentId);
    if (document.status === 'archived') throw archived();
    const row = await queue.enqueue({ kind: PARSE_JOB, workspaceId, documentId, params }, trx);
    return toParseJob(row);
  });
}

/** A parse job of a live document of the workspace. */
export async function getParseJob(db: Kysely<Database>, workspaceId: string, documentId: string, jobId: string): Promise<ParseJobView> {
  const document = await liveDocuments(db, workspaceId).select('id').where('id', '=', documentId).executeTakeFirst();
  if (!document) throw notFound('Document');
  const row = await db.selectFrom('jobs').selectAll().where('id', '=', jobId).where('document_id', '=', documentId).where('kind', '=', PARSE_JOB).executeTakeFirst();
  if (!row) throw notFound('Parse job');
  return toParseJob(row);
}

/** The fields a detection result proposes, as field definitions. */
export function candidatesOf(fields: readonly DetectedField[]): Candidate[] {
  return fields.map((field) => {
    const spec: FieldSpec = {
      label: field.label,
      type: field.type,
      pageNumber: field.pageNumber,
      x: field.rect.x,
      y: field.rect.y,
      width: field.rect.width,
      height: field.rect.height,
      isRequired: field.isRequired,
      isReadOnly: field.isReadOnly,
      assigneeRole: field.assigneeRole,
      defaultValue: null,
      direction: 'auto',
      options: CHOICE_FIELD_TYPES.has(field.type) && field.options.choices ? { choices: field.options.choices } : {},
    };
    return { spec, confidence: field.confidence };
  });
}

/**
 * What completing a parse job writes, in the queue's completing transaction: the result, and for
 * `applyMode: "draft"` its fields added to the draft (defaults: every confidence, existing fields
 * kept). A document archived or deleted meanwhile gets nothing; the result says why.
 */
export async function completionOf(
  trx: Transaction<Database>,
  store: Store,
  job: JobRow,
  result: DetectionResult,
): Promise<{ result: DetectionResult; applied?: Applied }> {
  const params = JSON.parse(job.params) as ParseParams;
  if (params.applyMode !== 'draft') return { result };
  const document = await forUpdate(trx.selectFrom('documents').selectAll().where('id', '=', job.document_id).where('deleted_at', 'is', null), store.dialect).executeTakeFirst();
  if (!document || document.status === 'archived') {
    const why = document ? 'the document was archived before the job completed; nothing was applied' : 'the document was deleted before the job completed; nothing was applied';
    return { result: { ...result, stats: { ...result.stats, warnings: [...result.stats.warnings, why] } } };
  }
  const changed = await applyCandidates(trx, document, candidatesOf(result.fields), { minConfidence: 0, replaceExisting: false });
  return { result, applied: { ...changed, appliedAt: new Date().toISOString() } };
}

/** `POST …/parse-jobs/{jobId}/apply`: at most once, atomically. */
export async function applyParseJob(
  store: Store,
  workspaceId: string,
  documentId: string,
  jobId: string,
  options: { minConfidence: number; replaceExisting: boolean },
): Promise<{ createdFieldIds: string[]; deletedFieldIds: string[] }> {
  return store.db.transaction().execute(async (trx) => {
    // The document's lock first (as every field edit and every completion takes it), then the job's.
    const document = await lockLiveDocument(trx, store.dialect, workspaceId, documentId);
    const job = await forUpdate(
      trx.selectFrom('jobs').selectAll().where('id', '=', jobId).where('document_id', '=', documentId).where('kind', '=', PARSE_JOB),
      store.dialect,
    ).executeTakeFirst();
    if (!job) throw notFound('Parse job');
    if ((JSON.parse(job.params) as ParseParams).applyMode === 'draft') {
      throw new AppError('job_already_applied', 'This job ran with applyMode "draft": its fields were added to the draft when it completed.');
    }
    if (job.status !== 'completed') throw new AppError('job_not_completed', `This job is ${job.status}; apply it once it has completed.`);
    if (job.applied !== null) throw new AppError('job_already_applied', 'This job has been applied already; start a new job to detect again.');
    if (document.status === 'archived') throw archived();
    const result = JSON.parse(job.result!) as DetectionResult;
    const changed = await applyCandidates(trx, document, candidatesOf(result.fields), options);
    const applied: Applied = { ...changed, appliedAt: new Date().toISOString() };
    await trx.updateTable('jobs').set({ applied: JSON.stringify(applied), updated_at: applied.appliedAt }).where('id', '=', jobId).execute();
    return changed;
  });
}
