import { sql, type Transaction } from 'kysely';
import { newId } from '../domain/ids.js';
import type { Store } from '../store/db.js';
import { forUpdate } from '../store/tx.js';
import type { Database, JobRow } from '../store/schema.js';

/**
 * The durable job queue: rows of `jobs`, claimed under a lease.
 *
 * - `claim` takes a due `pending` job, workspaces taking turns: of the workspaces with due jobs,
 *   the one whose last claim is oldest (or that never had one) goes first, and within it the
 *   oldest job. So one workspace's backlog never holds up another's job for more than the jobs
 *   running now plus one of each other waiting workspace. `FOR UPDATE SKIP LOCKED` on PostgreSQL,
 *   so any number of workers in any number of processes never take the same job; inside the
 *   single `BEGIN IMMEDIATE` writer on SQLite. The claim counts an attempt, sets a lease and
 *   records the workspace's turn (`workspace_claims`) in the same statement or transaction.
 * - A running job's worker renews the lease; a job whose lease ran out (its worker died or hung)
 *   goes back to `pending` with a backoff, or to `failed` (`worker_lost`) after its last attempt.
 * - While it runs, the worker records its progress (`progress`); going back to `pending` clears it,
 *   a job that ends `failed` keeps the last value.
 * - `complete` and `fail` take effect only while the caller still holds the lease, in one
 *   transaction with whatever completing means (applying fields): a job completes at most once,
 *   however many workers ran it.
 */
export interface QueueOptions {
  /** How long a claim holds without renewal. */
  leaseMs: number;
  /** Attempts before a job that keeps failing (or losing its worker) is `failed`. */
  maxAttempts: number;
  /** Wait before attempt `n + 1` after attempt `n` failed. */
  backoffMs(attempt: number): number;
  now?: () => number;
  /**
   * Called in the transaction that writes a job's final state (`completed` or `failed`): what must
   * commit with it (the parse job's webhook event, `services/parse-jobs/events.ts`).
   */
  settled?: (trx: Transaction<Database>, job: JobRow, status: 'completed' | 'failed') => Promise<void>;
}

export const DEFAULT_QUEUE_OPTIONS: QueueOptions = {
  leaseMs: 30_000,
  maxAttempts: 3,
  backoffMs: (attempt) => Math.min(60_000, 1_000 * 2 ** (attempt - 1)),
};

export interface JobError {
  code: string;
  message: string;
  /** Retrying cannot help (an unreadable document): fail now. */
  final: boolean;
}

/** A job going back to `pending` (or claimed again) starts its progress afresh. */
const NO_PROGRESS = { progress_done: null, progress_total: null } as const;

export class JobQueue {
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    readonly options: QueueOptions = DEFAULT_QUEUE_OPTIONS,
  ) {
    this.now = options.now ?? Date.now;
  }

  private iso(offsetMs = 0): string {
    return new Date(this.now() + offsetMs).toISOString();
  }

  /** Adds a job (in the caller's transaction when given). */
  async enqueue(
    input: { kind: string; workspaceId: string; documentId: string; params: unknown },
    trx: Transaction<Database> | Store['db'] = this.store.db,
  ): Promise<JobRow> {
    const now = this.iso();
    const row: JobRow = {
      id: newId(),
      kind: input.kind,
      workspace_id: input.workspaceId,
      document_id: input.documentId,
      status: 'pending',
      attempts: 0,
      max_attempts: this.options.maxAttempts,
      run_at: now,
      lease_owner: null,
      lease_expires_at: null,
      params: JSON.stringify(input.params),
      result: null,
      error_code: null,
      error_message: null,
      applied: null,
      progress_done: null,
      progress_total: null,
      created_at: now,
      started_at: null,
      completed_at: null,
      updated_at: now,
    };
    await trx.insertInto('jobs').values(row).execute();
    return row;
  }

  /** Jobs whose lease ran out go back to `pending` (with backoff) or, after the last attempt, `failed`. */
  async reapExpired(): Promise<number> {
    // A plain read first: a poll with nothing expired (the usual case) takes no write lock.
    const any = await this.store.db.selectFrom('jobs').select('id').where('status', '=', 'processing').where('lease_expires_at', '<', this.iso()).limit(1).executeTakeFirst();
    if (!any) return 0;
    return this.store.db.transaction().execute(async (trx) => {
      const now = this.iso();
      let expired = trx.selectFrom('jobs').selectAll().where('status', '=', 'processing').where('lease_expires_at', '<', now).limit(100);
      if (this.store.dialect === 'postgres') expired = expired.forUpdate().skipLocked();
      const rows = await expired.execute();
      for (const row of rows) {
        const attempts = Number(row.attempts);
        if (attempts >= Number(row.max_attempts)) {
          await trx
            .updateTable('jobs')
            .set({ status: 'failed', lease_owner: null, lease_expires_at: null, error_code: 'worker_lost', error_message: `The worker running this job stopped answering ${attempts} time(s).`, completed_at: now, updated_at: now })
            .where('id', '=', row.id)
            .execute();
          await this.options.settled?.(trx, row as JobRow, 'failed');
        } else {
          await trx
            .updateTable('jobs')
            .set({ status: 'pending', lease_owner: null, lease_expires_at: null, run_at: this.iso(this.options.backoffMs(attempts)), ...NO_PROGRESS, updated_at: now })
            .where('id', '=', row.id)
            .execute();
        }
      }
      return rows.length;
    });
  }

  /**
   * Takes a due pending job for `owner` — of the workspace whose last claim is oldest, then the
   * oldest of its jobs — or `null` when none is due.
   */
  async claim(owner: string): Promise<JobRow | null> {
    await this.reapExpired();
    const now = this.iso();
    const lease = this.iso(this.options.leaseMs);
    if (this.store.dialect === 'postgres') {
      // One statement: two workers claiming at once may both pick the same workspace (each skips
      // the other's locked row), which only delays the round-robin by one job.
      const result = await sql<JobRow>`
        with claimed as (
          update jobs set status = 'processing', lease_owner = ${owner}, lease_expires_at = ${lease},
            attempts = attempts + 1, started_at = coalesce(started_at, ${now}),
            progress_done = null, progress_total = null, updated_at = ${now}
          where id = (
            select j.id from jobs j left join workspace_claims w on w.workspace_id = j.workspace_id
            where j.status = 'pending' and j.run_at <= ${now}
            order by w.last_claimed_at asc nulls first, j.run_at, j.id limit 1 for update of j skip locked
          )
          returning *
        ), turn as (
          insert into workspace_claims (workspace_id, last_claimed_at) select workspace_id, ${now} from claimed
          on conflict (workspace_id) do update set last_claimed_at = excluded.last_claimed_at
        )
        select * from claimed`.execute(this.store.db);
      return result.rows[0] ?? null;
    }
    return this.store.db.transaction().execute(async (trx) => {
      const next = await trx
        .selectFrom('jobs as j')
        .leftJoin('workspace_claims as w', 'w.workspace_id', 'j.workspace_id')
        .select(['j.id', 'j.workspace_id'])
        .where('j.status', '=', 'pending')
        .where('j.run_at', '<=', now)
        .orderBy(sql`w.last_claimed_at asc nulls first`)
        .orderBy('j.run_at')
        .orderBy('j.id')
        .limit(1)
        .executeTakeFirst();
      if (!next) return null;
      await trx
        .updateTable('jobs')
        .set((eb) => ({ status: 'processing', lease_owner: owner, lease_expires_at: lease, attempts: eb('attempts', '+', 1), started_at: eb.fn.coalesce('started_at', eb.val(now)), ...NO_PROGRESS, updated_at: now }))
        .where('id', '=', next.id)
        .execute();
      await trx
        .insertInto('workspace_claims')
        .values({ workspace_id: next.workspace_id, last_claimed_at: now })
        .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ last_claimed_at: now }))
        .execute();
      return (await trx.selectFrom('jobs').selectAll().where('id', '=', next.id).executeTakeFirstOrThrow()) as JobRow;
    });
  }

  /** Extends the lease; `false` when `owner` no longer holds the job (it should stop). */
  async renew(id: string, owner: string): Promise<boolean> {
    const result = await this.store.db
      .updateTable('jobs')
      .set({ lease_expires_at: this.iso(this.options.leaseMs), updated_at: this.iso() })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'processing')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * Records how far the running attempt has got (`done` of `total` pages), under the same guard
   * as `renew`: `false` (nothing written) when `owner` no longer holds the job.
   */
  async progress(id: string, owner: string, done: number, total: number): Promise<boolean> {
    const result = await this.store.db
      .updateTable('jobs')
      .set({ progress_done: done, progress_total: total, updated_at: this.iso() })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'processing')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * Runs `work` in a transaction that holds the job (still `processing` under `owner`), then marks
   * it completed with what `work` answers. `false` (and `work` not run) when the lease was lost.
   */
  async complete(
    id: string,
    owner: string,
    work: (trx: Transaction<Database>, job: JobRow) => Promise<{ result: unknown; applied?: unknown }>,
    /** Locks to take before the job's, in the order every other writer takes them. */
    lockFirst?: (trx: Transaction<Database>) => Promise<void>,
  ): Promise<boolean> {
    return this.store.db.transaction().execute(async (trx) => {
      await lockFirst?.(trx);
      const job = await this.held(trx, id, owner);
      if (!job) return false;
      const outcome = await work(trx, job);
      const now = this.iso();
      await trx
        .updateTable('jobs')
        .set({
          status: 'completed',
          lease_owner: null,
          lease_expires_at: null,
          result: JSON.stringify(outcome.result),
          applied: outcome.applied === undefined ? null : JSON.stringify(outcome.applied),
          error_code: null,
          error_message: null,
          completed_at: now,
          updated_at: now,
        })
        .where('id', '=', id)
        .execute();
      await this.options.settled?.(trx, job, 'completed');
      return true;
    });
  }

  /**
   * An attempt failed: `failed` with the error when it is final or was the last attempt, else
   * back to `pending` after the backoff. `false` when the lease was lost.
   */
  async fail(id: string, owner: string, error: JobError): Promise<boolean> {
    return this.store.db.transaction().execute(async (trx) => {
      const job = await this.held(trx, id, owner);
      if (!job) return false;
      const now = this.iso();
      const attempts = Number(job.attempts);
      if (error.final || attempts >= Number(job.max_attempts)) {
        await trx
          .updateTable('jobs')
          .set({ status: 'failed', lease_owner: null, lease_expires_at: null, error_code: error.code, error_message: error.message, completed_at: now, updated_at: now })
          .where('id', '=', id)
          .execute();
        await this.options.settled?.(trx, job, 'failed');
      } else {
        await trx
          .updateTable('jobs')
          .set({ status: 'pending', lease_owner: null, lease_expires_at: null, error_code: error.code, error_message: error.message, run_at: this.iso(this.options.backoffMs(attempts)), ...NO_PROGRESS, updated_at: now })
          .where('id', '=', id)
          .execute();
      }
      return true;
    });
  }

  /**
   * Hands a job back untouched (the worker is stopping): `pending` again at once, and the attempt
   * it was given does not count.
   */
  async release(id: string, owner: string): Promise<boolean> {
    const result = await this.store.db
      .updateTable('jobs')
      .set((eb) => ({ status: 'pending', lease_owner: null, lease_expires_at: null, attempts: eb('attempts', '-', 1), run_at: this.iso(), ...NO_PROGRESS, updated_at: this.iso() }))
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'processing')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  private async held(trx: Transaction<Database>, id: string, owner: string): Promise<JobRow | undefined> {
    return forUpdate(trx.selectFrom('jobs').selectAll().where('id', '=', id).where('lease_owner', '=', owner).where('status', '=', 'processing'), this.store.dialect).executeTakeFirst();
  }
}
