/**
 * Runs in a detection process of its own (see runner.ts; the file keeps the name it had when
 * detection ran in a worker thread): opens the PDF bytes it is sent with pdf.js and runs the
 * detection pipeline, reporting progress after each page. With `engine: "ai"` it also makes the
 * AI requests (they are I/O; killing the process stops them).
 */
import { MAX_PAGES } from '../files/limits.js';
import type { AiConfig } from './ai.js';
import { inflateOnThisThread } from './inflate.js';
import { openForDetection } from './open.js';
import { detectFields } from './pipeline.js';
import type { DetectionResult } from './types.js';

export type ThreadMessage =
  /** The modules are loaded: the input may be sent (the time limit starts). */
  | { type: 'ready' }
  | { type: 'progress'; done: number; total: number }
  | { type: 'result'; result: DetectionResult }
  /** `message` is for the client; `detail` (an exception's own words) only for the server's log. */
  | { type: 'error'; unreadable: boolean; message: string; detail?: string };

const post = (message: ThreadMessage) => process.send?.(message);

// pdf.js's streams are inflated on this process's thread, not awaited from Node's thread pool
// (inflate.ts): this process reads one document, and its parent bounds its time and memory.
inflateOnThisThread();

export interface ThreadInput {
  data: Uint8Array;
  engine: 'layout' | 'ai';
  ai: AiConfig | null;
  /** When the AI review must end (`Date.now()` time), inside the detection's time limit. */
  reviewBy: number;
}

async function run({ data, engine, ai, reviewBy }: ThreadInput): Promise<void> {
  const aiDeadline = performance.now() + (reviewBy - Date.now());
  const task = openForDetection(data);
  let doc;
  try {
    doc = await task.promise;
  } catch (error) {
    const name = (error as { name?: string }).name ?? '';
    const reason = name === 'PasswordException' ? 'the PDF is protected by a password' : 'the file is not a readable PDF';
    post({ type: 'error', unreadable: true, message: reason });
    return;
  }
  try {
    if (doc.numPages > MAX_PAGES) {
      post({ type: 'error', unreadable: true, message: `the PDF has ${doc.numPages} pages; at most ${MAX_PAGES} are read` });
      return;
    }
    const result = await detectFields(doc, { engine, ai, aiDeadline, onProgress: (done, total) => post({ type: 'progress', done, total }) });
    post({ type: 'result', result });
  } finally {
    await task.destroy();
  }
}

// One detection per process (the parent ends it once it has the outcome): whatever pdf.js left behind goes with it.
process.once('message', (input: ThreadInput) => {
  run(input).catch((error: unknown) =>
    post({ type: 'error', unreadable: false, message: 'detection failed unexpectedly', detail: (error as Error).stack ?? String(error) }),
  );
});
// The server going away (even by SIGKILL) closes the channel: the detection goes with it.
process.on('disconnect', () => process.exit(0));
// pdf.js loaded (src/files/pdfjs.ts) before the handler above was set: a server gone meanwhile is noticed here.
if (process.send && !process.connected) process.exit(0);
post({ type: 'ready' });
