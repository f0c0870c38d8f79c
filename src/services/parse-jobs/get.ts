import { notFound } from '../../domain/errors.js';
import { yieldToLoop } from '../../domain/yield.js';
import { liveDocuments } from '../../store/live.js';
import { getParseJobHead, getParseJobRow } from '../../store/parse-jobs.js';
import type { CachedAnswer } from '../caches.js';
import type { Deps, Principal } from '../deps.js';
import { toParseJob, type ParseJobView } from './view.js';

async function assertDocument(deps: Deps, principal: Principal, documentId: string): Promise<void> {
  const document = await liveDocuments(deps.store.db, principal.workspaceId).select('id').where('id', '=', documentId).executeTakeFirst();
  if (!document) throw notFound('Document');
}

/**
 * `GET /documents/{id}/parse-jobs/{jobId}` as the answer's bytes: a completed job's (whose result,
 * up to 5,000 fields and about 1 MB of JSON, no longer changes) made once per state of its row and
 * kept in `deps.caches`, so that its result is not read, parsed, serialised and hashed again on
 * every poll; a job still running (or failed) as its view, made afresh. The document and the job
 * are looked up in the workspace on every read. `encode` serialises a view as the route answers it,
 * `tagOf` makes an ETag from the bytes.
 */
export async function readParseJob(
  deps: Deps,
  principal: Principal,
  input: { documentId: string; jobId: string },
  encode: (view: ParseJobView) => string,
  tagOf: (body: Buffer) => string,
): Promise<{ view: ParseJobView } | { answer: CachedAnswer }> {
  const { store, clock, caches } = deps;
  await assertDocument(deps, principal, input.documentId);
  const head = await getParseJobHead(store.db, input.documentId, input.jobId);
  if (head.status !== 'completed') return { view: toParseJob(head, clock.now()) };
  // Every change of a job moves `updated_at`; whether it was applied (once, for good) is in the
  // stamp too, should applying land within the millisecond of the completion.
  const stamp = (row: { updated_at: string; applied: string | null }) => `${row.updated_at}\n${row.applied === null ? 0 : 1}`;
  const kept = await caches.jobAnswers.get(head.id, stamp(head), async () => {
    const row = await getParseJobRow(store.db, input.documentId, input.jobId);
    await yieldToLoop();
    const body = Buffer.from(encode(toParseJob(row, clock.now())));
    await yieldToLoop();
    return { value: { body, etag: tagOf(body) }, stamp: stamp(row), bytes: body.length };
  });
  if (!kept) throw notFound('Parse job');
  return { answer: kept.value };
}
