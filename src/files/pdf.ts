import { Worker } from 'node:worker_threads';
import { UnreadableDocument } from './errors.js';
import type { PdfReply, PdfRequest } from './pdf-worker.js';

export interface PdfInfo {
  pageCount: number;
  pageDimensions: Array<{ width: number; height: number }>;
}

/**
 * PDF analysis off the event loop: one worker thread, started on first use and kept, with a time
 * limit per file (a worker that exceeds it is terminated and replaced).
 */
export class PdfAnalyzer {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: PdfReply) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();

  constructor(private readonly timeoutMs = 60_000) {}

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = import.meta.url.endsWith('.ts')
      ? // Running from source (tests, under tsx): the worker needs the TypeScript loader too.
        new Worker(
          `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(new URL('./pdf-worker.ts', import.meta.url).href)}); });`,
          { eval: true },
        )
      : new Worker(new URL('./pdf-worker.js', import.meta.url));
    worker.unref();
    worker.on('message', (reply: PdfReply) => {
      const waiting = this.pending.get(reply.id);
      if (!waiting) return;
      clearTimeout(waiting.timer);
      this.pending.delete(reply.id);
      waiting.resolve(reply);
    });
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
      this.fail(new UnreadableDocument('the PDF could not be read (the reader stopped)'));
    });
    this.worker = worker;
    return worker;
  }

  private fail(error: Error): void {
    for (const [id, waiting] of this.pending) {
      clearTimeout(waiting.timer);
      this.pending.delete(id);
      waiting.reject(error);
    }
  }

  async analyse(path: string): Promise<PdfInfo> {
    const worker = this.start();
    const id = this.nextId++;
    const reply = await new Promise<PdfReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new UnreadableDocument(`the PDF took longer than ${this.timeoutMs / 1000} s to read`));
        void worker.terminate();
      }, this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, path } satisfies PdfRequest);
    });
    if (!reply.ok) throw new UnreadableDocument(reply.reason);
    return { pageCount: reply.pageCount, pageDimensions: reply.pageDimensions };
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
