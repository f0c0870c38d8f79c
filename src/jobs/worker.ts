import crypto from 'node:crypto';
import os from 'node:os';
import type { BlobStore } from '../blobs/store.js';
import { DetectionError, detectInThread, type RunOptions } from '../detect/runner.js';
import type { DetectionResult } from '../detect/types.js';
import type { Store } from '../store/db.js';
import { completionOf, PARSE_JOB } from '../store/parse-jobs.js';
import type { JobRow } from '../store/schema.js';
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
  /** Detection itself (a worker thread by default). */
  detect?: (data: Uint8Array, options: RunOptions) => Promise<DetectionResult>;
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
  private current: { job: JobRow; abort: AbortController; done: Promise<void> } | null = null;

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

  async stop(graceMs = 10_000): Promise<void> {
    this.running = false;
    this.wake();
    const current = this.current;
    if (current) {
      const finished = await Promise.race([current.done.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), graceMs).unref())]);
      if (!finished) current.abort.abort();
    }
    await this.loop;
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
      if (!job) {
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
      const done = this.process(job, abort.signal);
      this.current = { job, abort, done };
      await done;
      this.current = null;
    }
  }

  private async process(job: JobRow, signal: AbortSignal): Promise<void> {
    const { queue, log, store } = this.options;
    const started = Date.now();
    let lost = false;
    const lease = new AbortController();
    const renewal = setInterval(() => {
      queue.renew(job.id, this.owner).then(
        (held) => {
          if (!held) {
            lost = true;
            lease.abort();
          }
        },
        (error: unknown) => log.warn({ err: error, job: job.id }, 'could not renew the lease'),
      );
    }, Math.max(50, Math.floor(queue.options.leaseMs / 3)));
    const stop = AbortSignal.any([signal, lease.signal]);
    try {
      if (job.kind !== PARSE_JOB) {
        await queue.fail(job.id, this.owner, final('unknown_job_kind', `no worker runs jobs of kind "${job.kind}"`));
        return;
      }
      const data = await this.input(job);
      if ('code' in data) {
        await queue.fail(job.id, this.owner, data);
        return;
      }
      const detect = this.options.detect ?? detectInThread;
      const result = await detect(data.bytes, { signal: stop });
      const completed = await queue.complete(job.id, this.owner, (trx, held) => completionOf(trx, store, held, result));
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
      if (!(error instanceof DetectionError)) log.error({ err: error, job: job.id }, 'parse job failed');
      await queue.fail(job.id, this.owner, failure).catch((e: unknown) => log.error({ err: e, job: job.id }, 'could not record a failed job'));
    } finally {
      clearInterval(renewal);
    }
  }

  /** The PDF to read: the document's own, or the PDF rendition of a DOCX. */
  private async input(job: JobRow): Promise<{ bytes: Uint8Array } | JobError> {
    const document = await this.options.store.db.selectFrom('documents').selectAll().where('id', '=', job.document_id).executeTakeFirst();
    if (!document || document.deleted_at !== null) return final('document_deleted', 'the document was deleted before the job ran');
    const hash = document.file_type === 'pdf' ? document.sha256 : document.rendition_sha256;
    if (!hash) {
      return final(
        'no_pdf_rendition',
        'this DOCX has no PDF rendition (LibreOffice was not available when it was uploaded), so its pages cannot be read; upload it again with LibreOffice installed, or upload a PDF',
      );
    }
    const { stream } = await this.options.blobs.open(hash);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const all = Buffer.concat(chunks);
    // A copy of its own, so that the bytes can be moved to the detection thread.
    return { bytes: new Uint8Array(all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength)) };
  }
}
