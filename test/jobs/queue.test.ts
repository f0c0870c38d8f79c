import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.js';
import { DetectionError } from '../../src/detect/runner.js';
import { JobQueue } from '../../src/jobs/queue.js';
import { ParseWorker } from '../../src/jobs/worker.js';
import { toParseJob } from '../../src/services/parse-jobs/view.js';
import { bearer, createTestContext, createTestDatabase, TEST_DB, type TestContext, type TestDatabase } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';

describe(`job queue (${TEST_DB})`, () => {
  let database: TestDatabase;
  let documentId: string;
  let clock = Date.parse('2026-01-01T00:00:00.000Z');
  const options = { leaseMs: 10_000, maxAttempts: 3, backoffMs: (attempt: number) => 1_000 * attempt, now: () => clock };
  let queue: JobQueue;

  before(async () => {
    database = await createTestDatabase();
    queue = new JobQueue(database.store, options);
    const now = new Date(clock).toISOString();
    const workspace = newId();
    await database.store.db.insertInto('workspaces').values({ id: workspace, slug: 'jobs', created_at: now }).execute();
    documentId = newId();
    await database.store.db.insertInto('documents').values({
      id: documentId, workspace_id: workspace, title: 'd', status: 'draft', original_filename: 'd.pdf', file_type: 'pdf', mime_type: 'application/pdf',
      size_bytes: 1, sha256: 'a'.repeat(64), rendition_sha256: null, page_source: 'pdf', page_count: 1, page_dimensions: '[]',
      current_version: null, has_unpublished_changes: 1, deleted_at: null, created_at: now, updated_at: now,
    }).execute();
  });
  after(() => database.drop());

  const enqueue = () => queue.enqueue({ kind: 'test', workspaceId: 'w', documentId, params: { n: 1 } });
  const row = (id: string) => database.store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  async function drain() {
    await database.store.db.deleteFrom('jobs').execute();
  }

  it('pending → processing → completed, once, by the lease holder only', async () => {
    await drain();
    const job = await enqueue();
    assert.equal(job.status, 'pending');
    const claimed = await queue.claim('A');
    assert.equal(claimed?.id, job.id);
    assert.equal(claimed?.status, 'processing');
    assert.equal(Number(claimed?.attempts), 1);
    assert.equal(claimed?.lease_owner, 'A');
    assert.equal(claimed?.lease_expires_at, new Date(clock + 10_000).toISOString());
    assert.equal(await queue.claim('B'), null, 'nothing else is due');
    assert.equal(await queue.complete(job.id, 'B', async () => ({ result: 'wrong' })), false, 'B does not hold it');
    let ran = 0;
    assert.equal(await queue.complete(job.id, 'A', async () => (ran++, { result: { fields: [] }, applied: { n: 0 } })), true);
    assert.equal(await queue.complete(job.id, 'A', async () => (ran++, { result: 'again' })), false, 'completes at most once');
    assert.equal(ran, 1);
    const done = await row(job.id);
    assert.deepEqual([done.status, JSON.parse(done.result!), JSON.parse(done.applied!), done.lease_owner], ['completed', { fields: [] }, { n: 0 }, null]);
  });

  it('a failed attempt is retried after its backoff; a final error or the last attempt fails the job', async () => {
    await drain();
    const job = await enqueue();
    await queue.claim('A');
    assert.equal(await queue.fail(job.id, 'A', { code: 'boom', message: 'first', final: false }), true);
    let r = await row(job.id);
    assert.deepEqual([r.status, r.error_code, r.run_at], ['pending', 'boom', new Date(clock + 1_000).toISOString()]);
    assert.equal(await queue.claim('A'), null, 'not before its backoff');
    clock += 1_000;
    assert.equal(Number((await queue.claim('A'))?.attempts), 2);
    await queue.fail(job.id, 'A', { code: 'boom', message: 'second', final: false });
    clock += 2_000;
    assert.equal(Number((await queue.claim('A'))?.attempts), 3);
    await queue.fail(job.id, 'A', { code: 'boom', message: 'third', final: false });
    r = await row(job.id);
    assert.deepEqual([r.status, r.error_code, r.error_message], ['failed', 'boom', 'third'], 'the last attempt fails it');

    const other = await enqueue();
    await queue.claim('A');
    await queue.fail(other.id, 'A', { code: 'unreadable_document', message: 'bad file', final: true });
    r = await row(other.id);
    assert.deepEqual([r.status, r.error_code, Number(r.attempts)], ['failed', 'unreadable_document', 1], 'a final error fails at once');
  });

  it('a job whose lease ran out goes to another worker; the lost worker can no longer finish it', async () => {
    await drain();
    const job = await enqueue();
    await queue.claim('A');
    clock += 5_000;
    assert.equal(await queue.renew(job.id, 'A'), true, 'renewal extends the lease');
    clock += 9_000;
    assert.equal(await queue.claim('B'), null, 'still leased after renewal');
    clock += 2_000; // 11 s after the renewal
    assert.equal(await queue.claim('B'), null, 'expired: back to pending, but behind its backoff');
    assert.equal((await row(job.id)).status, 'pending');
    clock += 1_000;
    const again = await queue.claim('B');
    assert.deepEqual([again?.id, again?.lease_owner, Number(again?.attempts)], [job.id, 'B', 2]);
    assert.equal(await queue.renew(job.id, 'A'), false, 'A learns it lost the job');
    assert.equal(await queue.complete(job.id, 'A', async () => ({ result: 'A' })), false);
    assert.equal(await queue.fail(job.id, 'A', { code: 'x', message: 'x', final: true }), false);
    assert.equal(await queue.complete(job.id, 'B', async () => ({ result: 'B' })), true);
    assert.equal(JSON.parse((await row(job.id)).result!), 'B');
  });

  it('losing the worker on every attempt ends in failed/worker_lost; release hands a job back uncounted', async () => {
    await drain();
    const job = await enqueue();
    for (let attempt = 1; attempt <= 3; attempt++) {
      clock += 60_000; // the previous worker's lease runs out
      await queue.reapExpired();
      clock += 10_000; // past the backoff
      assert.equal(Number((await queue.claim(`W${attempt}`))?.attempts), attempt);
    }
    clock += 60_000;
    await queue.reapExpired();
    const r = await row(job.id);
    assert.deepEqual([r.status, r.error_code], ['failed', 'worker_lost']);

    const handed = await enqueue();
    clock += 1;
    await queue.claim('A');
    assert.equal(await queue.release(handed.id, 'A'), true);
    const back = await row(handed.id);
    assert.deepEqual([back.status, Number(back.attempts), back.lease_owner], ['pending', 0, null]);
    assert.equal((await queue.claim('B'))?.id, handed.id, 'claimable again at once');
  });

  it('progress: written only under the lease, cleared when the job goes back to pending, kept when it fails', async () => {
    await drain();
    const job = await enqueue();
    const progress = async (id: string) => {
      const r = await row(id);
      return r.progress_done === null ? [r.progress_done, r.progress_total] : [Number(r.progress_done), Number(r.progress_total)];
    };
    const view = async (id: string) => toParseJob(await row(id), clock).progress;
    assert.deepEqual(await progress(job.id), [null, null]);
    assert.equal(await queue.progress(job.id, 'A', 1, 3), false, 'not claimed yet');
    await queue.claim('A');
    assert.equal(await view(job.id), null, 'processing, nothing reported yet');
    assert.equal(await queue.progress(job.id, 'A', 1, 3), true);
    assert.equal(await queue.progress(job.id, 'B', 2, 3), false, 'B does not hold it');
    assert.deepEqual(await view(job.id), { pagesDone: 1, pagesTotal: 3 });

    // A's lease runs out: the job reads as pending, with no progress, and another worker takes it.
    clock += 11_000;
    assert.equal(await view(job.id), null, 'an expired lease reads as pending: no progress');
    await queue.reapExpired();
    assert.deepEqual(await progress(job.id), [null, null], 'back to pending: cleared');
    clock += 1_000;
    assert.equal((await queue.claim('B'))?.id, job.id);
    assert.equal(await queue.progress(job.id, 'A', 2, 3), false, 'the worker that lost its lease writes nothing');
    assert.deepEqual(await progress(job.id), [null, null]);
    assert.equal(await queue.progress(job.id, 'B', 1, 3), true);
    assert.deepEqual(await progress(job.id), [1, 3]);

    // Retried after a failed attempt, or handed back: cleared.
    await queue.fail(job.id, 'B', { code: 'boom', message: 'again', final: false });
    assert.deepEqual(await progress(job.id), [null, null]);
    clock += 10_000;
    await queue.claim('C');
    await queue.progress(job.id, 'C', 2, 3);
    assert.equal(await queue.release(job.id, 'C'), true);
    assert.deepEqual(await progress(job.id), [null, null]);
    assert.equal(await view(job.id), null);

    // Failed: the last value stays.
    await queue.claim('C');
    await queue.progress(job.id, 'C', 2, 3);
    await queue.fail(job.id, 'C', { code: 'unreadable_document', message: 'bad', final: true });
    assert.equal((await row(job.id)).status, 'failed');
    assert.deepEqual(await view(job.id), { pagesDone: 2, pagesTotal: 3 });
    assert.equal(await queue.progress(job.id, 'C', 3, 3), false, 'nothing after the end');

    // Completed: every page, from the result.
    const other = await enqueue();
    await queue.claim('D');
    await queue.progress(other.id, 'D', 1, 4);
    await queue.complete(other.id, 'D', async () => ({ result: { fields: [], stats: { pages: 4, durationMs: 1, found: {}, duplicates: 0, skipped: {}, warnings: [] } } }));
    assert.deepEqual(await view(other.id), { pagesDone: 4, pagesTotal: 4 });
    assert.equal(await queue.progress(other.id, 'D', 2, 4), false);
  });

  it('workspaces take turns: the one whose last claim is oldest first, then its oldest job', async () => {
    await drain();
    const inWorkspace = (workspaceId: string) => {
      clock += 1;
      return queue.enqueue({ kind: 'test', workspaceId, documentId, params: {} });
    };
    const claimed: string[] = [];
    const claimNext = async () => {
      clock += 1;
      const job = await queue.claim('W');
      if (job) claimed.push(job.id);
      return job;
    };
    // A's backlog of three is queued first; B's single job arrives while A's first runs.
    const a = [await inWorkspace('A'), await inWorkspace('A'), await inWorkspace('A')];
    await claimNext();
    clock += 1;
    const b = await inWorkspace('B');
    await claimNext();
    assert.deepEqual(claimed, [a[0]!.id, b.id], "B's job waits for one of A's, not for A's backlog");
    // Three workspaces with jobs at once: one each in turn, each workspace's own jobs oldest first.
    await drain();
    claimed.length = 0;
    const jobs = { A: [] as string[], B: [] as string[], C: [] as string[] };
    for (const ws of ['A', 'A', 'A', 'B', 'B', 'C'] as const) jobs[ws].push((await inWorkspace(ws)).id);
    while (await claimNext());
    // C was never served, so it goes first; then A, whose last turn (above) is older than B's.
    assert.deepEqual(claimed, [jobs.C[0], jobs.A[0], jobs.B[0], jobs.A[1], jobs.B[1], jobs.A[2]]);
  });

  it('concurrent claimers never take the same job', async () => {
    await drain();
    const ids = new Set<string>();
    for (let i = 0; i < 60; i++) ids.add((await enqueue()).id);
    const taken: string[] = [];
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        for (;;) {
          const job = await queue.claim(`W${w}`);
          if (!job) return;
          taken.push(job.id);
          await queue.complete(job.id, `W${w}`, async () => ({ result: w }));
        }
      }),
    );
    assert.equal(taken.length, 60);
    assert.deepEqual(new Set(taken), ids);
  });
});

describe(`a parse worker stopping (${TEST_DB})`, () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ libreOffice: null });
  });
  after(() => ctx.close());

  let headers: Record<string, string>;
  let doc: string;
  /** A new queued job, alone in the queue. */
  async function queuedJob(): Promise<string> {
    headers = bearer(await ctx.key(['documents:read', 'documents:write', 'documents:parse_ai']));
    const body = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'a.pdf' }]);
    doc = (await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...body.headers }, payload: body.payload })).json().data.id;
    await ctx.store.db.deleteFrom('jobs').execute();
    return (await ctx.app.inject({ method: 'POST', url: `/api/v1/documents/${doc}/parse-jobs`, headers, payload: {} })).json().data.id;
  }
  const row = (id: string) => ctx.store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const log = { info() {}, warn() {}, error() {} };

  it('stops a running job after the grace and hands it back', async () => {
    const id = await queuedJob();
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    // A detection that only ends when it is told to stop.
    const detect = (_data: Uint8Array, options: { signal?: AbortSignal }) =>
      new Promise<never>((_, reject) => {
        started();
        options.signal!.addEventListener('abort', () => reject(new DetectionError('aborted', 'stopped', false)));
      });
    const worker = new ParseWorker({ store: ctx.store, queue: ctx.queue, blobs: ctx.blobs, log, pollMs: 10, detect });
    worker.start();
    await running;
    const t = performance.now();
    await worker.stop(150);
    assert.ok(performance.now() - t < 2000, 'stop keeps to its grace');
    const r = await row(id);
    assert.deepEqual([r.status, Number(r.attempts), r.lease_owner], ['pending', 0, null]);
  });

  it('a job claimed while stopping is handed back at once', async () => {
    const id = await queuedJob();
    let claiming!: () => void;
    const inClaim = new Promise<void>((r) => (claiming = r));
    const slowQueue = Object.create(ctx.queue) as JobQueue;
    slowQueue.claim = async (owner: string) => {
      claiming();
      await new Promise((r) => setTimeout(r, 200));
      return ctx.queue.claim(owner);
    };
    let ran = false;
    const worker = new ParseWorker({ store: ctx.store, queue: slowQueue, blobs: ctx.blobs, log, pollMs: 10, detect: async () => ((ran = true), { fields: [], stats: { pages: 1, durationMs: 0, found: {}, duplicates: 0, skipped: {}, warnings: [] } }) });
    worker.start();
    await inClaim;
    await worker.stop(5000);
    assert.equal(ran, false, 'not run');
    const r = await row(id);
    assert.deepEqual([r.status, Number(r.attempts)], ['pending', 0]);
  });

  it('a job whose lease ran out reads as pending before any worker reaps it', async () => {
    const id = await queuedJob();
    const claimed = await ctx.queue.claim('gone');
    assert.equal(claimed?.id, id);
    await ctx.store.db.updateTable('jobs').set({ lease_expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', id).execute();
    const view = (await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${doc}/parse-jobs/${id}`, headers })).json().data;
    assert.deepEqual([view.status, view.pollAfterMs], ['pending', 1000]);
    assert.equal((await row(id)).status, 'processing', 'the row itself waits for a worker to reap it');
    assert.equal(toParseJob(await row(id), Date.now() - 60_000).status, 'processing', 'while the lease held it read as processing');
  });
});
