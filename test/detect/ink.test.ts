/**
 * The ink around a proposal (src/detect/ink.ts): each region's means against a direct count over
 * the grid's cells, where the marks fall, independence from the page's size, and pages with
 * nothing or hostile numbers on them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PageModel } from '../../src/detect/candidates.js';
import { FEATURE_NAMES } from '../../src/detect/features.js';
import { CONTEXT_REGIONS, GRID_COLS, GRID_ROWS, INK_CHANNELS, PageInk } from '../../src/detect/ink.js';
import type { Box, PageGraphics, Shape } from '../../src/detect/layout-page.js';

const N = CONTEXT_REGIONS.length * INK_CHANNELS.length;

function page(over: Partial<PageGraphics> = {}): PageGraphics {
  return { width: 612, height: 792, horizontal: [], vertical: [], shapes: [], words: [], ...over };
}

function featuresOf(g: PageGraphics, box: Box): Record<string, number> {
  const model = new PageModel(g);
  const ink = new PageInk(model, g.shapes);
  const v = new Float64Array(N);
  assert.equal(ink.around(box, v, 0), N);
  const out: Record<string, number> = {};
  CONTEXT_REGIONS.forEach((r, i) => INK_CHANNELS.forEach((c, k) => (out[`${r}_${c}`] = v[i * INK_CHANNELS.length + k]!)));
  return out;
}

/** The same means, counted cell by cell: every mark spread evenly over the cells it touches. */
function direct(model: PageModel, shapes: readonly Shape[], box: Box): number[] {
  const W = model.page.width;
  const H = model.page.height;
  const cells = INK_CHANNELS.map(() => Array.from({ length: GRID_ROWS }, () => new Array<number>(GRID_COLS).fill(0)));
  const cell = (v: number, n: number) => Math.max(0, Math.min(n - 1, Math.floor(v * n)));
  const spread = (k: number, x0: number, y0: number, x1: number, y1: number, amount: number) => {
    if (!(amount > 0)) return;
    const [c0, c1] = [cell(Math.min(x0, x1) / W, GRID_COLS), cell(Math.max(x0, x1) / W, GRID_COLS)];
    const [r0, r1] = [cell(Math.min(y0, y1) / H, GRID_ROWS), cell(Math.max(y0, y1) / H, GRID_ROWS)];
    const d = amount / ((c1 - c0 + 1) * (r1 - r0 + 1));
    for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) cells[k]![r]![c]! += d;
  };
  for (const s of model.horizontal) spread(0, s.a, s.at, s.b, s.at, ((s.b - s.a) / W) * GRID_COLS);
  for (const s of model.vertical) spread(1, s.at, s.a, s.at, s.b, ((s.b - s.a) / H) * GRID_ROWS);
  for (const s of shapes) {
    if (s.stroked) spread(2, s.x, s.y, s.x + s.w, s.y + s.h, 1);
    if (s.filled) spread(3, s.x, s.y, s.x + s.w, s.y + s.h, ((s.w * s.h) / (W * H)) * GRID_COLS * GRID_ROWS);
  }
  for (const w of model.words) spread(4, w.x, w.y, w.x + w.w, w.y + w.h, ((w.w * w.h) / (W * H)) * GRID_COLS * GRID_ROWS);
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
      const ink = new PageInk(model, g.shapes);
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
    const hostile = page({
      shapes: [{ x: 10, y: 10, w: Number.MAX_VALUE, h: Number.MAX_VALUE, stroked: true, filled: true, fillLevel: 0, round: false }],
      words: [{ x: 10, y: 10, w: 1e300, h: 1e300, str: 'x', size: 10 }],
    });
    for (const [k, v] of Object.entries(featuresOf(hostile, { x: 20, y: 20, w: 50, h: 10 }))) assert.ok(Number.isFinite(v), `${k}: ${v}`);
  });
});
