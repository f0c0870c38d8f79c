import { Worker, type WorkerOptions } from 'node:worker_threads';
import type { DispatcherLog } from './dispatcher.js';
import type { PlainError, ThreadData, ToParent, ToThread } from './thread-messages.js';

/** The thread's module: compiled (`dist/`) or, under tsx (tests, benchmarks), the source. */
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const THREAD_URL = new URL(FROM_SOURCE ? './thread.ts' : './thread.js', import.meta.url);

function newThread(options: WorkerOptions): Worker {
  if (!FROM_SOURCE) return new Worker(THREAD_URL, options);
  // A worker does not inherit tsx's module hooks: it registers them, then loads the source.
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(THREAD_URL.href)}); })`;
  return new Worker(boot, { ...options, eval: true });
}

export interface DispatcherThreadOptions extends ThreadData {
  /** Where the thread's lines are written (the API's logger). */
  log: DispatcherLog;
  /** The wait before a thread that died is started again (default 1 s, doubling up to a minute). */
  restartDelayMs?: number;
}

function asError(plain: PlainError): Error {
  return Object.assign(new Error(plain.message), plain);
}

/**
 * `formsign serve`'s webhook deliveries, in a worker thread (`thread.ts`) with its own database
 * connection: the API's event loop never claims, signs, holds the receivers' sockets or records
 * outcomes, so a slow receiver or a burst of deliveries costs requests only the CPU they share.
 *
 * `wake()` and `stop()` are the dispatcher's own. A thread that dies (an uncaught error) is logged
 * and started again after a pause; what it had claimed is attempted again when the leases run out,
 * as after a crash of a worker process.
 */
export class DispatcherThread {
  private worker: Worker | null = null;
  private current = '';
  private stopping = false;
  private wakePending = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private restartDelay: number;
  /** Once a thread has run, one that dies is started again (one that cannot start at first fails `start`). */
  private ranOnce = false;
  private exited: Promise<number> = Promise.resolve(0);

  private constructor(private readonly options: DispatcherThreadOptions) {
    this.restartDelay = options.restartDelayMs ?? 1000;
  }

  /** Starts the thread; resolves once its dispatcher runs (rejects if the thread could not start). */
  static async start(options: DispatcherThreadOptions): Promise<DispatcherThread> {
    const thread = new DispatcherThread(options);
    await thread.spawn();
    return thread;
  }

  /** The lease owner of the running thread's dispatcher. */
  get owner(): string {
    return this.current;
  }

  /** Something was queued: the thread looks now rather than at its next poll (one message per turn of the event loop). */
  wake(): void {
    if (this.wakePending || !this.worker) return;
    this.wakePending = true;
    setImmediate(() => {
      this.wakePending = false;
      this.post({ type: 'wake' });
    });
  }

  /**
   * The dispatcher's stop, in the thread: no new claims; attempts in flight have `graceMs`, then
   * are cut off and handed back. Resolves when the thread has ended; rejects if its stop failed.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (!worker) return;
    this.post({ type: 'stop', graceMs });
    // The thread's own stop is bounded by the grace and a last write; past that it is ended.
    const cutOff = setTimeout(() => void worker.terminate(), graceMs + 10_000);
    try {
      const code = await this.exited;
      if (code !== 0) throw new Error(`the webhook delivery thread stopped with exit code ${code}`);
    } finally {
      clearTimeout(cutOff);
    }
  }

  private post(message: ToThread): void {
    this.worker?.postMessage(message);
  }

  private spawn(): Promise<void> {
    const { log: _log, restartDelayMs: _delay, ...data } = this.options;
    const worker = newThread({ workerData: data satisfies ThreadData, stdout: false, stderr: false });
    this.worker = worker;
    let stopError: PlainError | undefined;
    return new Promise<void>((resolve, reject) => {
      let started = false;
      worker.on('message', (message: ToParent) => {
        if (message.type === 'started') {
          started = true;
          this.ranOnce = true;
          this.current = message.owner;
          this.restartDelay = this.options.restartDelayMs ?? 1000;
          resolve();
        } else if (message.type === 'log') {
          this.options.log[message.level](message.err ? { ...message.obj, err: asError(message.err) } : message.obj, message.msg);
        } else if (message.type === 'stopped') {
          stopError = message.error;
        }
      });
      worker.on('error', (error) => {
        if (!started) reject(error);
        else this.options.log.error({ err: error }, 'the webhook delivery thread failed');
      });
      this.exited = new Promise<number>((done) =>
        worker.once('exit', (code) => {
          if (this.worker === worker) this.worker = null;
          if (stopError) this.options.log.error({ err: asError(stopError) }, 'the webhook delivery thread did not stop cleanly');
          if (!started) reject(new Error(`the webhook delivery thread ended at start-up (exit code ${code})`));
          if (this.ranOnce && !this.stopping) this.restartLater(code);
          done(code);
        }),
      );
    });
  }

  private restartLater(code: number): void {
    const delay = this.restartDelay;
    this.restartDelay = Math.min(this.restartDelay * 2, 60_000);
    this.options.log.error({ exitCode: code, restartInMs: delay }, 'the webhook delivery thread ended; starting it again (deliveries it held are attempted again when their leases run out)');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopping) return;
      // One that fails to start ends too, and is started again later (its exit above).
      this.spawn().catch((error: unknown) => this.options.log.error({ err: error }, 'the webhook delivery thread could not be started again'));
    }, delay);
  }
}
