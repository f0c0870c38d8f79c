/**
 * Runs in a helper process (see pdf.ts): opens a PDF with pdf.js (reading only the byte ranges
 * it needs from the file, so a 50 MB file is not loaded whole) and reports its pages' visible sizes.
 */
import { pathToFileURL } from 'node:url';
import * as pdfjs from 'pdfjs-dist/legacy/build/pdf.mjs';
import { MAX_PAGES } from './limits.js';

export interface PdfRequest {
  id: number;
  path: string;
}

export type PdfReply =
  | { id: number; ok: true; pageCount: number; pageDimensions: Array<{ width: number; height: number }> }
  | { id: number; ok: false; reason: string };

const round = (n: number) => Math.round(n * 1000) / 1000;

async function analyse(file: string): Promise<Omit<Extract<PdfReply, { ok: true }>, 'id'>> {
  const task = pdfjs.getDocument({
    url: pathToFileURL(file).href,
    disableAutoFetch: true,
    disableStream: true,
    rangeChunkSize: 65_536,
    stopAtErrors: true,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0,
  });
  try {
    const doc = await task.promise;
    if (doc.numPages > MAX_PAGES) throw new Error(`the PDF has ${doc.numPages} pages; at most ${MAX_PAGES} are accepted`);
    const pageDimensions = [];
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n);
      // `view` is the CropBox clipped to the MediaBox; a quarter turn swaps width and height.
      const [x1, y1, x2, y2] = page.view as [number, number, number, number];
      const width = Math.abs(x2 - x1);
      const height = Math.abs(y2 - y1);
      const turned = page.rotate % 180 !== 0;
      if (!(width > 0 && height > 0)) throw new Error(`page ${n} has an empty page box`);
      pageDimensions.push(turned ? { width: round(height), height: round(width) } : { width: round(width), height: round(height) });
      page.cleanup();
    }
    if (doc.numPages < 1) throw new Error('the document has no pages');
    return { ok: true, pageCount: doc.numPages, pageDimensions };
  } finally {
    await task.destroy();
  }
}

function describe(error: unknown): string {
  const name = (error as { name?: string }).name ?? '';
  if (name === 'PasswordException') return 'the PDF is protected by a password';
  if (name === 'InvalidPDFException') return 'the file is not a readable PDF (damaged or truncated)';
  return `the PDF cannot be read (${(error as Error).message ?? String(error)})`;
}

const reply = (message: PdfReply) => process.send?.(message);
process.on('message', (request: PdfRequest) => {
  analyse(request.path).then(
    (result) => reply({ id: request.id, ...result }),
    (error: unknown) => reply({ id: request.id, ok: false, reason: describe(error) }),
  );
});
// The server going away (even by SIGKILL) closes the channel: the helper goes with it.
process.on('disconnect', () => process.exit(0));
