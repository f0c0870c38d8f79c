import type { PDFDocumentProxy } from 'pdfjs-dist/types/src/display/api.js';
import { getDocument, PDFWorker, WorkerMessageHandler } from '../files/pdfjs.js';

/**
 * The options of pdf.js with which the detection opens a PDF (through `openForDetection`, below: in
 * its detection process, thread.ts, and in the data set's reader, scripts/detect/read-form.ts, so
 * that the model is trained on pages read exactly as the service reads them).
 *
 * Images are not decoded. With `maxImageSize: 0` pdf.js leaves every image out of a page's operator
 * list instead of decoding it (and, as errors are not fatal, only warns). Image masks go too (pdf.js
 * checks the size first), among them the one-pixel masks some producers stretch into bars, and an
 * image inside a Type3 glyph empties that glyph's own operator list. The detection reads none of
 * these: its rules and boxes are paths (layout-page.ts), and its text comes from `showText` and
 * the fonts' metrics (page-text.ts), never from glyph drawings. All 1,473 pages of the data set
 * read the same with and without. Decoding the images was 5 to 6 % of the operator lists' time over
 * ../shared/corpus, much more on a page with a large image. A scanned A4 page at 300 dpi decodes to
 * 26 MB, which the detection process would hold until the page was cleaned up.
 */
export const DETECTION_PDF_OPTIONS = {
  isEvalSupported: false,
  useSystemFonts: false,
  stopAtErrors: false,
  maxImageSize: 0,
  verbosity: 0,
} as const;

/**
 * A document being opened for detection: pdf.js's loading task, and what ends it and its port.
 * `destroy` must be called whether or not `promise` resolves. Its operator lists are read-only:
 * their arguments are pdf.js's own objects, some of them shared between pages (see `InThreadPort`).
 */
export interface DetectionLoading {
  promise: Promise<PDFDocumentProxy>;
  destroy(): Promise<void>;
}

/**
 * Opens `data` (handed over: pdf.js takes its buffer) for detection, with DETECTION_PDF_OPTIONS,
 * but without two costs of pdf.js's own way of opening a file in Node, which the detection does not
 * need:
 *
 * - pdf.js in Node runs its worker code in this thread and passes every message between the two
 *   sides through a "fake worker" port that copies it with `structuredClone`, as a real worker's
 *   port would. Most of what it copies is operator lists: every argument of every operator, and
 *   every glyph of every run of text as an object of its own. Here the two sides talk over
 *   `InThreadPort` instead, which hands an operator list's chunk over without copying its contents.
 * - With no document to load fonts into (`disableFontFace`, the default in Node), pdf.js draws
 *   every glyph a page shows as a path of its own and sends the paths over, for a renderer. Here
 *   fonts are loaded into `FONT_SINK` instead, and the glyphs of ordinary text are not drawn (those
 *   filled with a pattern or used as a clipping path still are). What it costs instead is each
 *   embedded font's base64 text, once per document: less on the forms measured, but it grows with
 *   the font's size rather than with the glyphs shown.
 *
 * Together the detection of ../shared/corpus took about a tenth less time (bench/detect-open.ts),
 * and every page of the data set read the same, byte for byte (bench/README.md, issue 15). A
 * document opened so must not be rendered: its fonts were never really loaded.
 */
export function openForDetection(data: Uint8Array): DetectionLoading {
  const port = new InThreadPort();
  WorkerMessageHandler.initializeFromPort(port);
  // Typed as a Web Worker, which is what pdf.js's browser build passes there; it needs only a
  // port's methods. The worker side takes its verbosity from here, not from getDocument's options
  // (for the whole process: pdf.js keeps one level).
  const verbosity = DETECTION_PDF_OPTIONS.verbosity;
  const worker = PDFWorker.create({ port: port as unknown as PDFWorkerPort, verbosity });
  const ownerDocument = FONT_SINK as unknown as Document;
  const task = getDocument({ data, ...DETECTION_PDF_OPTIONS, disableFontFace: false, ownerDocument, worker });
  return {
    promise: task.promise,
    async destroy() {
      try {
        await task.destroy();
      } finally {
        // pdf.js destroys only the workers it made itself.
        worker.destroy();
        port.terminate();
      }
    },
  };
}

/**
 * A document for pdf.js to load fonts into, which drops them. In Node pdf.js loads a font by adding
 * a `@font-face` rule to a style sheet of the document (`FontLoader.insertRule`) and then takes it
 * as ready: this document's sheet drops the rule. The detection never draws: it reads the glyphs'
 * codes and widths, which pdf.js reads the same either way.
 */
const FONT_SINK = {
  createElement: () => ({ sheet: { cssRules: { length: 0 }, insertRule: () => 0 }, remove: () => undefined }),
  documentElement: { getElementsByTagName: () => [{ append: () => undefined }] },
};

// pdf.js's `StreamKind.ENQUEUE` (src/shared/message_handler.js): a chunk of a stream, as an operator list is sent.
const STREAM_ENQUEUE = 4;

interface OperatorChunk {
  fnArray: unknown[];
  argsArray: unknown[];
}

function operatorChunk(message: unknown): OperatorChunk | null {
  const m = message as { stream?: unknown; chunk?: Partial<OperatorChunk> } | null;
  if (m?.stream !== STREAM_ENQUEUE || !m.chunk) return null;
  const { fnArray, argsArray } = m.chunk;
  return Array.isArray(fnArray) && Array.isArray(argsArray) ? (m.chunk as OperatorChunk) : null;
}

type Listener = (event: { data: unknown }) => void;
type PDFWorkerPort = NonNullable<Parameters<typeof PDFWorker.create>[0]>['port'];

/**
 * pdf.js's `LoopbackPort` (one port that both sides listen on, each message delivered in a
 * microtask after it is posted), but an operator list's chunk is handed over as two new arrays of
 * the same items instead of a deep copy. The arrays must be new: pdf.js empties its own once it has
 * posted them (`OperatorList.flush`). The items are not copied, so this side holds pdf.js's own
 * objects, some of them shared: the glyphs of a string shown are one array kept per font
 * (`_charsCache`) for every time it is shown, on every page; graphics states and patterns are
 * cached too. pdf.js never changes them once made (a glyph's getter caches one more property on
 * first use), and typed arrays among them are transferred, which a real port would leave unusable
 * on the worker's side. The detection only reads them, and must never change them. Every other
 * message is copied as before. (`STREAM_ENQUEUE` and the chunk's shape are pdf.js's internals: if
 * they change, every message is copied again, which test/detect/pdfjs.test.ts notices.)
 */
class InThreadPort {
  readonly #listeners = new Map<Listener, (() => void) | null>();

  postMessage(message: unknown, transfer?: Transferable[] | null): void {
    const chunk = operatorChunk(message);
    const data = chunk
      ? { ...(message as object), chunk: { ...chunk, fnArray: chunk.fnArray.slice(), argsArray: chunk.argsArray.slice() } }
      : structuredClone(message, transfer ? { transfer } : undefined);
    const event = { data };
    void Promise.resolve().then(() => {
      for (const listener of this.#listeners.keys()) listener.call(this, event);
    });
  }

  addEventListener(_type: 'message', listener: Listener, options?: { signal?: AbortSignal }): void {
    const signal = options?.signal;
    if (signal?.aborted) return;
    let remove: (() => void) | null = null;
    if (signal) {
      const onAbort = () => this.removeEventListener('message', listener);
      signal.addEventListener('abort', onAbort);
      remove = () => signal.removeEventListener('abort', onAbort);
    }
    this.#listeners.set(listener, remove);
  }

  removeEventListener(_type: 'message', listener: Listener): void {
    this.#listeners.get(listener)?.();
    this.#listeners.delete(listener);
  }

  terminate(): void {
    for (const remove of this.#listeners.values()) remove?.();
    this.#listeners.clear();
  }
}
