/**
 * A PDF's pages read as the layout detector reads them (`readPage`: rules, boxes, words, in points
 * of the displayed page), for the data set: the real forms (dataset.ts, widgets stripped) and the
 * synthetic ones (synthetic.ts) go through the same reading.
 */
import { AnnotationMode, getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { readPage, type PageGraphics, type TextContentItem } from '../../src/detect/layout-page.js';
import { fontNames } from '../../src/detect/pipeline.js';

export async function readForm(bytes: Uint8Array): Promise<PageGraphics[]> {
  const doc = await getDocument({ data: bytes, isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;
  try {
    const out: PageGraphics[] = [];
    for (let p = 1; p <= doc.numPages; p++) {
      const page = await doc.getPage(p);
      const viewport = page.getViewport({ scale: 1 });
      const content = await page.getTextContent();
      const items = content.items.filter((i) => 'str' in i) as unknown as TextContentItem[];
      const operators = await page.getOperatorList({ annotationMode: AnnotationMode.DISABLE });
      out.push(readPage(viewport, operators, items, fontNames(page)));
      page.cleanup();
    }
    return out;
  } finally {
    await doc.destroy();
  }
}
