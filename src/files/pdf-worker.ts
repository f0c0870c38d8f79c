/**
 * Runs in a helper process (see pdf.ts): opens a PDF with pdf.js (reading only the byte ranges
 * it needs from the file, so a 50 MB file is not loaded whole, up to its last `startxref`: see
 * pdf-tail.ts) and reports its pages' visible sizes, or inspects a DOCX (`inspectDocx`: every part
 * inflated and scanned).
 */
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { inspectDocx, type DocxInfo } from './docx.js';
import { UnreadableDocument } from './errors.js';
import { MAX_PAGES } from './limits.js';
import { lastStartXref, visibleLength } from './pdf-tail.js';
import { pdfjs } from './pdfjs.js';

export interface PdfRequest {
  id: number;
  path: string;
  kind: 'pdf' | 'docx';
}

export type PdfReply =
  /** Sent once, when the helper's modules are loaded: files may be sent (their time limit starts). */
  | { id: 0; ready: true }
  /** Sent as soon as a file's request arrives, before it is read: a helper that stops before this never had the file. */
  | { id: number; received: true }
  | { id: number; ok: true; pageCount: number; pageDimensions: Array<{ width: number; height: number }> }
  | { id: number; ok: true; docx: DocxInfo }
  | { id: number; ok: false; reason: string };

const round = (n: number) => Math.round(n * 1000) / 1000;

/** A reason of this service's own, fit for the client's hint (unlike pdf.js's exception messages). */
class Refusal extends Error {
  /**
   * `final`: an answer about the document that a read of the whole file would only repeat (too
   * many pages, an empty page box). "No pages" is not: a view that lost the objects past its last
   * `startxref` may show none where the whole file has some.
   */
  constructor(
    message: string,
    readonly final = true,
  ) {
    super(message);
  }
}

const RANGE_CHUNK = 65_536;
/** The most a range is read ahead of what pdf.js asked for. */
const MAX_READ_AHEAD = 16 * 1024 * 1024;

/**
 * The file's first `length` bytes, served to pdf.js a requested range at a time, and further ahead
 * while pdf.js keeps asking for the range that follows the last one: twice as far each time (up to
 * 16 MB). pdf.js starts an object's parse again from its beginning after each range it lacked, so
 * a forward scan through megabytes (a stream whose `/Length` is wrong, searched for `endstream`)
 * costs time in the square of their number of ranges: 43 s for a 50 MB object stream holding the
 * page, 64 KB at a time. Read ahead, it is a few ranges.
 */
class FileRanges extends pdfjs.PDFDataRangeTransport {
  /** Where the last range served ended, and how many ranges in a row began there. */
  private lastEnd = -1;
  private run = 0;

  constructor(
    private readonly handle: FileHandle,
    length: number,
    private readonly failed: (error: unknown) => void,
  ) {
    super(length, new Uint8Array(0));
  }

  override requestDataRange(begin: number, end: number): void {
    this.run = begin === this.lastEnd ? this.run + 1 : 0;
    // A multiple of pdf.js's chunk from a chunk's start (as pdf.js's requests are), or the file's end.
    const ahead = this.run === 0 ? 0 : Math.min(MAX_READ_AHEAD, RANGE_CHUNK * 2 ** Math.min(this.run, 8));
    const until = Math.min(this.length, Math.max(end, begin + ahead));
    this.lastEnd = until;
    const chunk = new Uint8Array(until - begin);
    this.handle.read(chunk, 0, chunk.length, begin).then(({ bytesRead }) => {
      // A file shorter than it was would leave pdf.js waiting for the rest until the time limit.
      if (bytesRead < chunk.length) return this.failed(new Error('the file is shorter than when it was opened'));
      // A range that comes after pdf.js gave up on the document (an error elsewhere) has no reader
      // left: pdf.js throws, which must not become an unhandled rejection ending the helper.
      try {
        this.onDataRange(begin, chunk);
      } catch (error) {
        this.failed(error);
      }
    }, this.failed);
  }
}

type Pages = { ok: true; pageCount: number; pageDimensions: Array<{ width: number; height: number }> };

async function analyse(file: string): Promise<Pages> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const at = await lastStartXref(handle, size);
    const visible = visibleLength(size, at);
    if (at >= 0) {
      try {
        return await readPages({ ranges: handle, length: visible });
      } catch (error) {
        // Shown the whole file, pdf.js may still read one whose view up to its last `startxref`
        // it could not: one it rebuilds from objects past that point, or one linearized on the
        // whole file (pdf.js checks the length it is told). It is then handed the whole file, in
        // memory, where its searches cost no more than a pass over the bytes. A refusal (too many
        // pages, an empty page box) or a password is an answer about the document read, not a
        // failure to read it: it is reported as it is, without a second read ("no pages" excepted:
        // `Refusal.final`).
        if (visible === size || (error instanceof Refusal && error.final) || (error as { name?: unknown } | null)?.name === 'PasswordException') throw error;
      }
    }
  } finally {
    await handle.close();
  }
  // No `startxref` at all, or the view up to it unreadable: pdf.js may have to rebuild the
  // cross-references from every byte, so it is handed them at once; a range at a time, its searches
  // would restart after each range (pdf-tail.ts). The cost, on a hostile file read twice: the
  // helper's time twice over and the file's size in memory, within its 60 s and 512 MB.
  return readPages({ whole: await readFile(file) });
}

/** Opens the file with pdf.js (its ranges through `FileRanges`, or all of it at once) and reads every page's size. */
async function readPages(source: { ranges: FileHandle; length: number } | { whole: Buffer }): Promise<Pages> {
  let readFailed: (error: unknown) => void = () => {};
  const failure = new Promise<never>((_, reject) => (readFailed = reject));
  failure.catch(() => {});
  const task = pdfjs.getDocument({
    // (A `Uint8Array` over the buffer: pdf.js refuses a Node `Buffer`.)
    ...('whole' in source
      ? { data: new Uint8Array(source.whole.buffer, source.whole.byteOffset, source.whole.byteLength) }
      : { range: new FileRanges(source.ranges, source.length, (error) => readFailed(error)) }),
    disableAutoFetch: true,
    disableStream: true,
    rangeChunkSize: RANGE_CHUNK,
    stopAtErrors: true,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0,
  });
  try {
    const doc = await Promise.race([task.promise, failure]);
    if (doc.numPages > MAX_PAGES) throw new Refusal(`the PDF has ${doc.numPages} pages; at most ${MAX_PAGES} are accepted`);
    const pageDimensions = [];
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await Promise.race([doc.getPage(n), failure]);
      // `view` is the CropBox clipped to the MediaBox; a quarter turn swaps width and height.
      const [x1, y1, x2, y2] = page.view as [number, number, number, number];
      const width = Math.abs(x2 - x1);
      const height = Math.abs(y2 - y1);
      const turned = page.rotate % 180 !== 0;
      if (!(width > 0 && height > 0)) throw new Refusal(`page ${n} has an empty page box`);
      pageDimensions.push(turned ? { width: round(height), height: round(width) } : { width: round(width), height: round(height) });
      page.cleanup();
    }
    if (doc.numPages < 1) throw new Refusal('the document has no pages', false);
    return { ok: true, pageCount: doc.numPages, pageDimensions };
  } finally {
    await task.destroy();
  }
}

/**
 * What the client is told: never pdf.js's own message ("Maximum call stack size exceeded", an
 * offset, an internal name), which says nothing it can act on.
 */
function describe(error: unknown, kind: PdfRequest['kind']): string {
  if (error instanceof Refusal || error instanceof UnreadableDocument) return error.message;
  const name = (error as { name?: string }).name ?? '';
  if (kind === 'docx') return 'the DOCX cannot be read; save it again with Word or LibreOffice and upload it again';
  if (name === 'PasswordException') return 'the PDF is protected by a password; remove the password and upload it again';
  if (name === 'InvalidPDFException') return 'the file is not a readable PDF (damaged or truncated)';
  return 'the PDF is damaged or built in a way this service cannot read; save it again as a standard PDF (for example with "Print to PDF") and upload it again';
}

const reply = (message: PdfReply) => process.send?.(message);
process.on('message', (request: PdfRequest) => {
  reply({ id: request.id, received: true });
  const work = request.kind === 'docx' ? inspectDocx(request.path).then((docx) => ({ ok: true as const, docx })) : analyse(request.path);
  work.then(
    (result) => reply({ id: request.id, ...result }),
    (error: unknown) => reply({ id: request.id, ok: false, reason: describe(error, request.kind) }),
  );
});
// The server going away (even by SIGKILL) closes the channel: the helper goes with it.
process.on('disconnect', () => process.exit(0));
// pdf.js loaded (./pdfjs.ts) before the handler above was set: a server gone meanwhile is noticed here.
if (process.send && !process.connected) process.exit(0);
reply({ id: 0, ready: true });
