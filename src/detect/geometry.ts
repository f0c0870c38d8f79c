import type { Rect } from './types.js';

/** The parts of a pdf.js page viewport (scale 1) that geometry needs. */
export interface PageView {
  width: number;
  height: number;
  /** A point of PDF user space to viewport space (origin top-left, CropBox and /Rotate applied). */
  toView(x: number, y: number): [number, number];
}

/** Intersection over union of two boxes. */
export function iou(a: Rect, b: Rect): number {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  if (w <= 0 || h <= 0) return 0;
  const inter = w * h;
  return inter / (a.width * a.height + b.width * b.height - inter);
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

/**
 * A box given by its edges in fractions of the page, clamped to the page and rounded to 6
 * decimals, never past the page's edge by the rounding (fields must keep x + width ≤ 1);
 * `null` when nothing of it is on the page.
 */
export function pageRect(left: number, top: number, right: number, bottom: number): Rect | null {
  const x1 = Math.max(0, left);
  const y1 = Math.max(0, top);
  const x2 = Math.min(1, right);
  const y2 = Math.min(1, bottom);
  if (!(x2 > x1 && y2 > y1)) return null;
  const x = round(x1);
  const y = round(y1);
  return { x, y, width: Math.min(round(x2 - x1), round(1 - x)), height: Math.min(round(y2 - y1), round(1 - y)) };
}

/**
 * The box around points of PDF user space, in fractions of the displayed page, clamped to it;
 * `null` when nothing of it is on the page.
 */
export function boxOf(view: PageView, points: Array<[number, number]>): Rect | null {
  let x1 = Infinity;
  let y1 = Infinity;
  let x2 = -Infinity;
  let y2 = -Infinity;
  for (const [px, py] of points) {
    const [vx, vy] = view.toView(px, py);
    x1 = Math.min(x1, vx);
    y1 = Math.min(y1, vy);
    x2 = Math.max(x2, vx);
    y2 = Math.max(y2, vy);
  }
  return pageRect(x1 / view.width, y1 / view.height, x2 / view.width, y2 / view.height);
}

/** The box of a PDF rectangle `[x1, y1, x2, y2]` (any corner order). */
export function rectOf(view: PageView, rect: readonly number[]): Rect | null {
  const [a, b, c, d] = rect as [number, number, number, number];
  return boxOf(view, [[a, b], [c, b], [a, d], [c, d]]);
}

/** The first index of the sorted `values` at or above `v` (`values.length` when none). */
export function lowerBound(values: ArrayLike<number>, v: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index of the sorted `values` above `v` (`values.length` when none). */
export function upperBound(values: ArrayLike<number>, v: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid]! <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
