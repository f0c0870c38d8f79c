/**
 * Field proposals (src/detect/candidates.ts) and their features (src/detect/features.ts) on small
 * PDFs drawn with pdf-lib and read as the detector reads them: one test per kind of field the
 * rule detector misses (the proposals must include a box where a person would write), the page's
 * bounds, and the shape of the feature rows. Boxes are in points of the displayed page (origin
 * top-left); the PDF is drawn in user space (origin bottom-left), so displayed y = 792 − y.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PDFDocument, rgb, StandardFonts } from '@cantoo/pdf-lib';
import { checkBoxLabelOf, iouBox, MAX_PROPOSALS, PageModel, PROPOSAL_KINDS, proposeCandidates, type Proposal, type ProposalKind } from '../../src/detect/candidates.js';
import { FEATURE_NAMES, proposalFeatures } from '../../src/detect/features.js';
import { mergeSegments } from '../../src/detect/layout.js';
import type { Box, PageGraphics } from '../../src/detect/layout-page.js';
import { drawPdf, drawUnicode, type Draw } from '../helpers/layout-pdf.js';
import { graphicsOf } from '../helpers/page-graphics.js';

const H = 792;

async function pageOf(draw: (d: Draw) => void): Promise<PageGraphics> {
  return graphicsOf(await drawPdf([{ draw }]));
}

/** The advance of `text` in Helvetica at `size`. */
async function advanceOf(text: string, size: number): Promise<number> {
  const font = await (await PDFDocument.create()).embedFont(StandardFonts.Helvetica);
  return font.widthOfTextAtSize(text, size);
}

const show = (p: Proposal | Box) => `[${[p.x, p.y, p.x + p.w, p.y + p.h].map((n) => n.toFixed(1)).join(', ')}]${'kind' in p ? ` ${p.kind}/${p.cls} '${p.label}'` : ''}`;

/** The proposal most like `want` (by IoU), optionally of one of `kinds`; fails when its IoU is under `min`. */
function bestMatch(proposals: readonly Proposal[], want: Box, min: number, kinds?: readonly ProposalKind[]): Proposal {
  let best: Proposal | null = null;
  let bestIou = 0;
  for (const p of proposals) {
    if (kinds && !kinds.includes(p.kind)) continue;
    const v = iouBox(p, want);
    if (v > bestIou) {
      bestIou = v;
      best = p;
    }
  }
  assert.ok(best && bestIou >= min, `a proposal${kinds ? ` of ${kinds.join('/')}` : ''} at IoU ≥ ${min} with ${show(want)}; best ${best ? show(best) : 'none'} at ${bestIou.toFixed(2)}`);
  return best;
}

function vrule(d: Draw, x: number, y1: number, y2: number): void {
  d.page.drawLine({ start: { x, y: y1 }, end: { x, y: y2 }, thickness: 1 });
}

describe('candidate proposals', () => {
  it('"Name:" inside a ruled one-line cell: a proposal covers the empty space right of the label, not the label', async () => {
    const end = 76 + (await advanceOf('Name:', 10));
    const page = await pageOf((d) => {
      d.box(72, 600, 300, 20);
      d.text('Name:', 76, 606, 10);
    });
    const proposals = proposeCandidates(page);
    const p = bestMatch(proposals, { x: end + 1, y: H - 620, w: 372 - end - 1, h: 20 }, 0.6);
    assert.ok(p.x >= end - 1, `starts after the label: ${show(p)}`);
    assert.equal(p.cls, 'text');
    assert.match(p.label, /Name/);
  });

  it('a label with nothing drawn after it ("Telefon:") and another label further on the line: a run from the first to the second', async () => {
    const end = 72 + (await advanceOf('Telefon:', 10));
    const page = await pageOf((d) => {
      d.text('Telefon:', 72, 700, 10);
      d.text('E-Mail:', 320, 700, 10);
    });
    const p = bestMatch(proposeCandidates(page), { x: end + 1, y: H - 700 - 11, w: 320 - end - 2, h: 14 }, 0.6, ['label-run']);
    assert.ok(p.x + p.w <= 321, `ends before the next label: ${show(p)}`);
    assert.match(p.label, /Telefon/);
  });

  it('a column caption with nothing ruled under it: a proposal under the caption, as wide as its column', async () => {
    const page = await pageOf((d) => {
      d.text('Name', 72, 700, 10);
      d.text('Date of birth', 250, 700, 10);
      d.text('Relationship', 400, 700, 10);
    });
    const captionBottom = H - 700 + 2;
    const p = bestMatch(proposeCandidates(page), { x: 249, y: captionBottom, w: 150, h: 14 }, 0.5, ['under-caption']);
    assert.ok(p.x >= 247 && p.x + p.w <= 400, `within the column: ${show(p)}`);
    assert.ok(Math.abs(p.y - captionBottom) <= 3, `just under the caption: ${show(p)}`);
    assert.match(p.label, /Date of birth/);
  });

  it('rows of a table divided by horizontal rules only: a proposal in each row under each caption', async () => {
    const page = await pageOf((d) => {
      d.text('Name', 72, 700, 10);
      d.text('Date of death', 300, 700, 10);
      for (const y of [690, 670, 650, 630]) d.rule(72, 540, y, 0.5);
    });
    const proposals = proposeCandidates(page);
    for (const top of [H - 670, H - 650, H - 630]) {
      // The row between the rules at displayed top - 20 and top, in the second column.
      const p = bestMatch(proposals, { x: 299, y: top - 20, w: 241, h: 20 }, 0.6, ['under-caption']);
      assert.match(p.label, /Date of death/);
    }
  });

  it('thousands of short strokes (hatching) are a drawing: nothing is proposed on the page, though its strokes join into a few long rules', async () => {
    const hatch = (d: Draw, strokes: number) => {
      d.text('Name', 72, 700, 10);
      d.rule(150, 350, 698, 0.75);
      // Strokes 3 pt long, 2 pt apart, 90 to a row 8 pt apart: each row joins into one rule.
      for (let i = 0; i < strokes; i++) d.rule(72 + (i % 90) * 5, 75 + (i % 90) * 5, 100 + Math.floor(i / 90) * 8, 0.3);
    };
    const art = await pageOf((d) => hatch(d, 4500));
    assert.ok(art.horizontal.length > 4500);
    const joined = mergeSegments(art.horizontal).length;
    assert.ok(joined < 100, `the strokes join: ${joined} rules`);
    assert.equal(new PageModel(art).overloaded, true);
    assert.deepEqual(proposeCandidates(art), []);
    // A few rows of strokes are no drawing: the labelled line is proposed.
    const few = proposeCandidates(await pageOf((d) => hatch(d, 900)));
    bestMatch(few, { x: 150, y: H - 698 - 14, w: 200, h: 14 }, 0.5, ['line']);
  });

  it('white boxes with no outline on a grey band: each read as a box and proposed; white on the white page, or under the band, is nothing', async () => {
    const white = rgb(1, 1, 1);
    const page = await pageOf((d) => {
      // Drawn before the band, so hidden by it.
      d.page.drawRectangle({ x: 300, y: 650, width: 100, height: 14, color: white });
      d.page.drawRectangle({ x: 60, y: 600, width: 490, height: 120, color: rgb(0.82, 0.82, 0.82) });
      d.text('Name', 72, 700, 9);
      d.page.drawRectangle({ x: 72, y: 676, width: 220, height: 16, color: white });
      d.text('Ledig', 86, 630, 9);
      d.page.drawRectangle({ x: 72, y: 628, width: 10, height: 10, color: white });
      // On the white page: draws nothing visible.
      d.page.drawRectangle({ x: 72, y: 400, width: 220, height: 16, color: white });
    });
    const whites = page.shapes.filter((s) => s.filled && s.fillLevel > 0.95);
    assert.deepEqual(
      whites.map((s) => [s.x, s.y, s.w, s.h].map(Math.round)),
      [
        [72, H - 692, 220, 16],
        [72, H - 638, 10, 10],
      ],
    );
    const proposals = proposeCandidates(page);
    bestMatch(proposals, { x: 72, y: H - 692, w: 220, h: 16 }, 0.95, ['shape-box']);
    const box = bestMatch(proposals, { x: 72, y: H - 638, w: 10, h: 10 }, 0.95, ['square']);
    assert.equal(box.cls, 'checkbox');
    // Seen by the features: white over shading.
    const features = proposalFeatures(page, [bestMatch(proposals, { x: 72, y: H - 692, w: 220, h: 16 }, 0.95)])[0]!;
    assert.equal(features[FEATURE_NAMES.indexOf('white_fill_share')], 1);
    assert.equal(features[FEATURE_NAMES.indexOf('shaded_share')], 1);
  });

  it('"Yes" and "No" with nothing drawn: a check box proposal just left of each word, about the size of the text', async () => {
    const page = await pageOf((d) => {
      d.text('Do you smoke?', 72, 700, 10);
      d.text('Yes', 220, 700, 10);
      d.text('No', 280, 700, 10);
    });
    const proposals = proposeCandidates(page);
    for (const x of [220, 280]) {
      // A 10-pt box 4 pt left of the word, on the middle of its line (displayed y 84..94).
      const p = bestMatch(proposals, { x: x - 14, y: H - 700 - 8, w: 10, h: 10 }, 0.5, ['option-box']);
      assert.equal(p.cls, 'checkbox');
      assert.ok(p.x + p.w <= x, `left of the word: ${show(p)}`);
    }
  });

  it('a check box is labelled by the phrase nearest to it on its line, on either side: the option word, not the question or the other option', async () => {
    const page = await pageOf((d) => {
      // "Are you a resident of this state?  [] Yes  [] No", then "Married []" with nothing after it.
      d.text('Are you a resident of this state?', 72, 700, 10);
      d.box(250, 699, 9, 9);
      d.text('Yes', 263, 700, 10);
      d.box(300, 699, 9, 9);
      d.text('No', 313, 700, 10);
      d.text('Married', 72, 660, 10);
      d.box(112, 659, 9, 9);
      d.box(400, 620, 9, 9);
    });
    const model = new PageModel(page);
    // Displayed boxes (origin top-left); a larger box over the same square reads the same label.
    const at = (x: number, y: number, side = 9) => ({ x: x - (side - 9) / 2, y: H - y - 9 - (side - 9) / 2, w: side, h: side });
    assert.equal(checkBoxLabelOf(model, at(250, 699)), 'Yes');
    assert.equal(checkBoxLabelOf(model, at(250, 699, 12.6)), 'Yes');
    assert.equal(checkBoxLabelOf(model, at(300, 699)), 'No');
    assert.equal(checkBoxLabelOf(model, at(112, 659)), 'Married');
    // Nothing printed beside it: no label of this kind (the proposal's own label stands).
    assert.equal(checkBoxLabelOf(model, at(400, 620)), null);
  });

  it('check-box glyphs between option words ("☐ Yes ☐ No"): each glyph takes the word after it', () => {
    const word = (str: string, x: number, w: number) => ({ str, x, y: 100, w, h: 10, size: 10 });
    const page: PageGraphics = {
      width: 612,
      height: 792,
      horizontal: [],
      vertical: [],
      shapes: [],
      words: [word('☐', 100, 8), word('Yes', 111, 16), word('☐', 131, 8), word('No', 142, 12)],
    };
    const model = new PageModel(page);
    assert.equal(checkBoxLabelOf(model, { x: 100, y: 100, w: 8, h: 10 }), 'Yes');
    assert.equal(checkBoxLabelOf(model, { x: 131, y: 100, w: 8, h: 10 }), 'No');
    // A small box inside a phrase ("Yes ▫ No" read as one phrase): the words after the box.
    const tight = new PageModel({ ...page, words: [word('Yes', 111, 16), word('No', 133, 12)] });
    assert.deepEqual(tight.phrases.map((ph) => ph.str), ['Yes No']);
    assert.equal(checkBoxLabelOf(tight, { x: 128, y: 102, w: 4, h: 4 }), 'No');
  });

  it('several labels along one ruled cell ("City", "State", "ZIP"): a proposal after each label', async () => {
    const ends = await Promise.all(['City', 'State', 'ZIP'].map((t) => advanceOf(t, 9)));
    const page = await pageOf((d) => {
      d.box(72, 600, 460, 18);
      d.text('City', 75, 605, 9);
      d.text('State', 290, 605, 9);
      d.text('ZIP', 420, 605, 9);
    });
    const proposals = proposeCandidates(page);
    const spans: Array<[number, number]> = [
      [75 + ends[0]!, 290],
      [290 + ends[1]!, 420],
      [420 + ends[2]!, 532],
    ];
    for (const [x1, x2] of spans) bestMatch(proposals, { x: x1 + 1, y: H - 618, w: x2 - x1 - 2, h: 18 }, 0.55);
  });

  it('a tall empty cell: a one-line band over its bottom rule is proposed besides the whole cell', async () => {
    const page = await pageOf((d) => {
      d.box(72, 500, 200, 100);
      d.text('Remarks', 76, 588, 9);
    });
    const proposals = proposeCandidates(page);
    const band = bestMatch(proposals, { x: 72, y: H - 500 - 13, w: 200, h: 13 }, 0.6, ['cell-bottom']);
    assert.ok(Math.abs(band.y + band.h - (H - 500)) <= 1.5, `on the bottom rule: ${show(band)}`);
    bestMatch(proposals, { x: 72, y: H - 600, w: 200, h: 100 }, 0.9, ['cell-full']);
  });

  it('small empty cells of a ruled grid: a check box centred in each, much smaller than the cell', async () => {
    const page = await pageOf((d) => {
      for (const [i, q] of ['Q1', 'Q2', 'Q3'].entries()) d.text(q, 210 + i * 40, 705, 9);
      d.text('Course', 72, 685, 9);
      d.box(200, 680, 120, 20);
      vrule(d, 240, 680, 700);
      vrule(d, 280, 680, 700);
    });
    const proposals = proposeCandidates(page);
    for (const x of [200, 240, 280]) {
      // A 9-pt box in the middle of the 40 × 20 cell (displayed y 92..112).
      const p = bestMatch(proposals, { x: x + 15.5, y: H - 700 + 5.5, w: 9, h: 9 }, 0.5, ['square']);
      assert.equal(p.cls, 'checkbox');
    }
  });

  it('a dot leader after a label ("Name ....................."): a fill-in proposal over the dots', async () => {
    const dots = '.'.repeat(40);
    const start = 72 + (await advanceOf('Name ', 10));
    const page = await pageOf((d) => d.text(`Name ${dots}`, 72, 700, 10));
    const p = bestMatch(proposeCandidates(page), { x: start, y: H - 700 - 12, w: await advanceOf(dots, 10), h: 13 }, 0.6, ['underscore']);
    assert.equal(p.cls, 'text');
  });

  it('a row of nine touching boxes (a comb): one proposal over the row, each box as a character cell, none as a check box', async () => {
    const page = await pageOf((d) => {
      d.text('Account no.', 72, 605, 9);
      for (let i = 0; i < 9; i++) d.box(150 + i * 14, 600, 14, 18);
    });
    const proposals = proposeCandidates(page);
    bestMatch(proposals, { x: 150, y: H - 618, w: 126, h: 18 }, 0.85, ['comb']);
    for (let i = 0; i < 9; i++) {
      const box = { x: 150 + i * 14, y: H - 618, w: 14, h: 18 };
      bestMatch(proposals, box, 0.8, ['comb', 'cell-full']);
      assert.ok(!proposals.some((p) => p.cls === 'checkbox' && iouBox(p, box) > 0.5), `no check box on comb box ${i}`);
    }
  });

  it('a field printed in groups between short dashes ("___ - __ - ____"): a proposal for each group', async () => {
    const page = await pageOf((d) => {
      d.text('Social security number', 72, 715, 8);
      d.box(70, 690, 200, 36);
      for (const [a, b] of [
        [120, 127],
        [170, 177],
      ]) d.rule(a!, b!, 700, 1.4);
    });
    const proposals = proposeCandidates(page);
    // Displayed: the dashes at y 92; the groups from the box's left edge (70) to 120, 127 to 170, 177 to the right edge (270).
    for (const [x1, x2] of [
      [71, 117],
      [130, 167],
      [180, 269],
    ]) bestMatch(proposals, { x: x1!, y: H - 700 - 8, w: x2! - x1!, h: 16 }, 0.5, ['dash-group']);
  });

  it('boxes typed as brackets ("[ ] Yes  [ ] No"): a check box proposal between each pair of brackets', async () => {
    const page = await pageOf((d) => d.text('[   ] Yes      [   ] No', 72, 700, 10));
    const open = await advanceOf('[', 10);
    const inner = await advanceOf('[   ]', 10);
    const second = 72 + (await advanceOf('[   ] Yes      ', 10));
    const proposals = proposeCandidates(page);
    for (const x of [72, second]) {
      const p = bestMatch(proposals, { x: x + open / 2, y: H - 700 - 7.5, w: inner - open / 2, h: 9 }, 0.5, ['option-box']);
      assert.equal(p.cls, 'checkbox');
    }
  });

  it('a long fill-in line with captions printed under it ("(Street)", "(City)", "(State)"): a proposal over each caption\'s part', async () => {
    const page = await pageOf((d) => {
      d.text('Address:', 72, 700, 10);
      d.rule(120, 540, 698, 0.5);
      d.text('(Street)', 170, 688, 7);
      d.text('(City)', 350, 688, 7);
      d.text('(State)', 480, 688, 7);
    });
    const proposals = proposeCandidates(page);
    // Cut half way between the captions' middles (about 184, 359, 491).
    for (const [x1, x2] of [
      [120, 271],
      [271, 425],
      [425, 540],
    ]) bestMatch(proposals, { x: x1!, y: H - 698 - 13, w: x2! - x1!, h: 13 }, 0.75, ['line']);
  });

  it('near-identical proposals of one class are proposed once (IoU ≤ 0.9), and every box is finite and on the page', async () => {
    const page = await pageOf((d) => {
      d.box(72, 600, 300, 20);
      d.text('Name:', 76, 606, 10);
      d.rule(72, 300, 650);
      d.text('Yes', 100, 700, 10);
      d.text('No', 150, 700, 10);
    });
    const proposals = proposeCandidates(page);
    assert.ok(proposals.length > 0);
    for (const [i, p] of proposals.entries()) {
      assert.ok(PROPOSAL_KINDS.includes(p.kind), p.kind);
      for (const v of [p.x, p.y, p.w, p.h]) assert.ok(Number.isFinite(v), show(p));
      assert.ok(p.w > 0 && p.h > 0 && p.x >= -1 && p.y >= -1 && p.x + p.w <= page.width + 1 && p.y + p.h <= page.height + 1, show(p));
      for (const q of proposals.slice(i + 1)) assert.ok(q.cls !== p.cls || iouBox(p, q) <= 0.9, `${show(p)} and ${show(q)}`);
    }
  });

  it('a hostile page (tens of thousands of words, rules or boxes) is bounded: at most MAX_PROPOSALS, and features for each', () => {
    const words = Array.from({ length: 30_000 }, (_, i) => ({ str: `w${i}`, x: (i * 37) % 580, y: (i * 13) % 780, w: 20, h: 8, size: 8 }));
    const horizontal = Array.from({ length: 5000 }, (_, i) => ({ a: (i * 7) % 300, b: ((i * 7) % 300) + 200, at: (i * 3) % 790, width: 0.5 }));
    const vertical = Array.from({ length: 5000 }, (_, i) => ({ a: (i * 5) % 500, b: ((i * 5) % 500) + 100, at: (i * 11) % 610, width: 0.5 }));
    const shapes = Array.from({ length: 20_000 }, (_, i) => ({ x: (i * 17) % 600, y: (i * 7) % 780, w: 8, h: 8, stroked: true, filled: false, fillLevel: 0, round: false }));
    for (const page of [
      { width: 612, height: 792, horizontal, vertical, shapes: [], words },
      { width: 612, height: 792, horizontal: horizontal.slice(0, 2500), vertical: vertical.slice(0, 2500), shapes: [], words: words.slice(0, 5000) },
      { width: 612, height: 792, horizontal: [], vertical: [], shapes, words: words.slice(0, 500) },
      { width: 612, height: 792, horizontal: [], vertical: [], shapes: shapes.slice(0, 5000), words: words.slice(0, 500) },
      // The largest page PDF allows, with thousands of boxes and words as big as the page.
      {
        width: 14_400,
        height: 14_400,
        horizontal: [],
        vertical: [],
        shapes: Array.from({ length: 5000 }, (_, i) => ({ x: i % 7, y: i % 5, w: 14_000, h: 14_000, stroked: true, filled: false, fillLevel: 0, round: false })),
        words: Array.from({ length: 5000 }, (_, i) => ({ str: `Label ${i}:`, x: i % 11, y: (i * 3) % 14_000, w: 14_000, h: 72, size: 72 })),
      },
      // Far larger than PDF allows (pdf.js refuses no size, and a page's UserUnit scales it), a few
      // labels and rules far apart: nothing is sized by the page's area.
      {
        width: 1e9,
        height: 1e9,
        horizontal: [{ a: 10, b: 400, at: 1e8, width: 1 }, { a: 5e8, b: 5e8 + 300, at: 9e8, width: 1 }],
        vertical: [],
        shapes: [],
        words: [{ str: 'Name:', x: 10, y: 1e8 - 12, w: 30, h: 10, size: 10 }, { str: 'Date:', x: 5e8, y: 9e8 - 12, w: 30, h: 10, size: 10 }, { str: 'Yes', x: 9e8, y: 5e8, w: 20, h: 10, size: 10 }],
      },
      // Long and narrow, both ways: grids of cells of the page's area over a fixed count would
      // still have millions of cells in a row (gigabytes of them, before).
      ...[
        [1e12, 10],
        [10, 1e12],
      ].map(([width, height]) => ({
        width: width!,
        height: height!,
        horizontal: [{ a: 1, b: 9, at: 5, width: 1 }],
        vertical: [],
        shapes: [],
        words: [{ str: 'Name:', x: 1, y: 1, w: 3, h: 3, size: 3 }, { str: 'Yes', x: width! / 2, y: height! / 2, w: 3, h: 3, size: 3 }],
      })),
    ]) {
      const proposals = proposeCandidates(page);
      assert.ok(proposals.length <= MAX_PROPOSALS, `${proposals.length} proposals`);
      const rows = proposalFeatures(page, proposals);
      assert.equal(rows.length, proposals.length);
      // The typed arrays of the page's lookups (grids, bands), in use or not yet collected: a bounded few.
      assert.ok(process.memoryUsage().arrayBuffers < 256e6, `${Math.round(process.memoryUsage().arrayBuffers / 1e6)} MB of typed arrays for a ${page.width} × ${page.height} page`);
    }
  });

  it('non-finite coordinates in the page are left out, not propagated', () => {
    const page: PageGraphics = {
      width: 612,
      height: 792,
      horizontal: [{ a: NaN, b: 300, at: 100, width: 1 }, { a: 72, b: 300, at: 200, width: 1 }],
      vertical: [{ a: 0, b: Infinity, at: 50, width: 1 }],
      shapes: [{ x: NaN, y: 10, w: 10, h: 10, stroked: true, filled: false, fillLevel: 0, round: false }],
      words: [{ str: 'Name', x: 72, y: Infinity, w: 20, h: 10, size: 10 }, { str: 'Date:', x: 72, y: 300, w: 25, h: 10, size: 10 }],
    };
    const proposals = proposeCandidates(page);
    assert.ok(proposals.length > 0);
    for (const row of proposalFeatures(page, proposals)) for (const v of row) assert.ok(Number.isFinite(v));
  });
});

describe('proposal features', () => {
  it('one row per proposal, FEATURE_NAMES.length finite numbers each; names are unique', async () => {
    assert.equal(new Set(FEATURE_NAMES).size, FEATURE_NAMES.length);
    const page = await pageOf((d) => {
      d.box(72, 600, 300, 20);
      d.text('Name:', 76, 606, 10);
      d.text('Signature', 72, 652, 10);
      d.rule(130, 300, 650);
      d.text('Yes', 100, 700, 10);
    });
    const proposals = proposeCandidates(page);
    const rows = proposalFeatures(page, proposals);
    assert.equal(rows.length, proposals.length);
    for (const row of rows) {
      assert.equal(row.length, FEATURE_NAMES.length);
      for (const v of row) assert.ok(Number.isFinite(v), String(v));
    }
    assert.deepEqual(proposalFeatures(page, []), []);
  });

  it('describe what is around a box: the rule under a fill-in line, the colon and the field word of its label, the text inside, kind and class', async () => {
    const page = await pageOf((d) => {
      d.text('Signature:', 72, 652, 10);
      d.rule(130, 300, 650);
      d.text('Printed words here', 350, 652, 10);
    });
    const proposals = proposeCandidates(page);
    const rows = proposalFeatures(page, proposals);
    const f = (p: Proposal, name: string) => rows[proposals.indexOf(p)]![FEATURE_NAMES.indexOf(name)]!;
    // The band over the rule (displayed y 142): the rule under it all along, "Signature:" on its left.
    const line = bestMatch(proposals, { x: 130, y: H - 650 - 14, w: 170, h: 14 }, 0.7);
    assert.ok(f(line, 'rule_bottom_cover') > 0.95, 'a rule under the line');
    assert.equal(f(line, 'left_exists'), 1);
    assert.equal(f(line, 'left_colon'), 1);
    assert.equal(f(line, 'left_is_signature'), 1);
    assert.equal(f(line, 'text_inside_words'), 0);
    assert.equal(f(line, `kind_${line.kind}`), 1);
    assert.equal(PROPOSAL_KINDS.reduce((n, k) => n + f(line, `kind_${k}`), 0), 1);
    assert.equal(f(line, `cls_${line.cls}`), 1);
    // A box over printed words has text inside.
    const printed = proposals.find((p) => p.x <= 352 && p.x + p.w >= 400 && p.y <= H - 652 - 5 && p.y + p.h >= H - 652);
    if (printed) assert.ok(f(printed, 'text_inside_words') >= 1, `text inside ${show(printed)}`);
  });

  it('the field words of labels are recognised in several languages and scripts, as whole words', async () => {
    const labels: Array<[string, string]> = [
      ['Имя:', 'left_is_name'],
      ['Telefon:', 'left_is_phone'],
      ['Unterschrift', 'left_is_signature'],
      ['Fecha', 'left_is_date'],
      ['Courriel :', 'left_is_email'],
    ];
    const page = await pageOf((d) => {
      labels.forEach(([label], i) => {
        const y = 700 - i * 40;
        if (/[^\x00-\x7f]/.test(label)) drawUnicode(d, label, 72, y, 10);
        else d.text(label, 72, y, 10);
        d.rule(160, 400, y - 2);
      });
      // "Nominal" holds "nom" but is no name label.
      d.text('Nominal', 72, 460, 10);
      d.rule(160, 400, 458);
    });
    const proposals = proposeCandidates(page);
    const rows = proposalFeatures(page, proposals);
    const f = (p: Proposal, name: string) => rows[proposals.indexOf(p)]![FEATURE_NAMES.indexOf(name)]!;
    labels.forEach(([label, feature], i) => {
      const line = bestMatch(proposals, { x: 160, y: H - (700 - i * 40) + 2 - 14, w: 240, h: 14 }, 0.7);
      assert.equal(f(line, feature), 1, `${feature} for "${label}": ${show(line)}`);
    });
    const nominal = bestMatch(proposals, { x: 160, y: H - 458 - 14, w: 240, h: 14 }, 0.7);
    assert.equal(f(nominal, 'left_is_name'), 0, show(nominal));
  });
});
