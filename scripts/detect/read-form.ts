/**
 * A PDF's pages read as the layout detector reads them (`readPage`: rules, boxes, words, in points
 * of the displayed page), for the data set: the real forms (dataset.ts, widgets stripped) and the
 * synthetic ones (synthetic.ts) go through the same reading, opened as the service opens them
 * (`openForDetection`), their streams inflated as the detection process inflates them
 * (`inflateOnThisThread`, while a form is read; what was there is put back after).
 */
import { AnnotationMode } from '../../src/files/pdfjs.js';
import { readPage, type PageGraphics } from '../../src/detect/layout-page.js';
import { inflateOnThisThread } from '../../src/detect/inflate.js';
import { openForDetection } from '../../src/detect/open.js';
import { pageFonts, readText } from '../../src/detect/page-text.js';

export async function readForm(bytes: Uint8Array): Promise<PageGraphics[]> {
  const restore = inflateOnThisThread();
  const task = openForDetection(bytes);
  try {
    const doc = await task.promise;
    const out: PageGraphics[] = [];
    for (let p = 1; p <= doc.numPages; p++) {
      const page = await doc.getPage(p);
      const viewport = page.getViewport({ scale: 1 });
      const operators = await page.getOperatorList({ annotationMode: AnnotationMode.DISABLE });
      out.push(readPage(viewport, operators, readText(viewport, operators, pageFonts(page))));
      page.cleanup();
    }
    return out;
  } finally {
    await task.destroy();
    restore();
  }
}
