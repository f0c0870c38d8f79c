/**
 * The ink around a proposal (src/detect/ink.ts): each region's means against a direct count over
 * the grid's cells, where the marks fall, independence from the page's size, and pages with
 * nothing or hostile numbers on them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PageModel, type Proposal } from '../../src/detect/candidates.js';
import { FEATURE_NAMES, featureMatrix } from '../../src/detect/features.js';
import { CONTEXT_REGIONS, GRID_COLS, GRID_ROWS, INK_CHANNELS, PageInk } from '../../src/detect/ink.js';
import type { Box, PageGraphics, Shape } from '../../src/detect/layout-page.js';

const N = CONTEXT_REGIONS.length * INK_CHANNELS.length;

function page(over: Partial<PageGraphics> = {}): PageGraphics {
  return { width: 612, height: 792, horizontal: [], vertical: [], shapes: [], words: [], ...over };
}

function featuresOf(g: PageGraphics, box: Box): Record<string, number> {
  const ink = new PageInk(new PageModel(g));
  const v = new Float64Array(N);
  assert.equal(ink.around(box, v, 0), N);
  const out: Record<string, number> = {};
  CONTEXT_REGIONS.forEach((r, i) => INK_CHANNELS.forEach((c, k) => (out[`${r}_${c}`] = v[i * INK_CHANNELS.length + k]!)));
  return out;
}

/**
 * The same means, counted cell by cell: every mark spread evenly over the cells it touches, those
 * beyond the page in the cells at its edges (this checks the difference array and the integral
 * image; the tests after it check where marks land against values worked out by hand).
 */
function direct(model: PageModel, shapes: readonly Shape[], box: Box): number[] {
  const W = model.page.width;
  const H = model.page.height;
  const cells = INK_CHANNELS.map(() => Array.from({ length: GRID_ROWS }, () => new Array<number>(GRID_COLS).fill(0)));
  const cell = (v: number, n: number) => Math.max(0, Math.min(n - 1, Math.floor(v * n)));
  type Amount = (w: number, h: number) => number;
  const spread = (k: number, x0: number, y0: number, x1: number, y1: number, amount: Amount) => {
    if (!(amount(x1 - x0, y1 - y0) > 0)) return;
    const [c0, c1] = [cell(x0 / W, GRID_COLS), cell(x1 / W, GRID_COLS)];
    const [r0, r1] = [cell(y0 / H, GRID_ROWS), cell(y1 / H, GRID_ROWS)];
    const d = amount(x1 - x0, y1 - y0) / ((c1 - c0 + 1) * (r1 - r0 + 1));
    for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) cells[k]![r]![c]! += d;
  };
  const area: Amount = (w, h) => ((w * h) / (W * H)) * GRID_COLS * GRID_ROWS;
  for (const s of model.horizontal) spread(0, s.a, s.at, s.b, s.at, (w) => (w / W) * GRID_COLS);
  for (const s of model.vertical) spread(1, s.at, s.a, s.at, s.b, (_, h) => (h / H) * GRID_ROWS);
  for (const s of shapes) {
    if (s.stroked) spread(2, s.x, s.y, s.x + s.w, s.y + s.h, () => 1);
    if (s.filled) spread(3, s.x, s.y, s.x + s.w, s.y + s.h, area);
  }
  for (const w of model.words) spread(4, w.x, w.y, w.x + w.w, w.y + w.h, area);
  const x = box.x / W;
  const y = box.y / H;
  const x2 = (box.x + box.w) / W;
  const y2 = (box.y + box.h) / H;
  const regions: Array<[number, number, number, number]> = [[x, y, x2, y2]];
  for (const s of [0.04, 0.12]) regions.push([x - s, y, x, y2], [x2, y, x2 + s, y2], [x, y - s, x2, y], [x, y2, x2, y2 + s]);
  const [cx, cy] = [(x + x2) / 2, (y + y2) / 2];
  regions.push([cx - 0.15, cy - 0.15, cx + 0.15, cy + 0.15], [0, y, 1, y2]);
  const out: number[] = [];
  for (const [a, b, c, d] of regions) {
    let c0 = Math.max(0, Math.min(GRID_COLS, Math.floor(a * GRID_COLS)));
    let r0 = Math.max(0, Math.min(GRID_ROWS, Math.floor(b * GRID_ROWS)));
    const c1 = Math.min(Math.max(Math.max(0, Math.min(GRID_COLS, Math.ceil(c * GRID_COLS))), c0 + 1), GRID_COLS);
    const r1 = Math.min(Math.max(Math.max(0, Math.min(GRID_ROWS, Math.ceil(d * GRID_ROWS))), r0 + 1), GRID_ROWS);
    c0 = Math.min(c0, c1 - 1);
    r0 = Math.min(r0, r1 - 1);
    for (let k = 0; k < INK_CHANNELS.length; k++) {
      let sum = 0;
      for (let r = r0; r < r1; r++) for (let cc = c0; cc < c1; cc++) sum += cells[k]![r]![cc]!;
      out.push(sum / ((c1 - c0) * (r1 - r0)));
    }
  }
  return out;
}

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('ink around a proposal', () => {
  it('names its features after the regions and channels, after every other feature', () => {
    const names = FEATURE_NAMES.slice(-N);
    assert.equal(names[0], 'ctx_in_hrule');
    assert.equal(names[N - 1], 'ctx_row_text');
    assert.equal(new Set(FEATURE_NAMES).size, FEATURE_NAMES.length);
  });

  it('gives each region the mean of the cells it touches, as a count cell by cell does', () => {
    const next = random(15);
    for (let round = 0; round < 20; round++) {
      const W = 300 + next() * 600;
      const H = 300 + next() * 900;
      const g = page({
        width: W,
        height: H,
        horizontal: Array.from({ length: 30 }, () => {
          const a = next() * W;
          return { a, b: a + 5 + next() * W * 0.5, at: next() * H, width: 0.5 };
        }),
        vertical: Array.from({ length: 20 }, () => {
          const a = next() * H;
          return { a, b: a + 5 + next() * H * 0.3, at: next() * W, width: 0.5 };
        }),
        shapes: Array.from({ length: 15 }, () => ({ x: next() * W, y: next() * H, w: 5 + next() * 100, h: 5 + next() * 60, stroked: next() < 0.6, filled: next() < 0.5, fillLevel: next(), round: false })),
        words: Array.from({ length: 60 }, () => ({ x: next() * W, y: next() * H, w: 10 + next() * 80, h: 8 + next() * 4, str: 'Name:', size: 10 })),
      });
      const model = new PageModel(g);
      const ink = new PageInk(model);
      for (let n = 0; n < 10; n++) {
        const box = { x: next() * W * 1.1 - W * 0.05, y: next() * H * 1.1 - H * 0.05, w: next() * 200, h: next() * 40 };
        const v = new Float64Array(N);
        ink.around(box, v, 0);
        const want = direct(model, g.shapes, box);
        for (let k = 0; k < N; k++) assert.ok(Math.abs(v[k]! - want[k]!) < 1e-9, `round ${round}, box ${n}, feature ${k}: ${v[k]} against ${want[k]}`);
      }
    }
  });

  it('puts a rule under a box below it, not above it, and text left of it on its left', () => {
    const box = { x: 200, y: 300, w: 150, h: 14 };
    const f = featuresOf(
      page({
        horizontal: [{ a: 200, b: 350, at: 318, width: 0.5 }],
        words: [{ x: 130, y: 302, w: 60, h: 10, str: 'Name:', size: 10 }],
      }),
      box,
    );
    assert.ok(f.b1_hrule! > 0, 'the rule is in the band below');
    assert.equal(f.a1_hrule, 0);
    assert.equal(f.r1_hrule, 0);
    assert.ok(f.l1_text! > 0, 'the label is in the band left');
    assert.equal(f.r1_text, 0);
    assert.ok(f.row_text! > 0, 'the label is in the row');
    assert.equal(f.row_hrule, 0, 'the rule is under the row');
  });

  it('reads the same on a page twice the size with everything on it twice as large', () => {
    const marks = (s: number) =>
      page({
        width: 612 * s,
        height: 792 * s,
        horizontal: [{ a: 100 * s, b: 400 * s, at: 200 * s, width: 1 }],
        vertical: [{ a: 150 * s, b: 260 * s, at: 90 * s, width: 1 }],
        shapes: [{ x: 300 * s, y: 400 * s, w: 12 * s, h: 12 * s, stroked: true, filled: true, fillLevel: 0.9, round: false }],
        words: [{ x: 40 * s, y: 188 * s, w: 50 * s, h: 10 * s, str: 'Datum', size: 10 * s }],
      });
    const box = (s: number) => ({ x: 95 * s, y: 185 * s, w: 300 * s, h: 14 * s });
    const a = featuresOf(marks(1), box(1));
    const b = featuresOf(marks(2), box(2));
    for (const k of Object.keys(a)) assert.ok(Math.abs(a[k]! - b[k]!) < 1e-9, `${k}: ${a[k]} against ${b[k]}`);
  });

  it('counts a mark over the whole page as one per cell in every region, and caps a mark of absurd size', () => {
    // Worked out by hand: a filled box or a word over the whole page puts W·H / (W·H) · 96 · 128
    // cells of area into 96 · 128 cells, one each.
    const box = { x: 100, y: 400, w: 200, h: 20 };
    const whole = { x: 0, y: 0, w: 612, h: 792 };
    const f = featuresOf(page({ shapes: [{ ...whole, stroked: false, filled: true, fillLevel: 0.5, round: false }], words: [{ ...whole, str: 'x', size: 10 }] }), box);
    for (const r of CONTEXT_REGIONS) {
      assert.ok(Math.abs(f[`${r}_fill`]! - 1) < 1e-9, `${r}_fill ${f[`${r}_fill`]}`);
      assert.ok(Math.abs(f[`${r}_text`]! - 1) < 1e-9, `${r}_text ${f[`${r}_text`]}`);
    }
    // A mark of absurd size (a reader may give a word any height) adds at most 100 pages' area:
    // 100 a cell over the whole grid; an outlined box over all of it, 1 / (96 · 128) a cell. A
    // shape whose numbers add up to no finite number adds nothing.
    const huge = { x: -1e150, y: -1e150, w: 1e151, h: 1e151 };
    const infinite = { x: -1e300, y: -1e300, w: Number.MAX_VALUE, h: Number.MAX_VALUE };
    const shapes = [huge, infinite].map((b) => ({ ...b, stroked: true, filled: true, fillLevel: 0, round: false }));
    const g = featuresOf(page({ shapes, words: [{ x: 0, y: 0, w: 1e25, h: 1e25, str: 'x', size: 1e25 }] }), box);
    for (const r of CONTEXT_REGIONS) {
      assert.ok(Math.abs(g[`${r}_text`]! - 100) < 1e-6, `${r}_text ${g[`${r}_text`]}`);
      assert.ok(Math.abs(g[`${r}_fill`]! - 100) < 1e-6, `${r}_fill ${g[`${r}_fill`]}`);
      assert.ok(Math.abs(g[`${r}_outline`]! - 1 / (GRID_COLS * GRID_ROWS)) < 1e-12, `${r}_outline ${g[`${r}_outline`]}`);
    }
    // A rule 750 pt long across the page (612 pt wide) at displayed y 396 (row 64 of 128): 750 / 612
    // · 96 cell widths in the 96 cells of its row, and the box's row band is rows 64 and 65.
    const rule = featuresOf(page({ horizontal: [{ a: -50, b: 700, at: 396, width: 1 }] }), { x: 100, y: 396, w: 200, h: 10 });
    assert.ok(Math.abs(rule.row_hrule! - 750 / 612 / 2) < 1e-9, `row_hrule ${rule.row_hrule}`);
    assert.ok(Math.abs(rule.a2_hrule!) < 1e-12);
    // A rule above the page counts in its top row.
    const above = featuresOf(page({ horizontal: [{ a: 0, b: 612, at: -30, width: 1 }] }), { x: 100, y: 0, w: 200, h: 5 });
    assert.ok(Math.abs(above.in_hrule! - 1) < 1e-9, `in_hrule ${above.in_hrule}`);
  });

  it('puts a vertical rule left of a box in its left bands, and an outlined box 40 pt under it in the deeper band below only', () => {
    const box = { x: 200, y: 300, w: 150, h: 14 };
    const f = featuresOf(
      page({
        vertical: [{ a: 290, b: 330, at: 180, width: 0.5 }],
        shapes: [{ x: 220, y: 354, w: 60, h: 12, stroked: true, filled: false, fillLevel: 1, round: false }],
      }),
      box,
    );
    // Where nothing is printed a mean is 0 up to the sums' rounding (about 1e-17).
    const none = (k: string) => assert.ok(Math.abs(f[k]!) < 1e-12, `${k}: ${f[k]}`);
    assert.ok(f.l1_vrule! > 0.01 && f.l2_vrule! > 0.01);
    none('r1_vrule');
    none('r2_vrule');
    none('in_vrule');
    // 0.04 of 792 pt is 31.7 pt: the outlined box (displayed y 354) is past the first band below, within the second.
    none('b1_outline');
    assert.ok(f.b2_outline! > 1e-4 && f.near_outline! > 1e-4);
    none('a2_outline');
  });

  it('leaves out the shapes of a page too crowded to read, as its words and rules are', () => {
    const shapes: Shape[] = Array.from({ length: 7000 }, (_, i) => ({ x: (i % 100) * 6, y: Math.floor(i / 100) * 10, w: 4, h: 4, stroked: true, filled: true, fillLevel: 0, round: false }));
    const model = new PageModel(page({ shapes }));
    assert.ok(model.overloaded);
    const v = new Float64Array(N);
    new PageInk(model).around({ x: 10, y: 10, w: 100, h: 20 }, v, 0);
    assert.ok(v.every((x) => x === 0));
  });

  it('gives finite values, zero where nothing is printed, for empty pages and boxes off the page or not finite', () => {
    for (const g of [page(), page({ width: 0, height: 0 }), page({ width: Number.NaN, height: 1e12 })]) {
      for (const box of [
        { x: 10, y: 10, w: 100, h: 20 },
        { x: -500, y: -500, w: 10, h: 10 },
        { x: 1e9, y: 1e9, w: 1e9, h: 1e9 },
        { x: Number.NaN, y: Number.POSITIVE_INFINITY, w: -5, h: Number.NaN },
      ]) {
        for (const [k, v] of Object.entries(featuresOf(g, box))) assert.equal(v, 0, `${k} on ${g.width} × ${g.height}`);
      }
    }
    // A page of no size (NaN) reads as 1 × 1 pt.
    const nan = featuresOf(page({ width: Number.NaN, height: Number.NaN, words: [{ x: 0, y: 0, w: 1, h: 1, str: 'x', size: 1 }] }), { x: 0, y: 0, w: 1, h: 1 });
    assert.ok(Math.abs(nan.in_text! - 1) < 1e-9, `in_text ${nan.in_text}`);
  });

  it('keeps every value of the feature matrix finite as float32 on a hostile page', () => {
    const g = page({
      horizontal: [{ a: -1e308, b: 1e308, at: 100, width: 1 }],
      vertical: [{ a: -1e308, b: 1e308, at: 100, width: 1 }],
      shapes: [{ x: 10, y: 10, w: 1e300, h: 1e300, stroked: true, filled: true, fillLevel: 0, round: false }],
      words: [
        { x: 10, y: 10, w: 1e200, h: 1e200, str: 'Name:', size: 1e200 },
        { x: 20, y: 20, w: 1e200, h: 1e200, str: 'Date:', size: 1e200 },
      ],
    });
    const model = new PageModel(g);
    const matrix = featureMatrix(model, [{ x: 100, y: 100, w: 100, h: 20, kind: 'line', cls: 'text', label: 'Name:' } as Proposal]);
    assert.ok(matrix.every((x) => Number.isFinite(x)), 'finite');
  });
});
