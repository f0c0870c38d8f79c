import { Worker } from 'node:worker_threads';
import type { AiConfig } from './ai.js';
import type { ThreadInput, ThreadMessage } from './thread.js';
import type { DetectionResult } from './types.js';

/** Why a detection did not give a result; `final` when trying again cannot help. */
export class DetectionError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly final: boolean,
  ) {
    super(message);
    this.name = 'DetectionError';
  }
}

export interface RunOptions {
  timeoutMs?: number;
  onProgress?: (done: number, total: number) => void;
  /** Aborting stops the thread at once (the caller hands the job back). */
  signal?: AbortSignal;
  /** `layout` (default) or `ai` (the layout candidates reviewed by the model in `ai`). */
  engine?: 'layout' | 'ai';
  ai?: AiConfig | null;
}

/** A thread body that registers tsx and then imports `entry` (running from source only). */
function bootstrap(entry: URL): string {
  const api = import.meta.resolve('tsx/esm/api');
  return `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); }).catch((error) => { throw error; });`;
}

/** Heap of a detection thread: a hostile PDF that makes pdf.js grow is stopped there, not the server. */
const THREAD_HEAP_MB = 512;

/**
 * Detects the fields of a PDF in a worker thread of its own, so that the CPU work never holds up
 * the event loop (requests stay responsive while a 200-page PDF is read). One thread per job: it
 * starts in tens of milliseconds, and whatever pdf.js leaves behind goes with it.
 */
export function detectInThread(data: Uint8Array, options: RunOptions = {}): Promise<DetectionResult> {
  const fromSource = import.meta.url.endsWith('.ts');
  // From source (tests, under tsx) the thread registers the TypeScript loader before it loads
  // its module; built, it loads the JavaScript directly and inherits the parent's Node options.
  const entry = new URL(fromSource ? './thread.ts' : './thread.js', import.meta.url);
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  const worker = new Worker(fromSource ? bootstrap(entry) : entry, {
    ...(fromSource ? { eval: true } : {}),
    // The AI review stops at 90 % of the time limit: the pages it did not reach keep their layout
    // fields, and the job completes rather than timing out.
    workerData: { data, engine: options.engine ?? 'layout', ai: options.ai ?? null, reviewBy: Date.now() + Math.floor(timeoutMs * 0.9) } satisfies ThreadInput,
    transferList: [data.buffer as ArrayBuffer],
    resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
  });
  return new Promise<DetectionResult>((resolve, reject) => {
    let settled = false;
    const finish = (outcome: DetectionResult | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(() => finish(new DetectionError('detection_timeout', `detection took longer than ${Math.round(timeoutMs / 1000)} s`, false)), timeoutMs);
    const onAbort = () => finish(new DetectionError('aborted', 'detection was stopped', false));
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort);
    worker.on('message', (message: ThreadMessage) => {
      if (message.type === 'progress') options.onProgress?.(message.done, message.total);
      else if (message.type === 'result') finish(message.result);
      else finish(new DetectionError(message.unreadable ? 'unreadable_document' : 'detection_failed', message.message, message.unreadable));
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const memory = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
      finish(new DetectionError(memory ? 'unreadable_document' : 'detection_failed', memory ? `reading the PDF needed more than ${THREAD_HEAP_MB} MB` : error.message, memory));
    });
    worker.on('exit', (code) => finish(new DetectionError('detection_failed', `the detection thread stopped (exit ${code})`, false)));
  });
}
