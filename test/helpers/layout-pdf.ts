/**
 * Small flat PDFs drawn with pdf-lib for the layout detector's tests, and the detector run on
 * them through the real pipeline (`detectFields`).
 */
import { beginText, degrees, endText, moveText, PDFDocument, PDFFont, PDFHexString, PDFName, PDFPage, rgb, setFontAndSize, showText, StandardFonts } from '@cantoo/pdf-lib';
import { openForDetection } from '../../src/detect/open.js';
import { detectFields } from '../../src/detect/pipeline.js';
import type { DetectedField, DetectionResult } from '../../src/detect/types.js';

export interface Draw {
  doc: PDFDocument;
  page: PDFPage;
  font: PDFFont;
  /** Writes `text` at (x, y) (PDF user space, baseline) in Helvetica. */
  text: (text: string, x: number, y: number, size?: number) => void;
  /** A horizontal rule from x1 to x2 at y (PDF user space). */
  rule: (x1: number, x2: number, y: number, thickness?: number) => void;
  /** An outlined, unfilled rectangle (PDF user space, (x, y) its lower-left corner). */
  box: (x: number, y: number, w: number, h: number, borderWidth?: number) => void;
}

export interface PageSpec {
  size?: [number, number];
  rotate?: number;
  cropBox?: [number, number, number, number];
  draw: (d: Draw) => void | Promise<void>;
}

/** A PDF with one page per spec (Letter unless told), drawn by the specs. */
export async function drawPdf(pages: PageSpec[]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const spec of pages) {
    const page = doc.addPage(spec.size ?? [612, 792]);
    const d: Draw = {
      doc,
      page,
      font,
      text: (text, x, y, size = 11) => page.drawText(text, { x, y, size, font }),
      rule: (x1, x2, y, thickness = 1) => page.drawLine({ start: { x: x1, y }, end: { x: x2, y }, thickness }),
      // pdf-lib fills a rectangle black unless it is given a border colour and no fill colour.
      box: (x, y, w, h, borderWidth = 1) => page.drawRectangle({ x, y, width: w, height: h, borderWidth, borderColor: rgb(0, 0, 0) }),
    };
    await spec.draw(d);
    if (spec.rotate) page.setRotation(degrees(spec.rotate));
    if (spec.cropBox) page.setCropBox(...spec.cropBox);
  }
  return doc.save();
}

/** The fields `detectFields` finds in a PDF. */
export async function detect(data: Uint8Array): Promise<DetectionResult> {
  const task = openForDetection(new Uint8Array(data));
  try {
    const doc = await task.promise;
    return await detectFields(doc);
  } finally {
    await task.destroy();
  }
}

/** The text items pdf.js reads on page 1 (to check what a font gives). */
export async function textOf(data: Uint8Array): Promise<string[]> {
  const task = openForDetection(new Uint8Array(data));
  try {
    const doc = await task.promise;
    const page = await doc.getPage(1);
    const content = await page.getTextContent();
    return content.items.map((i) => ('str' in i ? i.str : ''));
  } finally {
    await task.destroy();
  }
}

/** A field's box in points of the displayed page (origin top-left). */
export function points(field: DetectedField, width = 612, height = 792) {
  const { x, y, width: w, height: h } = field.rect;
  return { x1: x * width, x2: (x + w) * width, y1: y * height, y2: (y + h) * height };
}

/** A field, short, for assertion messages. */
export function show(fields: readonly DetectedField[], width = 612, height = 792): string {
  return JSON.stringify(
    fields.map((f) => {
      const p = points(f, width, height);
      return { source: f.source, type: f.type, label: f.label, page: f.pageNumber, pt: [p.x1, p.y1, p.x2, p.y2].map((n) => Math.round(n * 10) / 10), confidence: f.confidence };
    }),
  );
}

/**
 * Text in a standard font (Helvetica, not embedded) whose codes 128… are re-mapped by an
 * /Encoding /Differences array to the glyph names `uniXXXX` of the text's characters: pdf.js
 * reads them as those characters (check box glyphs, Cyrillic …). pdf-lib can embed a TrueType
 * font only with fontkit, which is not installed; text extraction needs no glyph outlines.
 * Every character advances `advance` thousandths of the size.
 */
let fontCount = 0;

export function drawUnicode(d: Draw, text: string, x: number, y: number, size = 11, advance = 600): void {
  const { doc, page } = d;
  const chars = [...new Set(text)];
  const glyph = (c: string) => (c === ' ' ? 'space' : `uni${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
  const font = doc.context.obj({
    Type: 'Font',
    Subtype: 'Type1',
    BaseFont: 'Helvetica',
    FirstChar: 128,
    LastChar: 128 + chars.length - 1,
    Widths: chars.map(() => advance),
    Encoding: { Type: 'Encoding', BaseEncoding: 'WinAnsiEncoding', Differences: [128, ...chars.map((c) => PDFName.of(glyph(c)))] },
  });
  const name = `FU${++fontCount}`;
  page.node.setFontDictionary(PDFName.of(name), doc.context.register(font));
  const hex = [...text].map((c) => (128 + chars.indexOf(c)).toString(16)).join('');
  page.pushOperators(beginText(), setFontAndSize(name, size), moveText(x, y), showText(PDFHexString.of(hex)), endText());
}

/** A page of 120 `Name:` labels, each with a rule right of it (40 rows of 3): far more fields than a page holds. */
export const LABELS_AND_RULES: PageSpec = {
  draw: (d) => {
    for (let row = 0; row < 40; row++) {
      for (let column = 0; column < 3; column++) {
        const x = 40 + column * 190;
        const y = 760 - row * 18;
        d.text('Name:', x, y, 8);
        d.rule(x + 30, x + 170, y - 1);
      }
    }
  },
};
