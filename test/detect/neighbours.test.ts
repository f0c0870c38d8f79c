/**
 * The neighbours' scores (src/detect/neighbours.ts), the second field model's own features: values
 * worked out by hand on small pages, the floor, proposals stopped early, and hostile numbers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NEIGHBOUR_NAMES, type NeighbourPage, neighbourFeatures } from '../../src/detect/neighbours.js';

interface P {
  x: number;
  y: number;
  w: number;
  h: number;
  kind?: number;
  /** The first model's probability (turned into its margin). */
  p: number;
}

const logit = (p: number) => (p === 0 ? -Infinity : p === 1 ? Infinity : Math.log(p / (1 - p)));
const FLOOR = logit(0.02);

function pageOf(ps: readonly P[], margins?: readonly number[]): NeighbourPage {
  return {
    x: ps.map((p) => p.x),
    y: ps.map((p) => p.y),
    w: ps.map((p) => p.w),
    h: ps.map((p) => p.h),
    kind: ps.map((p) => p.kind ?? 0),
    margin: margins ?? ps.map((p) => logit(p.p)),
    count: ps.length,
  };
}

/** Each of `which`'s rows as a record by name. */
function features(ps: readonly P[], which: readonly number[], margins?: readonly number[]): Array<Record<string, number>> {
  const out = neighbourFeatures(pageOf(ps, margins), FLOOR, which);
  assert.equal(out.length, which.length * NEIGHBOUR_NAMES.length);
  return which.map((_, r) => Object.fromEntries(NEIGHBOUR_NAMES.map((n, c) => [n, out[r * NEIGHBOUR_NAMES.length + c]!])));
}

const close = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-6, `${what}: ${actual}, expected ${expected}`);

describe('neighbours: the first model scores around a proposal', () => {
  // A: the proposal looked at. B: another placement of A's field. C: a field on A's row. D: the
  // field under A, in its column. E: a field far down the page, of another kind.
  const A = { x: 0.1, y: 0.1, w: 0.2, h: 0.02, p: 0.9 };
  const B = { x: 0.12, y: 0.1, w: 0.2, h: 0.02, p: 0.6 };
  const C = { x: 0.5, y: 0.101, w: 0.2, h: 0.02, p: 0.8 };
  const D = { x: 0.1, y: 0.15, w: 0.2, h: 0.02, p: 0.7, kind: 1 };
  const E = { x: 0.6, y: 0.9, w: 0.05, h: 0.05, p: 0.3, kind: 2 };

  it('reads the overlapping placement, the row, the column and fields of the same kind and size', () => {
    const [a] = features([A, B, C, D, E], [0]);
    close(a!.n_self!, 0.9, 'self');
    close(a!.n_overlap_max!, 0.6, 'B overlaps A (IoU 0.82)');
    close(a!.n_overlap_gap!, 0.3, 'A over B');
    close(a!.n_row_max!, 0.8, 'C on its row');
    close(a!.n_row_sure!, Math.log1p(1), 'one sure field on its row (B overlaps: not counted)');
    close(a!.n_column_max!, 0.7, 'D under it, 0.03 of the page below');
    close(a!.n_similar_max!, 0.8, 'C: same kind and height, apart (B overlaps; D is of another kind)');
    close(a!.n_kind_top!, (0.9 + 0.6 + 0.8) / 3, "mean of its kind's best (3 of kind 0, fewer than 5)");
    close(a!.n_kind_sure!, 1, 'all three of kind 0 are sure');
    close(a!.n_page_sure!, Math.log1p(4), 'four sure proposals on the page');
    close(a!.n_page_top!, (0.9 + 0.6 + 0.8 + 0.7 + 0.3) / 5, "mean of the page's best (5, fewer than 10)");
  });

  it('leaves out of the row a box that shares less than half the lower height, and of the column one more than 0.1 of the page away', () => {
    const low = { ...C, y: 0.111 }; // shares 0.009 of 0.02
    const far = { ...D, y: 0.25 }; // 0.13 below A
    const [a] = features([A, low, far], [0]);
    close(a!.n_row_max!, 0, 'row');
    close(a!.n_column_max!, 0, 'column');
  });

  it('gives a box between apart and overlapping (IoU 0.05 to 0.3) to neither', () => {
    const half = { x: 0.25, y: 0.1, w: 0.2, h: 0.02, p: 0.8 }; // IoU 0.05 / 0.35 = 0.14
    const [a] = features([A, half], [0]);
    close(a!.n_overlap_max!, 0, 'not overlapping enough');
    close(a!.n_row_max!, 0, 'not apart enough to be another field of the row');
  });

  it('counts a proposal under the floor, or stopped early, as probability 0 and sees no more of it', () => {
    const weak = { ...C, p: 0.01 };
    const ps = [A, weak, D];
    const [a] = features(ps, [0]);
    close(a!.n_row_max!, 0, 'under the floor');
    close(a!.n_kind_top!, 0.9 / 2, 'its kind: A and 0');
    close(a!.n_kind_sure!, 0.5, 'one of the two of kind 0');
    const [stopped] = features(ps, [0], [logit(0.9), -Infinity, Number.NaN]);
    close(stopped!.n_column_max!, 0, 'NaN margin: no score');
    close(stopped!.n_page_top!, 0.9 / 3, 'stopped early and NaN count as 0');
  });

  it('answers for the rows asked, in their order, and nothing for an empty page', () => {
    const rows = features([A, B, C, D, E], [3, 0]);
    close(rows[0]!.n_self!, 0.7, 'D first');
    close(rows[1]!.n_self!, 0.9, 'then A');
    close(rows[0]!.n_column_max!, 0.9, 'A above D');
    assert.equal(neighbourFeatures(pageOf([]), FLOOR, []).length, 0);
  });

  it('gives, on random pages, what a plain count over every pair of proposals gives', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (let round = 0; round < 40; round++) {
      const n = 1 + Math.floor(random() * 300);
      const ps: P[] = Array.from({ length: n }, () => {
        // Mostly short boxes, some tall ones (past TALL), in rows and columns that repeat.
        const tall = random() < 0.05;
        return { x: Math.floor(random() * 20) / 20, y: Math.floor(random() * 60) / 60 + random() * 0.004, w: 0.02 + random() * 0.3, h: tall ? 0.06 + random() * 0.3 : 0.008 + random() * 0.03, kind: Math.floor(random() * 4), p: random() };
      });
      const margins = ps.map((p) => (random() < 0.1 ? -Infinity : logit(p.p)));
      const which = ps.map((_, i) => i).filter((i) => margins[i]! >= logit(0.1));
      const fast = neighbourFeatures(pageOf(ps, margins), FLOOR, which);
      const plain = plainCount(ps, margins, which);
      assert.deepEqual(Array.from(fast), Array.from(plain), `round ${round}`);
    }
  });

  it('gives the plain count on pages in whole points, where tops fall on the edges of the band, and with a box that makes it look at every one', () => {
    let seed = 11;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const pt = (v: number) => Math.round(v) / 1000;
    for (let round = 0; round < 60; round++) {
      const n = 2 + Math.floor(random() * 200);
      const ps: P[] = Array.from({ length: n }, () => ({ x: pt(random() * 900), y: pt(random() * 900), w: pt(5 + random() * 200), h: pt(random() < 0.1 ? 50 : 5 + random() * 45), kind: Math.floor(random() * 3), p: random() }));
      // Tops exactly 0.1 (and 0.15) of the page below another box's bottom.
      for (let k = 0; k + 1 < n; k += 7) ps[k + 1] = { ...ps[k + 1]!, x: ps[k]!.x, y: pt(ps[k]!.y * 1000 + ps[k]!.h * 1000 + (k % 14 ? 100 : 150)) };
      if (round % 3 === 0) ps.push({ x: 0.5, y: 0.5, w: 0, h: 0.01, p: 0.9 });
      const margins = ps.map((p) => logit(p.p));
      const which = ps.map((_, i) => i).filter((i) => margins[i]! >= logit(0.1));
      assert.deepEqual(Array.from(neighbourFeatures(pageOf(ps, margins), FLOOR, which)), Array.from(plainCount(ps, margins, which)), `round ${round}`);
    }
  });

  it('stays finite on hostile numbers', () => {
    const ps: P[] = [
      { x: Number.NaN, y: 0, w: 1, h: 1, p: 0.5 },
      { x: 1e308, y: -1e308, w: 1e308, h: 1e308, p: 0.99 },
      { x: 0, y: 0, w: 0, h: 0, p: 0.5 },
      { x: -1, y: -1, w: Infinity, h: Infinity, p: 0.5 },
    ];
    const margins = [0, 800, Infinity, -800];
    const out = neighbourFeatures(pageOf(ps, margins), FLOOR, [0, 1, 2, 3]);
    assert.ok(out.every(Number.isFinite), Array.from(out).join(' '));
    assert.deepEqual(Array.from(out), Array.from(plainCount(ps, margins, [0, 1, 2, 3])));
  });
});

/**
 * The neighbours' scores counted plainly: every live proposal against every proposal asked for,
 * sorts for the best ones (a second implementation, for the test above).
 */
function plainCount(ps: readonly P[], margins: readonly number[], which: readonly number[]): Float32Array {
  const q = margins.map((m) => (m >= FLOOR ? 1 / (1 + Math.exp(-m)) : 0));
  const live = ps.map((_, i) => i).filter((i) => margins[i]! >= FLOOR);
  const mean = (vs: number[], k: number) => {
    const top = [...vs].sort((a, b) => b - a).slice(0, k);
    return top.length ? top.reduce((s, v) => s + v, 0) / top.length : 0;
  };
  const kindOf = (i: number) => ps[i]!.kind ?? 0;
  const out = new Float32Array(which.length * NEIGHBOUR_NAMES.length);
  which.forEach((i, r) => {
    const a = ps[i]!;
    let overlap = 0, row = 0, rowSure = 0, column = 0, similar = 0; // prettier-ignore
    for (const j of live) {
      if (j === i) continue;
      const b = ps[j]!;
      const ox = Math.max(0, Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x));
      const oy = Math.max(0, Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y));
      const iou = (ox * oy) / (a.w * a.h + b.w * b.h - ox * oy);
      if (iou >= 0.3) overlap = Math.max(overlap, q[j]!);
      if (iou >= 0.05) continue;
      if (oy >= 0.5 * Math.min(a.h, b.h)) {
        row = Math.max(row, q[j]!);
        if (q[j]! >= 0.5) rowSure++;
      }
      if (ox >= 0.5 * Math.min(a.w, b.w) && Math.max(b.y - (a.y + a.h), a.y - (b.y + b.h)) < 0.1) column = Math.max(column, q[j]!);
      if (kindOf(j) === kindOf(i) && Math.abs(a.h - b.h) <= 0.15 * a.h) similar = Math.max(similar, q[j]!);
    }
    const sameKind = ps.map((_, k) => k).filter((k) => kindOf(k) === kindOf(i));
    const values = [
      q[i]!,
      overlap,
      q[i]! - overlap,
      row,
      Math.log1p(rowSure),
      column,
      mean(sameKind.map((k) => q[k]!), 5),
      sameKind.filter((k) => q[k]! >= 0.5).length / sameKind.length,
      similar,
      Math.log1p(q.filter((v) => v >= 0.5).length),
      mean(q, 10),
    ];
    out.set(values, r * NEIGHBOUR_NAMES.length);
  });
  return out;
}
