/**
 * A page's text read from its operator list (src/detect/page-text.ts, `readText`) on small PDFs
 * whose content streams are written by hand, so that each text operator is exercised as written:
 * kerning in TJ arrays, moves between runs, character and word spacing, horizontal scaling,
 * text rise, transforms, form XObjects, rotated text, text off the page, symbol fonts. Expected
 * places come from the fonts' own metrics (pdf-lib's standard font widths), not from the reader.
 * Then the words `readPage` makes of the runs: placed where their characters print.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { pdfjs } from '../../src/files/pdfjs.js';
import type { PageView } from '../../src/detect/geometry.js';
import { readPage, type PageGraphics } from '../../src/detect/layout-page.js';
import { pageFonts, readText, type TextRun } from '../../src/detect/page-text.js';
import { detectTextTags } from '../../src/detect/text-tags.js';

/**
 * A one-page PDF (612 × 792) with `content` as its content stream, the fonts F1 Helvetica,
 * F2 Times-Roman, F3 ZapfDingbats, F4 Wingdings2, F5 Wingdings3, the graphics state G1 (`/Font [F1 12]`), and X1
 * a form XObject holding `form` (with `formMatrix`).
 */
function rawPdf(content: string, form = '', formMatrix = '1 0 0 1 0 0'): Uint8Array {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R /F2 6 0 R /F3 7 0 R /F4 9 0 R /F5 10 0 R >> /XObject << /X1 8 0 R >> /ExtGState << /G1 << /Type /ExtGState /Font [5 0 R 12] >> >> >> >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /ZapfDingbats >>',
    `<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Matrix [${formMatrix}] /Resources << /Font << /F1 5 0 R >> >> /Length ${form.length} >>\nstream\n${form}\nendstream`,
    '<< /Type /Font /Subtype /TrueType /BaseFont /Wingdings2 /FirstChar 32 /LastChar 255 /Widths [' + Array(224).fill(800).join(' ') + '] >>',
    '<< /Type /Font /Subtype /TrueType /BaseFont /Wingdings3 /FirstChar 32 /LastChar 255 /Widths [' + Array(224).fill(800).join(' ') + '] >>',
  ];
  let out = '%PDF-1.7\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return new TextEncoder().encode(out);
}

async function read(content: string, form?: string, formMatrix?: string): Promise<{ runs: TextRun[]; graphics: PageGraphics; view: PageView }> {
  const doc = await pdfjs.getDocument({ data: rawPdf(content, form, formMatrix), verbosity: 0, isEvalSupported: false, disableFontFace: true, useSystemFonts: false }).promise;
  try {
    const page = await doc.getPage(1);
    const viewport = page.getViewport({ scale: 1 });
    const operators = await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
    const runs = readText(viewport, operators, pageFonts(page));
    const view: PageView = { width: viewport.width, height: viewport.height, toView: (x, y) => viewport.convertToViewportPoint(x, y) as [number, number] };
    return { runs, graphics: readPage(viewport, operators, runs), view };
  } finally {
    await doc.destroy();
  }
}

const fonts = await (async () => {
  const doc = await PDFDocument.create();
  return { helvetica: await doc.embedFont(StandardFonts.Helvetica), times: await doc.embedFont(StandardFonts.TimesRoman) };
})();
/** Advance of `text` in Helvetica (or Times) at `size`, from the font's own widths. */
const helv = (text: string, size: number) => fonts.helvetica.widthOfTextAtSize(text, size);
const times = (text: string, size: number) => fonts.times.widthOfTextAtSize(text, size);

const close = (actual: number, expected: number, what: string, tolerance = 0.05) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual.toFixed(3)}, expected ${expected.toFixed(3)}`);

const strs = (runs: readonly TextRun[]) => runs.map((r) => r.str);

describe('text runs read from the operator list', () => {
  it('places each character by the font widths, with TJ kerning and a TJ gap over 0.6 em starting a new run', async () => {
    // "Name:" kerned by 20/1000 em between "Na" and "me:", then 3 em further "Date".
    const { runs } = await read('BT /F1 10 Tf 100 700 Td [(Na) 20 (me:) -3000 (Date)] TJ ET');
    assert.deepEqual(strs(runs), ['Name:', 'Date']);
    const [name, date] = runs as [TextRun, TextRun];
    close(name.transform[4]!, 100, 'Name x');
    close(name.transform[5]!, 700, 'Name baseline');
    close(name.transform[0]!, 10, 'font size along');
    close(name.transform[3]!, 10, 'font size up');
    // "m" starts after "Na" less the kerning (a positive TJ number moves back).
    close(name.offsets[2]!, helv('Na', 10) - 0.2, 'offset of m');
    close(name.width, helv('Name:', 10) - 0.2, 'Name width');
    assert.equal(name.offsets.length, 'Name:'.length + 1);
    close(date.transform[4]!, 100 + helv('Name:', 10) - 0.2 + 30, 'Date x');
    close(date.width, helv('Date', 10), 'Date width');
  });

  it('joins runs moved apart by a space-sized gap with one space, keeps glyphs that touch together, and splits at a wide gap', async () => {
    const w = helv('Name', 10);
    // "Name" + 3 pt (0.3 em) + "of" + 0.2 pt + "fice" | 8 pt (0.8 em) gap | "Date"
    const { runs } = await read(
      `BT /F1 10 Tf 100 700 Td (Name) Tj ${w + 3} 0 Td (of) Tj ${helv('of', 10) + 0.2} 0 Td (fice) Tj ${helv('fice', 10) + 8} 0 Td (Date) Tj ET`,
    );
    assert.deepEqual(strs(runs), ['Name office', 'Date']);
    const [first] = runs as [TextRun];
    close(first.offsets[5]!, w + 3, 'offset of "o" after the space');
    close(first.offsets[4]!, w, 'the space starts where "Name" ends');
    close(runs[1]!.transform[4]!, 100 + w + 3 + helv('of', 10) + 0.2 + helv('fice', 10) + 8, 'Date x');
  });

  it('applies character spacing, word spacing and horizontal scaling to the advances', async () => {
    // Tc 1, Tw 4, Tz 50: each glyph advances (w + 1) × 0.5, a space (w + 1 + 4) × 0.5.
    const { runs } = await read('BT /F1 10 Tf 1 Tc 4 Tw 50 Tz 100 700 Td (ab cd) Tj ET');
    assert.deepEqual(strs(runs), ['ab cd']);
    const [run] = runs as [TextRun];
    const a = (helv('a', 10) + 1) * 0.5;
    const b = (helv('b', 10) + 1) * 0.5;
    const space = (helv(' ', 10) + 1 + 4) * 0.5;
    close(run.offsets[1]!, a, 'offset of b');
    close(run.offsets[3]!, a + b + space, 'offset of c');
    close(run.transform[0]!, 5, 'run transform scaled along by Tz');
    close(run.transform[3]!, 10, 'run transform up');
  });

  it('follows the CTM, a form XObject matrix, text rise and rotated text', async () => {
    const { runs } = await read(
      'q 2 0 0 2 10 20 cm BT /F1 10 Tf 50 300 Td 3 Ts (Big) Tj ET Q q 2 0 0 2 0 0 cm /X1 Do Q BT /F1 10 Tf 0 1 -1 0 300 100 Tm (Up) Tj ET',
      'BT /F1 8 Tf 20 30 Td (Inside) Tj ET',
      '1 0 0 1 50 100',
    );
    assert.deepEqual(strs(runs), ['Big', 'Inside', 'Up']);
    const [big, inside, up] = runs as [TextRun, TextRun, TextRun];
    close(big.transform[4]!, 10 + 2 * 50, 'Big x');
    close(big.transform[5]!, 20 + 2 * (300 + 3), 'Big baseline (raised by Ts)');
    close(big.width, 2 * helv('Big', 10), 'Big width');
    // The form's matrix first, then the CTM around the Do: (20 + 50) × 2, (30 + 100) × 2.
    close(inside.transform[4]!, 140, 'form x');
    close(inside.transform[5]!, 260, 'form baseline');
    close(inside.transform[0]!, 16, 'form font size along (8 × 2)');
    // Rotated 90°: the run runs up the page.
    close(up.transform[4]!, 300, 'Up x');
    close(up.transform[5]!, 100, 'Up y');
    close(up.transform[0]!, 0, 'Up along x');
    close(up.transform[1]!, 10, 'Up along y (font size 10)');
  });

  it('leaves out text off the page and reads box glyphs of symbol fonts as boxes, their other glyphs as bullets', async () => {
    // ZapfDingbats "o" is ❏ and "n" ■; Wingdings 2 "£" is a box and "o" not (in Wingdings it is);
    // Wingdings 3 is arrows.
    const { runs } = await read(
      'BT /F1 10 Tf 700 700 Td (Outside) Tj ET BT /F3 10 Tf 100 600 Td (on) Tj /F1 10 Tf 30 0 Td (Yes) Tj /F4 10 Tf 30 0 Td (\\243o) Tj /F5 10 Tf 30 0 Td (oq) Tj ET',
    );
    assert.deepEqual(strs(runs), ['\u2751\u2022', 'Yes', '\u2751\u2022', '\u2022\u2022']);
  });

  it('moves to the next line by TL, T*, TD, \' and ", which also set the word and character spacing', async () => {
    const { runs } = await read('BT /F1 10 Tf 14 TL 100 700 Td (One) Tj T* (Two) Tj 0 -20 TD (Three) Tj (Four) \' 3 0.5 (Five) " ET');
    assert.deepEqual(strs(runs), ['One', 'Two', 'Three', 'Four', 'Five']);
    assert.deepEqual(
      runs.map((r) => [Number(r.transform[4]!.toFixed(3)), Number(r.transform[5]!.toFixed(3))]),
      [[100, 700], [100, 686], [100, 666], [100, 646], [100, 626]],
    );
    // After " (Tw 3, Tc 0.5): each letter advances 0.5 pt more than its width.
    close(runs[4]!.offsets[1]!, helv('F', 10) + 0.5, 'offset of i in Five');
  });

  it('takes character spacing as a gap between glyphs: a space at 0.102 em or more, a new run over 0.6 em', async () => {
    const { runs } = await read('BT /F1 10 Tf 2 Tc 100 700 Td (AB) Tj 0 Tc 0 -20 Td (CD) Tj 7 Tc 0 -20 Td (EF) Tj ET');
    assert.deepEqual(strs(runs), ['A B', 'CD', 'E', 'F']);
    const [ab] = runs as [TextRun];
    close(ab.offsets[2]!, helv('A', 10) + 2, 'B starts after A and the spacing');
    close(ab.width, helv('A', 10) + 2 + helv('B', 10), 'the run ends where B ends, not after its spacing');
  });

  it('reads a negative font size as text turned 180° that runs backwards, and a font set by a graphics state', async () => {
    // The turned "W" at x 5 has its ink left of the page (its origin is on it): left out, as pdf.js does.
    const { runs } = await read('BT /F1 -10 Tf 300 700 Td (AB) Tj ET BT /G1 gs 100 600 Td (Hi) Tj ET BT /F1 -10 Tf 5 500 Td (W) Tj ET');
    assert.deepEqual(strs(runs), ['AB', 'Hi']);
    const [ab, hi] = runs as [TextRun, TextRun];
    close(ab.transform[4]!, 300, 'the run starts at its first glyph');
    close(ab.transform[0]!, -10, 'along, turned');
    close(ab.transform[3]!, -10, 'up, turned');
    close(ab.offsets[1]!, helv('A', 10), 'B after A, along the turned run');
    close(ab.width, helv('AB', 10), 'run width');
    close(hi.transform[0]!, 12, 'the size of the graphics state');
    close(hi.width, helv('Hi', 12), 'run width at 12 pt');
  });
});

describe('words of the runs', () => {
  it('places an underscore run after a label where it prints, in a font that is not Helvetica', async () => {
    const { graphics } = await read('BT /F2 12 Tf 72 700 Td (Name of the applicant: ______________) Tj ET');
    const words = graphics.words.map((w) => w.str);
    assert.deepEqual(words, ['Name of the applicant:', '______________']);
    const line = graphics.words[1]!;
    close(line.x, 72 + times('Name of the applicant: ', 12), 'underscore run x', 0.01);
    close(line.w, times('______________', 12), 'underscore run width', 0.01);
    close(graphics.words[0]!.w, times('Name of the applicant:', 12), 'label width', 0.01);
  });

  it('places a {{…}} tag inside a run of another font than Helvetica where it prints', async () => {
    // Helvetica's widths would put the tag's start about 5 pt off in Times.
    const before = 'Signed by the applicant: ';
    const tag = '{{Applicant;type=signature}}';
    const { runs, view } = await read(`BT /F2 12 Tf 72 700 Td (${before}${tag}) Tj ET`);
    const warnings: string[] = [];
    const [field] = detectTextTags([{ pageNumber: 1, view, items: runs }], warnings);
    assert.ok(field, `a tag field (warnings: ${warnings.join('; ')})`);
    close(field.rect.x * 612, 72 + times(before, 12), 'tag start', 0.01);
    close((field.rect.x + field.rect.width) * 612, 72 + times(before + tag, 12), 'tag end', 0.01);
  });
});
