/**
 * Runs in a worker thread (see runner.ts): opens the PDF bytes it is given with pdf.js and runs
 * the detection pipeline, reporting progress after each page. With `engine: "ai"` the thread
 * also makes the AI requests (they are I/O; stopping the thread stops them).
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as pdfjs from 'pdfjs-dist/legacy/build/pdf.mjs';
import { MAX_PAGES } from '../files/limits.js';
import type { AiConfig } from './ai.js';
import { detectFields } from './pipeline.js';
import type { DetectionResult } from './types.js';

export type ThreadMessage =
  | { type: 'progress'; done: number; total: number }
  | { type: 'result'; result: DetectionResult }
  | { type: 'error'; unreadable: boolean; message: string };

const post = (message: ThreadMessage) => parentPort!.postMessage(message);

export interface ThreadInput {
  data: Uint8Array;
  engine: 'layout' | 'ai';
  ai: AiConfig | null;
  /** When the AI review must end (`Date.now()` time), inside the thread's time limit. */
  reviewBy: number;
}

async function run({ data, engine, ai, reviewBy }: ThreadInput): Promise<void> {
  const aiDeadline = performance.now() + (reviewBy - Date.now());
  const task = pdfjs.getDocument({ data, stopAtErrors: false, isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 });
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

run(workerData as ThreadInput).catch((error: unknown) =>
  post({ type: 'error', unreadable: false, message: (error as Error).message ?? String(error) }),
);
