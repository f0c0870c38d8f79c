import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { UnreadableDocument } from './errors.js';
import type { PdfReply, PdfRequest } from './pdf-worker.js';

export interface PdfInfo {
  pageCount: number;
  pageDimensions: Array<{ width: number; height: number }>;
}

/** Heap limit of the helper: a hostile PDF that makes pdf.js grow without end is stopped there. */
const HELPER_HEAP_MB = 512;

interface Job {
  id: number;
  path: string;
  resolve: (info: PdfInfo) => void;
  reject: (error: Error) => void;
}

/**
 * PDF analysis off the event loop, in one helper process started on first use and kept. A
 * separate process rather than a worker thread: pdf.js and its heap (tens of MB) stay out of the
 * server's memory, and a file that crashes pdf.js or exhausts its heap kills only the helper,
 * never the server.
 *
 * Files are read one at a time (reading a PDF's page sizes takes milliseconds; the time of an
 * upload is in receiving it), so when the helper dies or a file runs over its time limit, the
 * file being read is the one to blame: it answers 422, and the files waiting behind it are read
 * by a new helper as if nothing had happened.
 */
export class PdfAnalyzer {
  private helper: ChildProcess | null = null;
  private nextId = 1;
  private readonly queue: Job[] = [];
  private current: { job: Job; timer: NodeJS.Timeout } | null = null;

  constructor(private readonly timeoutMs = 60_000) {}

  analyse(path: string): Promise<PdfInfo> {
    return new Promise<PdfInfo>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, path, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    if (this.current || this.queue.length === 0) return;
    const job = this.queue.shift()!;
    const helper = this.start();
    helper.ref(); // a file in progress keeps the process alive; an idle helper does not
    const timer = setTimeout(() => {
      this.finish(job, new UnreadableDocument(`the PDF took longer than ${this.timeoutMs / 1000} s to read`));
      helper.kill('SIGKILL');
    }, this.timeoutMs);
    this.current = { job, timer };
    helper.send({ id: job.id, path: job.path } satisfies PdfRequest);
  }

  private finish(job: Job, outcome: PdfInfo | Error): void {
    if (this.current?.job !== job) return;
    clearTimeout(this.current.timer);
    this.current = null;
    this.helper?.unref();
    if (outcome instanceof Error) job.reject(outcome);
    else job.resolve(outcome);
    this.next();
  }

  private start(): ChildProcess {
    if (this.helper) return this.helper;
    const fromSource = import.meta.url.endsWith('.ts');
    const script = fileURLToPath(new URL(fromSource ? './pdf-worker.ts' : './pdf-worker.js', import.meta.url));
    const helper = fork(script, [], {
      // Running from source (tests, under tsx) the helper needs the TypeScript loader too.
      execArgv: [...(fromSource ? ['--import', 'tsx'] : []), `--max-old-space-size=${HELPER_HEAP_MB}`],
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      serialization: 'advanced',
    });
    helper.on('message', (reply: PdfReply) => {
      const job = this.current?.job;
      if (!job || reply.id !== job.id) return;
      this.finish(job, reply.ok ? { pageCount: reply.pageCount, pageDimensions: reply.pageDimensions } : new UnreadableDocument(reply.reason));
    });
    helper.on('error', () => helper.kill('SIGKILL'));
    helper.on('exit', () => {
      if (this.helper === helper) this.helper = null;
      const job = this.current?.job;
      if (job) this.finish(job, new UnreadableDocument('the PDF could not be read (the reader stopped on it)'));
    });
    helper.unref();
    helper.channel?.unref();
    this.helper = helper;
    return helper;
  }

  async close(): Promise<void> {
    const helper = this.helper;
    this.helper = null;
    for (const job of this.queue.splice(0)) job.reject(new Error('the PDF reader is shutting down'));
    if (!helper || helper.exitCode !== null) return;
    const exited = new Promise((resolve) => helper.once('exit', resolve));
    helper.ref(); // so that waiting for its exit keeps the event loop alive
    helper.kill('SIGTERM');
    await exited;
  }
}
