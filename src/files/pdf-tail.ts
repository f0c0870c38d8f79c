/**
 * Where a PDF's last `startxref` is, found by the PDF helper (pdf-worker.ts) before pdf.js opens
 * the file, so that pdf.js is never left to search for it through megabytes of bytes after it.
 */
import type { FileHandle } from 'node:fs/promises';

const STARTXREF = Buffer.from('startxref');
/**
 * pdf.js looks for a file's `startxref` backwards from its end, 1,015 bytes at a time, each window
 * searched afresh. Over byte ranges, every range it has not read yet stops the search and starts it
 * again from the end once the range has come: a file with megabytes after its last `startxref`
 * costs time in the square of their size (a 50 MB file padded after a 575 KB form: 34 s of the
 * helper, every other workspace's upload waiting behind it).
 */
const PDFJS_FIRST_WINDOW = 1_015;
const FIRST_BLOCK = 4_096;
const SEARCH_BLOCK = 1 << 20;

/**
 * Where the file's last `startxref` begins, or -1 when it has none: native search from the end, the
 * last 4 KB first (where an ordinary file has it), then a block of 1 MiB at a time.
 */
export async function lastStartXref(handle: FileHandle, size: number): Promise<number> {
  const block = Buffer.allocUnsafe(SEARCH_BLOCK + STARTXREF.length - 1);
  for (let end = size, step = FIRST_BLOCK; end > 0; step = SEARCH_BLOCK) {
    const start = Math.max(0, end - step);
    // The block reaches a signature's length past `end` (minus a byte), so that one across two blocks is found.
    const { bytesRead } = await handle.read(block, 0, Math.min(size, end + STARTXREF.length - 1) - start, start);
    const at = block.subarray(0, bytesRead).lastIndexOf(STARTXREF);
    if (at >= 0) return start + at;
    end = start;
  }
  return -1;
}

/**
 * The bytes pdf.js is shown of a file of `size` bytes whose last `startxref` begins at `at`: all of
 * them when pdf.js's first window finds it, or none (a reconstruction reads the whole file anyway);
 * otherwise up to 512 bytes after it, so that pdf.js's first window finds the same `startxref` it
 * would have found after searching back through everything that follows (nothing of the document:
 * the last cross-reference section ends at its `startxref`).
 */
export function visibleLength(size: number, at: number): number {
  return at < 0 || at >= size - PDFJS_FIRST_WINDOW ? size : at + 512;
}
