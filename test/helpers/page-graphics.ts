/**
 * Page 1 of a PDF read the way the layout detector reads it (`readPage`: rules, boxes, words in
 * points of the displayed page), for tests of the candidate proposals and their features.
 */
import { AnnotationMode, getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { readPage, type PageGraphics, type TextContentItem } from '../../src/detect/layout-page.js';

export async function graphicsOf(data: Uint8Array): Promise<PageGraphics> {
  const doc = await getDocument({ data: new Uint8Array(data), verbosity: 0, isEvalSupported: false }).promise;
  try {
    const page = await doc.getPage(1);
    const viewport = page.getViewport({ scale: 1 });
    const content = await page.getTextContent();
    const operators = await page.getOperatorList({ annotationMode: AnnotationMode.DISABLE });
    return readPage(viewport, operators, content.items.filter((i) => 'str' in i) as unknown as TextContentItem[]);
  } finally {
    await doc.destroy();
  }
}
