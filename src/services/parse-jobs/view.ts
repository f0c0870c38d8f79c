import type { DetectionResult } from '../../detect/types.js';
import type { JobRow } from '../../store/schema.js';
import type { Applied, ApplyMode, ParseParams } from './params.js';

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

/** A job's row as the API shows it, at `now` (epoch ms: a lease past `now` shows as pending). */
export function toParseJob(row: JobRow, now: number): ParseJobView {
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
