/**
 * pdf.js as this service loads it, in its helper processes (the PDF helper, pdf-worker.ts, and the
 * detection process, detect/thread.ts) and in the detection's offline scripts: the legacy build
 * (the one made for Node), its "worker" code loaded too, and the engine's own
 * `Array.prototype.push` put back. Every module that needs pdf.js imports it from here.
 *
 * - The worker code: pdf.js in Node runs it in the same thread, and would otherwise import it (a
 *   2 MB module) when the first document is opened, which is time that would count against that
 *   document's limit. Loaded here, it is loaded before a helper says it is ready.
 * - The push: the legacy build bundles core-js, and core-js replaces `Array.prototype.push`, for
 *   the whole process, with a version in JavaScript wherever the engine throws the wrong error for
 *   a push onto an array whose length is not writable (V8 before 12.2; Node 20 has V8 11.3). Each
 *   of pdf.js's two modules replaces it when it loads. That version is about six times slower,
 *   and every push of the process went through it: pdf.js's operator lists, the detection's own
 *   lists. No code here or in pdf.js pushes onto an array whose length is not writable, so the
 *   engine's push is put back once both modules are loaded (bench/pdfjs-push.ts: the detection of
 *   ../shared/corpus about 10 % faster, pdf.js's own reading about 20 %). core-js's other changes
 *   add what the engine lacks and replace nothing that is used.
 */
import { restoreNativePush } from './native-push.js';
import * as pdfjs from 'pdfjs-dist/legacy/build/pdf.mjs';

// A variable specifier: the module ships no type declarations, and only its presence matters.
const workerModule = 'pdfjs-dist/legacy/build/pdf.worker.mjs';
(globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = await import(workerModule);

const push = restoreNativePush();
/** Whether the engine's push is in place (false only if core-js ran before `./native-push.ts`). */
export const NATIVE_PUSH_RESTORED = push.restored;
/** The push core-js had put in its place, or null: only for bench/pdfjs-push.ts, which times the two. */
export const CORE_JS_PUSH = push.replaced;

export { pdfjs };
export { AnnotationMode, getDocument, normalizeUnicode, OPS, version } from 'pdfjs-dist/legacy/build/pdf.mjs';
