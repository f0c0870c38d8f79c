import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ReaderUnavailable, UnreadableDocument } from './errors.js';
import type { DocxInfo } from './docx.js';
import { FairQueue, type FairQueueLimits } from './fair-queue.js';
import { residentBytes, watchMemory, yieldCpu } from './memory-watch.js';
import type { PdfReply, PdfRequest } from './pdf-worker.js';

export interface PdfInfo {
  pageCount: number;
  pageDimensions: Array<{ width: number; height: number }>;
}

export interface PdfAnalyzerOptions {
  /** Time one file may take. */
  timeoutMs?: number;
  /** Resident memory the helper may reach while reading one file; past it the file answers 422. */
  maxRssMb?: number;
  /** Files waiting per workspace and in all (see `FairQueue`). */
  queue?: FairQueueLimits;
  /** Helper processes, each reading one file at a time. */
  helpers?: number;
  /**
   * The helper's program (`pdf-worker`, speaking `PdfRequest` and `PdfReply` over IPC); tests give
   * stand-ins that stop at chosen moments.
   */
  helperScript?: string;
}

/**
 * Two helpers, each reading one file at a time and at most one file of a workspace at a time; up to
 * 60 s a file; 16 files waiting per workspace, 128 in all (README, Limits).
 */
export const PDF_ANALYSIS_DEFAULTS = {
  timeoutMs: 60_000,
  maxRssMb: 512,
  queue: { perKey: 16, total: 128, retryAfterS: 10 },
  helpers: 2,
} as const;

/**
 * PDF analysis and DOCX inspection off the event loop, in helper processes started on first use
 * and kept. A separate process rather than a worker thread: pdf.js and its heap (tens of MB)
 * stay out of the server's memory, and a file that crashes pdf.js or exhausts the helper's memory
 * kills only the helper, never the server.
 *
 * Each helper reads one file at a time, and a workspace has at most one file being read at a time,
 * workspaces taking turns for the helpers (`FairQueue`). With two helpers, one workspace's files,
 * however slow to read (up to the time limit each), never hold another workspace's upload: the
 * other helper is free for it unless a third workspace's file is being read there. When a helper
 * dies, runs over its time limit or over its memory limit, the file being read is the one to
 * blame: it answers 422, and the next file is read by a new helper as if nothing had happened.
 */
/** How long a new helper may take to load its modules before the file waiting for it fails. */
const START_TIMEOUT_MS = 60_000;

interface Helper {
  process: ChildProcess;
  /** Resolves when the helper said it is ready; rejects when it died or did not start in time. */
  ready: Promise<void>;
  /** Files handed to it so far. */
  reads: number;
  /** Its resident memory before its first file, once measured. */
  idleRss?: number;
}

/** What `readOn` answers when its helper stopped before the file reached it. */
const NOT_DELIVERED = Symbol('not delivered');

/**
 * Whether `helper`, holding `rss` bytes before its next file, is replaced by a new one first: past
 * the limit, or more than a quarter of the limit above what it held before its first file. A
 * helper that has read nothing yet is never replaced (a new one would be the same).
 */
export function helperToReplace(helper: { reads: number; idleRss?: number }, rss: number | null, maxRssBytes: number): boolean {
  if (rss === null || helper.reads === 0) return false;
  return rss > maxRssBytes || (helper.idleRss !== undefined && rss - helper.idleRss > maxRssBytes / 4);
}

export class PdfAnalyzer {
  /** Helpers started and not reading a file (at most `helpers` exist: one per file being read). */
  private readonly idle: Helper[] = [];
  /** Every helper started and not retired. */
  private readonly live = new Set<Helper>();
  private nextId = 1;
  private readonly queue: FairQueue;
  private readonly timeoutMs: number;
  private readonly maxRssBytes: number;
  private readonly helperScript: string | undefined;
  private closed = false;

  constructor(options: PdfAnalyzerOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? PDF_ANALYSIS_DEFAULTS.timeoutMs;
    this.maxRssBytes = (options.maxRssMb ?? PDF_ANALYSIS_DEFAULTS.maxRssMb) * 1024 * 1024;
    this.helperScript = options.helperScript;
    const helpers = options.helpers ?? PDF_ANALYSIS_DEFAULTS.helpers;
    if (!Number.isInteger(helpers) || helpers < 1) throw new RangeError(`helpers must be a whole number of at least 1, not ${helpers}`);
    this.queue = new FairQueue(options.queue ?? PDF_ANALYSIS_DEFAULTS.queue, helpers);
  }

  /** Reads `path` in its workspace's turn; rejects with `QueueFull` when that workspace already has its share waiting. */
  analyse(path: string, workspaceId: string): Promise<PdfInfo> {
    return this.enqueue<PdfInfo>(path, 'pdf', workspaceId);
  }

  /** Inspects a DOCX (`inspectDocx`) in the helper, in its workspace's turn, under the same limits. */
  inspectDocx(path: string, workspaceId: string): Promise<DocxInfo> {
    return this.enqueue<DocxInfo>(path, 'docx', workspaceId);
  }

  /** Files waiting for their turn (not the one being read): of `workspaceId`, or of all workspaces. */
  waitingCount(workspaceId?: string): number {
    return this.queue.waitingCount(workspaceId);
  }

  private enqueue<T>(path: string, kind: PdfRequest['kind'], workspaceId: string): Promise<T> {
    if (this.closed) return Promise.reject(new ReaderUnavailable('the PDF reader is shutting down'));
    return this.queue.run(workspaceId, () => this.read<T>(path, kind));
  }

  /**
   * Reads one file on an idle helper or a new one (the queue runs no more files at once than there
   * may be helpers), and gives the helper back for the next file if it is still fit. The file's
   * time limit starts once the helper is ready, so that a new helper's start on a busy machine
   * does not count against the file.
   */
  private async read<T>(path: string, kind: PdfRequest['kind']): Promise<T> {
    // The helper this read ends on (`readOn` may replace the one it was given).
    const used = { helper: this.idle.pop() ?? this.start() };
    try {
      const first = await this.readOn<T>(used, path, kind);
      if (first !== NOT_DELIVERED) return first;
      // The helper stopped before the file reached it (it died while idle, its exit not yet seen
      // when the file took it): the file is not to blame, and goes to a new helper, once.
      if (this.closed) throw new ReaderUnavailable('the PDF reader is shutting down');
      used.helper = this.start();
      const second = await this.readOn<T>(used, path, kind);
      if (second !== NOT_DELIVERED) return second;
      // Two helpers in a row stopped before the file reached them: the machine, not the file, is
      // at fault (out of memory or processes); the client may send it again later.
      throw new ReaderUnavailable('the PDF reader stopped twice before the file reached it');
    } finally {
      if (this.live.has(used.helper) && !this.closed) this.idle.push(used.helper);
    }
  }

  private async readOn<T>(used: { helper: Helper }, path: string, kind: PdfRequest['kind']): Promise<T | typeof NOT_DELIVERED> {
    const what = kind === 'pdf' ? 'the PDF' : 'the DOCX';
    const tooBig = () => new UnreadableDocument(`reading ${what} needs more than ${Math.round(this.maxRssBytes / 1024 / 1024)} MB of memory, more than is allowed for one file`);
    let started = used.helper;
    await started.ready;
    // Measured once before the file is handed over, not only every 25 ms while it is read (a small
    // file can be read between two samples). A helper that earlier files left holding more than a
    // quarter of the limit above what it held before its first file (pdf.js and V8 keep much of
    // what a large file took) is replaced first, so that a file is not refused for memory an earlier
    // one took; a new helper past the limit means no file can be read within it.
    let rss = await residentBytes(started.process.pid ?? -1);
    if (started.reads === 0) started.idleRss = rss ?? undefined;
    if (helperToReplace(started, rss, this.maxRssBytes)) {
      this.retire(started.process);
      // No new helper once closing: `close` has already ended the ones it knew.
      if (this.closed) throw new ReaderUnavailable('the PDF reader is shutting down');
      started = used.helper = this.start();
      await started.ready;
      rss = await residentBytes(started.process.pid ?? -1);
      started.idleRss = rss ?? undefined;
    }
    if (rss !== null && rss > this.maxRssBytes) {
      this.retire(started.process);
      throw tooBig();
    }
    started.reads += 1;
    const helper = started.process;
    const id = this.nextId++;
    return new Promise<T | typeof NOT_DELIVERED>((resolve, reject) => {
      let settled = false;
      // Whether the helper said it has the file: stopping before that, it never read it.
      let received = false;
      const finish = (outcome: T | Error | typeof NOT_DELIVERED) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        stopWatching();
        helper.off('message', onMessage);
        helper.off('exit', onExit);
        helper.off('disconnect', decide);
        helper.unref(); // an idle helper does not keep the process alive
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      // The helper is given up (no later file is handed to it) before the outcome is known, so
      // that the next file always starts on a live one.
      const giveUp = (why: string) => {
        this.retire(helper);
        finish(new UnreadableDocument(why));
      };
      const timer = setTimeout(() => giveUp(`${what} took longer than ${this.timeoutMs / 1000} s to read`), this.timeoutMs);
      const stopWatching = watchMemory(helper.pid ?? -1, this.maxRssBytes, () => {
        this.retire(helper);
        finish(tooBig());
      });
      const notDelivered = () => {
        this.retire(helper);
        finish(NOT_DELIVERED);
      };
      const onMessage = (reply: PdfReply) => {
        if (reply.id !== id || 'ready' in reply) return;
        if ('received' in reply) {
          received = true;
          return;
        }
        if (!reply.ok) finish(new UnreadableDocument(reply.reason));
        else finish(('docx' in reply ? reply.docx : { pageCount: reply.pageCount, pageDimensions: reply.pageDimensions }) as T);
      };
      const decide = () => (received ? finish(new UnreadableDocument(`${what} could not be read (the reader stopped on it)`)) : notDelivered());
      // 'exit' may come before the replies still in the channel are read (the event loop was
      // busy): the helper's acknowledgement, or even its answer, may be among them. They are all
      // emitted before the channel's 'disconnect', so the outcome is decided then.
      const onExit = () => (helper.connected ? helper.once('disconnect', decide) : decide());
      helper.on('message', onMessage);
      helper.on('exit', onExit);
      helper.ref(); // a file in progress keeps the process alive
      // A send to a helper whose channel has closed fails here (not as an 'error' event).
      helper.send({ id, path, kind } satisfies PdfRequest, (error) => {
        if (error) notDelivered();
      });
    });
  }

  /** Kills `helper` and makes sure it is never handed another file. */
  private retire(helper: ChildProcess): void {
    this.forget(helper);
    helper.kill('SIGKILL');
  }

  /** Takes `helper` out of the pool (it was retired or has exited). */
  private forget(helper: ChildProcess): void {
    for (const h of this.live) {
      if (h.process !== helper) continue;
      this.live.delete(h);
      const at = this.idle.indexOf(h);
      if (at >= 0) this.idle.splice(at, 1);
    }
  }

  /** A new helper, in the pool until it is retired or exits. */
  private start(): Helper {
    const fromSource = import.meta.url.endsWith('.ts');
    const script = this.helperScript ?? fileURLToPath(new URL(fromSource ? './pdf-worker.ts' : './pdf-worker.js', import.meta.url));
    const helper = fork(script, [], {
      // Running from source (tests, under tsx) the helper needs the TypeScript loader too. The
      // heap limit stops runaway JavaScript objects early; `watchMemory` bounds the rest.
      execArgv: [...(fromSource ? ['--import', 'tsx'] : []), `--max-old-space-size=${Math.max(256, Math.round(this.maxRssBytes / 1024 / 1024))}`],
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      serialization: 'advanced',
    });
    yieldCpu(helper.pid);
    helper.on('error', () => helper.kill('SIGKILL'));
    helper.on('exit', () => this.forget(helper));
    helper.unref();
    helper.channel?.unref();
    const ready = new Promise<void>((resolve, reject) => {
      // No file is to blame for a helper that cannot start: the machine is (out of memory or
      // processes), and the upload that waited for it answers 503.
      const fail = (why: string) => {
        cleanUp();
        this.retire(helper);
        reject(new ReaderUnavailable(why));
      };
      const timer = setTimeout(() => fail(`the PDF reader did not start within ${START_TIMEOUT_MS / 1000} s`), START_TIMEOUT_MS);
      const onMessage = (reply: PdfReply) => {
        if (!('ready' in reply)) return;
        cleanUp();
        resolve();
      };
      const onExit = () => fail('the PDF reader stopped while starting');
      // A process that could not be made at all (EAGAIN, ENOMEM) reports only 'error', no 'exit'.
      const onError = () => fail('the PDF reader could not be started');
      const cleanUp = () => {
        clearTimeout(timer);
        helper.off('message', onMessage);
        helper.off('exit', onExit);
        helper.off('error', onError);
        helper.unref();
      };
      helper.ref(); // a start in progress keeps the process alive
      helper.on('message', onMessage);
      helper.on('exit', onExit);
      helper.on('error', onError);
    });
    const started = { process: helper, ready, reads: 0 };
    this.live.add(started);
    return started;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.queue.clear(new ReaderUnavailable('the PDF reader is shutting down'));
    const helpers = [...this.live].map((h) => h.process);
    this.live.clear();
    this.idle.length = 0;
    await Promise.all(
      helpers.map(async (helper) => {
        if (helper.exitCode !== null || helper.signalCode !== null) return;
        const exited = new Promise((resolve) => helper.once('exit', resolve));
        helper.ref(); // so that waiting for its exit keeps the event loop alive
        helper.kill('SIGTERM');
        await exited;
      }),
    );
  }
}
