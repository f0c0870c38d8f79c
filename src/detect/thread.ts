/**
 * Runs in a worker thread (see runner.ts): opens the PDF bytes it is given with pdf.js and runs
 * the detection pipeline, reporting progress after each page.
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as pdfjs from 'pdfjs-dist/legacy/build/pdf.mjs';
import { MAX_PAGES } from '../files/limits.js';
import { detectFields } from './pipeline.js';
import type { DetectionResult } from './types.js';

export type ThreadMessage =
  | { type: 'progress'; done: number; total: number }
  | { type: 'result'; result: DetectionResult }
  | { type: 'error'; unreadable: boolean; message: string };

const post = (message: ThreadMessage) => parentPort!.postMessage(message);

async function run(data: Uint8Array): Promise<void> {
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
    const result = await detectFields(doc, { onProgress: (done, total) => post({ type: 'progress', done, total }) });
    post({ type: 'result', result });
  } finally {
    await task.destroy();
  }
}

run((workerData as { data: Uint8Array }).data).catch((error: unknown) =>
  post({ type: 'error', unreadable: false, message: (error as Error).message ?? String(error) }),
);
