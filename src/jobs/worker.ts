import crypto from 'node:crypto';
import type { Transaction } from 'kysely';
import os from 'node:os';
import { BlobNotFound, type BlobStore } from '../blobs/store.js';
import type { AiConfig } from '../detect/ai.js';
import { DetectionError, detectInProcess, type RunOptions } from '../detect/runner.js';
import type { DetectionResult } from '../detect/types.js';
import { systemClock, type Clock } from '../domain/clock.js';
import { completionOf } from '../services/parse-jobs/complete.js';
import type { ParseParams } from '../services/parse-jobs/params.js';
import type { Store } from '../store/db.js';
import { documentOfJob, lockDocumentOfJob, PARSE_JOB } from '../store/parse-jobs.js';
import type { Database, JobRow } from '../store/schema.js';
import type { JobError, JobQueue } from './queue.js';

export interface WorkerLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WorkerOptions {
  store: Store;
  queue: JobQueue;
  blobs: BlobStore;
  log: WorkerLog;
  /** How often an idle worker looks for work (it is also woken when a job is queued here). */
  pollMs?: number;
  /** Detection itself (a process of its own by default). */
  detect?: (data: Uint8Array, options: RunOptions) => Promise<DetectionResult>;
  /** The time and memory one detection may use (default `DETECTION_LIMITS`). */
  detectionLimits?: { timeoutMs?: number; maxMemoryMb?: number };
  /** The model of the `ai` engine; a job asking for `ai` on a worker without one gets the layout result, with a warning. */
  ai?: AiConfig | null;
  /** Least time between two progress writes of a running job (default 500 ms). */
  progressIntervalMs?: number;
  /** The clock of what completing writes (default: the system's). */
  clock?: Clock;
}

/**
 * Writes a running job's progress as detection reports it: the first report at once, then at most
 * one write per `intervalMs` — the latest value, those in between dropped — and the last page
 * (`done === total`) without waiting; never two writes at a time. `write` must not reject.
 */
export class ProgressWriter {
  private latest: { done: number; total: number } | null = null;
  private inFlight: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastWriteAt = -Infinity;
  private closed = false;

  constructor(
    private readonly write: (done: number, total: number) => Promise<void>,
    private readonly intervalMs = 500,
    private readonly now: () => number = Date.now,
  ) {}

  report(done: number, total: number): void {
    if (this.closed) return;
    this.latest = { done, total };
    this.pump();
  }

  /** No more writes (a value not written yet is dropped); resolves when the one in flight is done. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.inFlight;
  }

  private pump(): void {
    if (this.closed || this.inFlight || !this.latest) return;
    const wait = this.latest.done >= this.latest.total ? 0 : this.lastWriteAt + this.intervalMs - this.now();
    if (wait > 0) {
      this.timer ??= setTimeout(() => {
        this.timer = null;
        this.pump();
      }, wait);
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const { done, total } = this.latest;
    this.latest = null;
    this.inFlight = this.write(done, total).finally(() => {
      this.inFlight = null;
      this.pump();
    });
    // Taken once the write has started (its synchronous part run), so that the next one starts at
    // least an interval after it by any clock read inside the write too: taken before, a
    // millisecond turning in between made two writes 149 ms apart on a 150 ms interval (a CI run).
    this.lastWriteAt = this.now();
  }
}

const final = (code: string, message: string): JobError => ({ code, message, final: true });

/**
 * One worker: claims parse jobs one at a time and runs them, renewing the lease while a job runs.
 * `stop` stops claiming, lets the running job finish within the grace period, and otherwise stops
 * it and hands it back to the queue (the attempt does not count).
 */
export class ParseWorker {
  readonly owner = `${os.hostname()}-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private current: { job: JobRow; abort: AbortController } | null = null;

  constructor(private readonly options: WorkerOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** A job was queued: look now rather than at the next poll. */
  wake(): void {
    this.wakeUp?.();
  }

  /**
   * Stops claiming; the running job (also one whose claim was under way) may finish within
   * `graceMs`, else it is stopped and handed back. Resolves when the worker is idle.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.running = false;
    this.wake();
    const deadline = setTimeout(() => this.current?.abort.abort(), graceMs);
    try {
      await this.loop;
    } finally {
      clearTimeout(deadline);
    }
  }

  private async run(): Promise<void> {
    const { queue, log } = this.options;
    while (this.running) {
      let job: JobRow | null = null;
      try {
        job = await queue.claim(this.owner);
      } catch (error) {
        log.error({ err: error }, 'could not claim a job');
      }
      if (job && !this.running) {
        // Told to stop while claiming: the job goes back untouched.
        await queue.release(job.id, this.owner).catch((e: unknown) => log.warn({ err: e, job: job!.id }, 'could not hand a job back'));
        break;
      }
      if (!job) {
        if (!this.running) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.options.pollMs ?? 500);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wakeUp = null;
        continue;
      }
      const abort = new AbortController();
      this.current = { job, abort };
      await this.process(job, abort.signal);
      this.current = null;
    }
  }

  private async process(job: JobRow, signal: AbortSignal): Promise<void> {
    const { queue, log, store } = this.options;
    const started = Date.now();
    let lost = false;
    let renewal: NodeJS.Timeout | undefined;
    try {
      const lease = new AbortController();
      // A renewal or a progress write that finds the job gone: another worker has it; stop.
      const leaseHeld = (still: boolean) => {
        if (!still) {
          lost = true;
          lease.abort();
        }
      };
      renewal = setInterval(() => {
        queue.renew(job.id, this.owner).then(leaseHeld, (error: unknown) => log.warn({ err: error, job: job.id }, 'could not renew the lease'));
      }, Math.max(50, Math.floor(queue.options.leaseMs / 3)));
      const stop = AbortSignal.any([signal, lease.signal]);
      if (job.kind !== PARSE_JOB) {
        await queue.fail(job.id, this.owner, final('unknown_job_kind', `no worker runs jobs of kind "${job.kind}"`));
        return;
      }
      const data = await this.input(job);
      if ('code' in data) {
        await queue.fail(job.id, this.owner, data);
        return;
      }
      const detect = this.options.detect ?? detectInProcess;
      // Progress is for polling clients only: a write that fails is logged, never fails the job.
      const progress = new ProgressWriter(
        (done, total) => queue.progress(job.id, this.owner, done, total).then(leaseHeld, (error: unknown) => log.warn({ err: error, job: job.id }, 'could not record progress')),
        this.options.progressIntervalMs,
      );
      let result: DetectionResult;
      try {
        const { engine } = JSON.parse(job.params) as ParseParams;
        result = await detect(data.bytes, {
          ...this.options.detectionLimits,
          signal: stop,
          onProgress: (done, total) => progress.report(done, total),
          engine,
          ai: this.options.ai ?? null,
        });
      } finally {
        await progress.close();
      }
      // The document's row first, as every field edit and a permanent delete take it (else
      // PostgreSQL could deadlock a completion against a delete of the same document).
      const lockDocument = (trx: Transaction<Database>) => lockDocumentOfJob(trx, store.dialect, job.document_id);
      const clock = this.options.clock ?? systemClock;
      const completed = await queue.complete(job.id, this.owner, (trx, held) => completionOf({ store, clock }, trx, held, result), lockDocument);
      log.info({ job: job.id, ms: Date.now() - started, fields: result.fields.length, completed }, completed ? 'parse job completed' : 'parse job lost its lease before completing');
    } catch (error) {
      if (signal.aborted && !lost) {
        // Stopping: hand the job back untouched for another worker (or this one, restarted).
        await queue.release(job.id, this.owner).catch((e: unknown) => log.warn({ err: e, job: job.id }, 'could not hand a job back'));
        log.info({ job: job.id }, 'parse job handed back (stopping)');
        return;
      }
      if (lost) {
        log.warn({ job: job.id }, 'parse job lost its lease; another worker has it');
        return;
      }
      const failure: JobError = error instanceof DetectionError ? { code: error.code, message: error.message, final: error.final } : { code: 'detection_failed', message: 'detection failed unexpectedly', final: false };
      // The client reads the job's error; what went wrong inside goes to the log only.
      if (!(error instanceof DetectionError)) log.error({ err: error, job: job.id }, 'parse job failed');
      else if (error.detail) log.warn({ job: job.id, code: error.code, detail: error.detail }, 'parse job attempt failed');
      await queue.fail(job.id, this.owner, failure).catch((e: unknown) => log.error({ err: e, job: job.id }, 'could not record a failed job'));
    } finally {
      clearInterval(renewal);
    }
  }

  /** The PDF to read: the document's own, or the PDF rendition of a DOCX. */
  private async input(job: JobRow): Promise<{ bytes: Uint8Array } | JobError> {
    const document = await documentOfJob(this.options.store.db, job.document_id);
    if (!document || document.deleted_at !== null) return final('document_deleted', 'the document was deleted before the job ran');
    const hash = document.file_type === 'pdf' ? document.sha256 : document.rendition_sha256;
    if (!hash) {
      return final(
        'no_pdf_rendition',
        'this DOCX has no PDF rendition (LibreOffice was not available when it was uploaded), so its pages cannot be read; upload it again with LibreOffice installed, or upload a PDF',
      );
    }
    try {
      // One buffer of the file's size, filled as it is read, then moved to the detection thread.
      const { stream, size } = await this.options.blobs.open(hash);
      const bytes = new Uint8Array(new ArrayBuffer(size));
      let offset = 0;
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        if (offset + chunk.length > size) throw new Error('the stored file is larger than recorded');
        bytes.set(chunk, offset);
        offset += chunk.length;
      }
      if (offset !== size) throw new Error('the stored file is shorter than recorded');
      return { bytes };
    } catch (error) {
      // Not a detection failure: the file itself cannot be had. A missing file will not come back
      // (final); a store that did not answer may next time (retried, as far as the attempts go).
      const missing = error instanceof BlobNotFound;
      this.options.log.error({ err: error, job: job.id, sha256: hash, store: this.options.blobs.kind }, 'the stored file of a parse job cannot be read');
      return {
        code: 'file_unavailable',
        message: missing
          ? `the document's stored file is missing from the ${this.options.blobs.kind} blob store; it cannot be read by this or any worker`
          : `the document's stored file could not be read from the ${this.options.blobs.kind} blob store just now; the job is tried again while attempts remain`,
        final: missing,
      };
    }
  }
}
