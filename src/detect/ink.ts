/**
 * What a page prints around a proposal, coarsely: the page cut into a grid of GRID_COLS ×
 * GRID_ROWS cells (whatever its size), and per cell how much of each kind of mark it holds
 * (INK_CHANNELS: horizontal and vertical rule length, outlined boxes, filled area, word area).
 * A proposal's context features are the mean of each channel over regions around it
 * (CONTEXT_REGIONS: inside it, bands on its four sides at two depths, a rectangle around its
 * centre, its whole row). Regions are in fractions of the page and read whole cells: a region
 * takes every cell it touches, so a band beside a box includes the cells its edge lies in. They
 * let the trees see the page's conventions near a box (labels whose answers have rules, a table's
 * other cells, an empty band) without a feature that names any of them (bench/README.md, "Ink
 * around a proposal").
 *
 * Each mark is spread evenly over the cells it covers with a difference array (a mark beyond the
 * page's edges in the cells at its edges), and the regions' sums are read from an integral image,
 * so a page costs O(marks + cells) and a proposal 55 values from 220 reads. Where nothing is
 * printed, a mean may be a rounding residue of the sums (about 1e-17) rather than 0.
 */
import type { Box } from './layout-page.js';
import type { PageModel } from './candidates.js';

export const GRID_COLS = 96;
export const GRID_ROWS = 128;
export const INK_CHANNELS = ['hrule', 'vrule', 'outline', 'fill', 'text'] as const;
/**
 * The regions, in page widths and heights: `in` the box; `l1` `r1` `a1` `b1` bands of 0.04 left
 * of, right of, above and below it (as long as its side); `l2` … `b2` the same 0.12 deep; `near`
 * 0.3 of the page's width and of its height around its centre; `row` the page's whole width at
 * its height.
 */
export const CONTEXT_REGIONS = ['in', 'l1', 'r1', 'a1', 'b1', 'l2', 'r2', 'a2', 'b2', 'near', 'row'] as const;
const BANDS = [0.04, 0.12];
const NEAR = 0.15;
/**
 * The most one mark may add, in cells: a hundred times a page's whole area, far above any mark of
 * a real page, so that no page's numbers (a word may be given any height) can overflow the sums.
 */
const MAX_AMOUNT = 100 * GRID_COLS * GRID_ROWS;

const C = INK_CHANNELS.length;
const STRIDE = GRID_COLS + 1;
const PLANE = (GRID_ROWS + 1) * STRIDE;

const floorIn = (v: number, hi: number) => (Number.isFinite(v) ? Math.max(0, Math.min(hi, Math.floor(v))) : 0);

export class PageInk {
  /** Per channel, the integral image: [r][c] is the sum of the cells above row r and left of column c. */
  private readonly sums = new Float64Array(C * PLANE);
  private readonly W: number;
  private readonly H: number;

  constructor(model: PageModel) {
    const pageSize = (v: number) => (Number.isFinite(v) ? Math.max(1, v) : 1);
    const W = (this.W = pageSize(model.page.width));
    const H = (this.H = pageSize(model.page.height));
    // Per channel, a difference array over the cells (one row and column more), so that a mark
    // costs four updates whatever its size.
    const diff = new Float64Array(C * PLANE);
    const add = (at: number, d: number) => {
      diff[at] = diff[at]! + d;
    };
    /**
     * A mark from (x0, y0) to (x1, y1): `amount` (in cells, at most MAX_AMOUNT; not finite, nothing)
     * spread evenly over the cells it touches, those beyond the page's edges counted in the cells
     * at the edges.
     */
    const mark = (channel: number, x0: number, y0: number, x1: number, y1: number, amount: number) => {
      if (!(amount > 0) || !Number.isFinite(amount)) return;
      const c0 = floorIn((Math.min(x0, x1) / W) * GRID_COLS, GRID_COLS - 1);
      const c1 = floorIn((Math.max(x0, x1) / W) * GRID_COLS, GRID_COLS - 1);
      const r0 = floorIn((Math.min(y0, y1) / H) * GRID_ROWS, GRID_ROWS - 1);
      const r1 = floorIn((Math.max(y0, y1) / H) * GRID_ROWS, GRID_ROWS - 1);
      const d = Math.min(amount, MAX_AMOUNT) / ((c1 - c0 + 1) * (r1 - r0 + 1));
      const base = channel * PLANE;
      add(base + r0 * STRIDE + c0, d);
      add(base + r0 * STRIDE + c1 + 1, -d);
      add(base + (r1 + 1) * STRIDE + c0, -d);
      add(base + (r1 + 1) * STRIDE + c1 + 1, d);
    };
    // Amounts in cells: a rule's length in cell widths (or heights), a box as one, an area in cells.
    const cellsOf = (w: number, h: number) => ((Math.abs(w) * Math.abs(h)) / (W * H)) * GRID_COLS * GRID_ROWS;
    for (const s of model.horizontal) mark(0, s.a, s.at, s.b, s.at, ((s.b - s.a) / W) * GRID_COLS);
    for (const s of model.vertical) mark(1, s.at, s.a, s.at, s.b, ((s.b - s.a) / H) * GRID_ROWS);
    // A page too crowded to read (PageModel.overloaded) has no words or rules; its shapes are
    // left out too.
    if (!model.overloaded)
      for (const s of model.page.shapes) {
        if (!Number.isFinite(s.x + s.y + s.w + s.h)) continue;
        if (s.stroked) mark(2, s.x, s.y, s.x + s.w, s.y + s.h, 1);
        if (s.filled) mark(3, s.x, s.y, s.x + s.w, s.y + s.h, cellsOf(s.w, s.h));
      }
    for (const w of model.words) mark(4, w.x, w.y, w.x + w.w, w.y + w.h, cellsOf(w.w, w.h));
    // Cell (r, c) is the sum of the differences above and left of it; the integral image at
    // [r + 1][c + 1] the sum of the cells above and left of it, both by running sums.
    const sums = this.sums;
    for (let k = 0; k < C; k++) {
      const base = k * PLANE;
      for (let r = 0; r < GRID_ROWS; r++) {
        let rowCells = 0;
        let rowSum = 0;
        for (let c = 0; c < GRID_COLS; c++) {
          const at = base + r * STRIDE + c;
          // The cell: this row's differences so far plus the cell above (rows done hold cells).
          rowCells += diff[at]!;
          const cell = rowCells + (r > 0 ? diff[at - STRIDE]! : 0);
          diff[at] = cell;
          rowSum += cell;
          sums[base + (r + 1) * STRIDE + c + 1] = sums[base + r * STRIDE + c + 1]! + rowSum;
        }
      }
    }
  }

  /** Writes the proposal's CONTEXT_REGIONS × INK_CHANNELS means into `v` from `i`; returns the next index. */
  around(b: Box, v: Float64Array, i: number): number {
    const x = b.x / this.W;
    const y = b.y / this.H;
    const x2 = (b.x + b.w) / this.W;
    const y2 = (b.y + b.h) / this.H;
    i = this.mean(x, y, x2, y2, v, i);
    for (const s of BANDS) {
      i = this.mean(x - s, y, x, y2, v, i);
      i = this.mean(x2, y, x2 + s, y2, v, i);
      i = this.mean(x, y - s, x2, y, v, i);
      i = this.mean(x, y2, x2, y2 + s, v, i);
    }
    const cx = (x + x2) / 2;
    const cy = (y + y2) / 2;
    i = this.mean(cx - NEAR, cy - NEAR, cx + NEAR, cy + NEAR, v, i);
    return this.mean(0, y, 1, y2, v, i);
  }

  /** Each channel's mean per cell over the cells a region (in page units) touches, at least one cell. */
  private mean(x0: number, y0: number, x1: number, y1: number, v: Float64Array, i: number): number {
    let c0 = floorIn(x0 * GRID_COLS, GRID_COLS);
    let r0 = floorIn(y0 * GRID_ROWS, GRID_ROWS);
    let c1 = Number.isFinite(x1) ? Math.max(0, Math.min(GRID_COLS, Math.ceil(x1 * GRID_COLS))) : 0;
    let r1 = Number.isFinite(y1) ? Math.max(0, Math.min(GRID_ROWS, Math.ceil(y1 * GRID_ROWS))) : 0;
    c1 = Math.min(Math.max(c1, c0 + 1), GRID_COLS);
    r1 = Math.min(Math.max(r1, r0 + 1), GRID_ROWS);
    c0 = Math.min(c0, c1 - 1);
    r0 = Math.min(r0, r1 - 1);
    const cells = (c1 - c0) * (r1 - r0);
    const s = this.sums;
    for (let k = 0; k < C; k++) {
      const base = k * PLANE;
      v[i++] = (s[base + r1 * STRIDE + c1]! - s[base + r0 * STRIDE + c1]! - s[base + r1 * STRIDE + c0]! + s[base + r0 * STRIDE + c0]!) / cells;
    }
    return i;
  }
}
