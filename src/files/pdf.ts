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

/**
 * PDF analysis off the event loop, in one helper process started on first use and kept. A
 * separate process rather than a worker thread: pdf.js and its heap (tens of MB) stay out of the
 * server's memory, and a file that crashes pdf.js or exhausts its heap kills only the helper
 * (that upload answers 422; the next one starts a new helper), never the server. Each file has a
 * time limit, after which the helper is killed.
 */
export class PdfAnalyzer {
  private helper: ChildProcess | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: PdfReply) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();

  constructor(private readonly timeoutMs = 60_000) {}

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
      const waiting = this.pending.get(reply.id);
      if (!waiting) return;
      clearTimeout(waiting.timer);
      this.pending.delete(reply.id);
      waiting.resolve(reply);
    });
    helper.on('error', () => helper.kill('SIGKILL'));
    helper.on('exit', () => {
      if (this.helper === helper) this.helper = null;
      this.fail(new UnreadableDocument('the PDF could not be read (the reader stopped)'));
    });
    // Idle, it must not keep the server alive; while files are being read it is referenced again.
    helper.unref();
    helper.channel?.unref();
    this.helper = helper;
    return helper;
  }

  private fail(error: Error): void {
    for (const [id, waiting] of this.pending) {
      clearTimeout(waiting.timer);
      this.pending.delete(id);
      waiting.reject(error);
    }
    this.helper?.channel?.unref();
  }

  async analyse(path: string): Promise<PdfInfo> {
    const helper = this.start();
    const id = this.nextId++;
    helper.channel?.ref();
    const reply = await new Promise<PdfReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new UnreadableDocument(`the PDF took longer than ${this.timeoutMs / 1000} s to read`));
        helper.kill('SIGKILL');
      }, this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      helper.send({ id, path } satisfies PdfRequest);
    }).finally(() => {
      if (this.pending.size === 0) helper.channel?.unref();
    });
    if (!reply.ok) throw new UnreadableDocument(reply.reason);
    return { pageCount: reply.pageCount, pageDimensions: reply.pageDimensions };
  }

  async close(): Promise<void> {
    const helper = this.helper;
    this.helper = null;
    if (!helper || helper.exitCode !== null) return;
    const exited = new Promise((resolve) => helper.once('exit', resolve));
    helper.ref(); // so that waiting for its exit keeps the event loop alive
    helper.kill('SIGTERM');
    await exited;
  }
}
