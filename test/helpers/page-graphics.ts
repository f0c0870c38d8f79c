/**
 * Page 1 of a PDF read the way the layout detector reads it (`readPage`: rules, boxes, words in
 * points of the displayed page), for tests of the candidate proposals and their features.
 */
import { AnnotationMode } from '../../src/files/pdfjs.js';
import { readPage, type PageGraphics } from '../../src/detect/layout-page.js';
import { openForDetection } from '../../src/detect/open.js';
import { pageFonts, readText } from '../../src/detect/page-text.js';

export async function graphicsOf(data: Uint8Array): Promise<PageGraphics> {
  const task = openForDetection(new Uint8Array(data));
  try {
    const doc = await task.promise;
    const page = await doc.getPage(1);
    const viewport = page.getViewport({ scale: 1 });
    const operators = await page.getOperatorList({ annotationMode: AnnotationMode.DISABLE });
    return readPage(viewport, operators, readText(viewport, operators, pageFonts(page)));
  } finally {
    await task.destroy();
  }
}
