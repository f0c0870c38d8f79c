/**
 * pdf.js as this service loads it, in its helper processes (the PDF helper, pdf-worker.ts, and the
 * detection process, detect/thread.ts) and in the detection's offline scripts: the legacy build
 * (the one made for Node), its "worker" code loaded too, and the engine's own
 * `Array.prototype.push` put back. Every module that needs pdf.js imports it from here
 * (test/detect/pdfjs.test.ts fails on any other import of pdf.js's modules).
 *
 * - The worker code: pdf.js in Node runs it in the same thread, and would otherwise import it (a
 *   2 MB module) when the first document is opened, which is time that would count against that
 *   document's limit. Loaded here, it is loaded before a helper says it is ready. Its
 *   `WorkerMessageHandler` is exported for the detection, which serves its documents over a port
 *   of its own (src/detect/open.ts).
 * - The push: the legacy build bundles core-js, and core-js replaces `Array.prototype.push`, for
 *   the whole process, with a version in JavaScript wherever the engine does not throw, as it
 *   must, on a push of nothing onto an array whose length is not writable (V8 before 12.2; Node
 *   20 has V8 11.3). Whichever of pdf.js's two modules loads first replaces it, and one loaded
 *   after a restore would replace it again. The replacement is several times slower (6 times in
 *   a loop of pushes onto an array of up to 1,000 items), and every push of the process went
 *   through it: pdf.js's operator lists, the detection's own lists. No code here or in pdf.js makes
 *   such a push, so the engine's push is put back once both modules are loaded
 *   (bench/pdfjs-push.ts: the detection of ../shared/corpus 9 to 12 % faster, pdf.js's own
 *   reading 16 to 21 %). core-js's other replacements (`JSON.parse`, which hands a parse without
 *   a reviver to the engine's, and `Function.prototype.toString`, so that its functions print as
 *   native) are left alone.
 * - `Uint8Array.prototype.toBase64`: Node 20 has none, and core-js adds its own, in JavaScript, a
 *   character at a time. pdf.js calls it for the `@font-face` rule of every embedded font it loads
 *   into a document, which the detection does for every font (src/detect/open.ts, `FONT_SINK`):
 *   base64 of the font file. It is replaced with one made on Node's own encoder, the same string
 *   for the same options (`restoreFastBase64`; the engine's own is put back where there is one):
 *   the detection of ../shared/corpus took 0.968 of the time with core-js's (about 1 % in a CPU
 *   profile's count of core-js's function itself; docs/decisions.md).
 */
import { restoreFastBase64, restoreNativePush } from './native-push.js';
import * as pdfjs from 'pdfjs-dist/legacy/build/pdf.mjs';

// A variable specifier: the module ships no type declarations.
const workerModule = 'pdfjs-dist/legacy/build/pdf.worker.mjs';
const worker = (await import(workerModule)) as { WorkerMessageHandler: { initializeFromPort(port: object): void } };
(globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = worker;
/** pdf.js's worker side: `initializeFromPort` serves documents over a port made by the caller (src/detect/open.ts). */
export const { WorkerMessageHandler } = worker;

const push = restoreNativePush();
/** Whether the engine's push is in place (false only if core-js ran before `./native-push.ts`). */
export const NATIVE_PUSH_RESTORED = push.restored;
/** The push core-js had put in its place, or null: only for bench/pdfjs-push.ts, which times the two. */
export const CORE_JS_PUSH = push.replaced;
/** core-js's `Uint8Array.prototype.toBase64`, which `restoreFastBase64` replaced (null when none was): for the tests and benchmarks. */
export const CORE_JS_TO_BASE64 = restoreFastBase64().replaced;
if (!NATIVE_PUSH_RESTORED) process.emitWarning("pdf.js was loaded after core-js had run: Array.prototype.push and Uint8Array.prototype.toBase64 stay core-js's, which are slower (see src/files/pdfjs.ts)");

export { pdfjs };
export { AnnotationMode, getDocument, normalizeUnicode, OPS, PDFWorker, version } from 'pdfjs-dist/legacy/build/pdf.mjs';
