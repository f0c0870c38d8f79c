import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { watchMemory, yieldCpu } from '../files/memory-watch.js';
import type { AiConfig } from './ai.js';
import type { ThreadInput, ThreadMessage } from './thread.js';
import type { DetectionResult } from './types.js';

/** Why a detection did not give a result; `final` when trying again cannot help. */
export class DetectionError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly final: boolean,
    /** What went wrong inside, for the server's log only (never shown to the client). */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'DetectionError';
  }
}

/** The time and memory one detection may use (README, Limits). */
export const DETECTION_LIMITS = {
  timeoutMs: 10 * 60_000,
  maxMemoryMb: 1024,
} as const;

export interface RunOptions {
  /** Default `DETECTION_LIMITS.timeoutMs`. */
  timeoutMs?: number;
  /** Resident memory the detection process may reach; default `DETECTION_LIMITS.maxMemoryMb`. */
  maxMemoryMb?: number;
  onProgress?: (done: number, total: number) => void;
  /** Aborting stops the detection at once (the caller hands the job back). */
  signal?: AbortSignal;
  /** `layout` (default) or `ai` (the layout candidates reviewed by the model in `ai`). */
  engine?: 'layout' | 'ai';
  ai?: AiConfig | null;
}

/** How long a detection process may take to start (load its modules) before the job is retried. */
const START_TIMEOUT_MS = 60_000;

/** The last bytes of the process's stderr kept, to tell a heap exhaustion from another crash. */
const STDERR_TAIL = 4096;

/**
 * Detects the fields of a PDF in a process of its own, one per job, so that neither the CPU work
 * nor the memory of a hostile file reaches the server: a content stream that inflates to
 * gigabytes fills the detection process's buffers, not the API's. The process's resident memory
 * is watched (`watchMemory`) and it is killed past `maxMemoryMb` — its JavaScript heap limit
 * alone would not bound the typed arrays pdf.js fills — and that failure is final
 * (`unreadable_document`: trying again needs the same memory). It starts in a few hundred
 * milliseconds, and whatever pdf.js leaves behind goes with it.
 */
export function detectInProcess(data: Uint8Array, options: RunOptions = {}): Promise<DetectionResult> {
  const fromSource = import.meta.url.endsWith('.ts');
  const script = fileURLToPath(new URL(fromSource ? './thread.ts' : './thread.js', import.meta.url));
  const timeoutMs = options.timeoutMs ?? DETECTION_LIMITS.timeoutMs;
  const maxMemoryMb = options.maxMemoryMb ?? DETECTION_LIMITS.maxMemoryMb;
  const child = fork(script, [], {
    // Running from source (tests, under tsx) it needs the TypeScript loader too. The heap limit
    // stops runaway JavaScript objects before the RSS watch has to.
    execArgv: [...(fromSource ? ['--import', 'tsx'] : []), `--max-old-space-size=${Math.floor(maxMemoryMb * 0.75)}`],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'advanced',
  });
  yieldCpu(child.pid);
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (text: string) => {
    stderr = (stderr + text).slice(-STDERR_TAIL);
  });
  const tooBig = () =>
    new DetectionError('unreadable_document', `the document needs more memory than the ${maxMemoryMb} MB a detection may use; simplify or split the PDF and upload it again`, true);
  return new Promise<DetectionResult>((resolve, reject) => {
    let settled = false;
    const finish = (outcome: DetectionResult | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stopWatching();
      options.signal?.removeEventListener('abort', onAbort);
      child.kill('SIGKILL');
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    // The time limit counts from when the process is ready (its modules loaded), so that a slow
    // start on a busy machine does not eat the detection's time; the start has its own limit.
    let timer = setTimeout(() => finish(new DetectionError('detection_failed', `the detection process did not start within ${START_TIMEOUT_MS / 1000} s`, false)), START_TIMEOUT_MS);
    const stopWatching = watchMemory(child.pid ?? -1, maxMemoryMb * 1024 * 1024, () => finish(tooBig()));
    const onAbort = () => finish(new DetectionError('aborted', 'detection was stopped', false));
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort);
    const begin = () => {
      clearTimeout(timer);
      timer = setTimeout(() => finish(new DetectionError('detection_timeout', `detection took longer than ${Math.round(timeoutMs / 1000)} s`, false)), timeoutMs);
      // The AI review stops at 90 % of the time limit: the pages it did not reach keep their
      // layout fields, and the job completes rather than timing out.
      child.send({ data, engine: options.engine ?? 'layout', ai: options.ai ?? null, reviewBy: Date.now() + Math.floor(timeoutMs * 0.9) } satisfies ThreadInput);
    };
    child.on('message', (message: ThreadMessage) => {
      if (settled) return;
      if (message.type === 'ready') begin();
      else if (message.type === 'progress') options.onProgress?.(message.done, message.total);
      else if (message.type === 'result') finish(message.result);
      else finish(new DetectionError(message.unreadable ? 'unreadable_document' : 'detection_failed', message.message, message.unreadable, message.detail));
    });
    child.on('error', (error) => finish(new DetectionError('detection_failed', 'the detection process could not be run', false, error.stack)));
    child.on('exit', (code, signal) => {
      // V8 prints this when the heap limit is reached, then aborts the process.
      if (/heap limit|out of memory/i.test(stderr)) return finish(tooBig());
      finish(new DetectionError('detection_failed', 'the detection process stopped unexpectedly', false, `exit ${code ?? signal}: ${stderr.slice(-1000)}`));
    });
  });
}
