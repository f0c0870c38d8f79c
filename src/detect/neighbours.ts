/**
 * How the first field model scored the proposals around a proposal: the neighbours' scores, which
 * the second field model (`LayoutModel.second`) reads beside the proposal's own features. The first
 * model scores every proposal on its own. The second sees whether a better placement of the same
 * field overlaps it, whether the other fields of its row, its column, its kind and its size are
 * sure ones, and how many sure fields its page has: a form keeps one convention on a page. (This is
 * stacking, or auto-context: one model's scores are features of the next.)
 *
 * train.py computes these with this module (through scripts/detect/neighbours.ts), from first
 * scores made without the page's repository, so that the second model learns from scores like
 * those it gets at run time.
 *
 * The work is bounded: a page has at most MAX_PROPOSALS proposals (candidates.ts), and each one
 * asked for looks at the live ones (scored at least the floor): at most MAX_PROPOSALS² pair tests.
 */

export const NEIGHBOUR_NAMES = [
  'n_self',
  'n_overlap_max',
  'n_overlap_gap',
  'n_row_max',
  'n_row_sure',
  'n_column_max',
  'n_kind_top',
  'n_kind_sure',
  'n_similar_max',
  'n_page_sure',
  'n_page_top',
] as const;

/** Overlapping proposals (one field's other placements): IoU at least this. */
const OVERLAP_IOU = 0.3;
/** Apart: two proposals for two fields overlap by less than this IoU. */
const APART_IOU = 0.05;
/** A sure field, counted: the first model's probability at least this. */
const SURE = 0.5;
/** In one column: at most this far apart vertically (a fraction of the page's height). */
const COLUMN_GAP = 0.1;
/** Of one size: heights within this share of the proposal's own. */
const SAME_HEIGHT = 0.15;
/** The page's best proposals (n_page_top) and its kind's (n_kind_top): this many. */
const PAGE_TOP = 10;
const KIND_TOP = 5;

/** A page's proposals: boxes in fractions of the page (origin top-left), kinds as small integers. */
export interface NeighbourPage {
  x: ArrayLike<number>;
  y: ArrayLike<number>;
  w: ArrayLike<number>;
  h: ArrayLike<number>;
  kind: ArrayLike<number>;
  /** The first model's margins (log-odds); -Infinity for a proposal it stopped early. */
  margin: ArrayLike<number>;
  count: number;
}

const sigmoid = (m: number) => 1 / (1 + Math.exp(-m));

/**
 * The neighbours' scores of the proposals `which` of a page (NEIGHBOUR_NAMES, in order, row after row):
 * only proposals whose margin is at least `floor` are live (seen by the others, with their
 * probability); the others count as probability 0. Every value is finite.
 */
export function neighbourFeatures(page: NeighbourPage, floor: number, which: ArrayLike<number>): Float32Array {
  const n = page.count;
  const width = NEIGHBOUR_NAMES.length;
  const out = new Float32Array(which.length * width);
  // The probability of each proposal, 0 under the floor.
  const q = new Float64Array(n);
  const live: number[] = [];
  for (let i = 0; i < n; i++) {
    const m = page.margin[i]!;
    if (m >= floor && Number.isFinite(m)) {
      q[i] = sigmoid(m);
      live.push(i);
    } else if (m === Infinity) {
      q[i] = 1;
      live.push(i);
    }
  }
  // The page: how many sure proposals, and the mean of its best ones.
  let sure = 0;
  for (let i = 0; i < n; i++) if (q[i]! >= SURE) sure++;
  const pageTop = topMean(q, PAGE_TOP);
  // Each kind: the mean of its best proposals and its share of sure ones.
  const byKind = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const k = page.kind[i]!;
    let list = byKind.get(k);
    if (!list) byKind.set(k, (list = []));
    list.push(q[i]!);
  }
  const kindTop = new Map<number, number>();
  const kindShare = new Map<number, number>();
  for (const [k, list] of byKind) {
    kindTop.set(k, topMean(list, KIND_TOP));
    kindShare.set(k, list.filter((v) => v >= SURE).length / list.length);
  }
  const { x, y, w, h } = page;
  for (let r = 0; r < which.length; r++) {
    const i = which[r]!;
    const ix1 = x[i]!, iy1 = y[i]!, iw = w[i]!, ih = h[i]!; // prettier-ignore
    const ix2 = ix1 + iw;
    const iy2 = iy1 + ih;
    const areaI = iw * ih;
    let ovlMax = 0;
    let rowMax = 0;
    let rowSure = 0;
    let colMax = 0;
    let simMax = 0;
    for (const j of live) {
      if (j === i) continue;
      const qj = q[j]!;
      const jx1 = x[j]!, jy1 = y[j]!, jw = w[j]!, jh = h[j]!; // prettier-ignore
      const jx2 = jx1 + jw;
      const jy2 = jy1 + jh;
      const ox = Math.max(0, Math.min(ix2, jx2) - Math.max(ix1, jx1));
      const oy = Math.max(0, Math.min(iy2, jy2) - Math.max(iy1, jy1));
      const inter = ox * oy;
      const union = areaI + jw * jh - inter;
      const iou = union > 0 ? inter / union : 0;
      if (iou >= OVERLAP_IOU) {
        if (qj > ovlMax) ovlMax = qj;
        continue;
      }
      if (iou >= APART_IOU) continue;
      if (oy >= 0.5 * Math.min(ih, jh)) {
        if (qj > rowMax) rowMax = qj;
        if (qj >= SURE) rowSure++;
      }
      const gap = Math.max(jy1 - iy2, iy1 - jy2);
      if (ox >= 0.5 * Math.min(iw, jw) && gap < COLUMN_GAP && qj > colMax) colMax = qj;
      if (page.kind[j] === page.kind[i] && Math.abs(ih - jh) <= SAME_HEIGHT * ih && qj > simMax) simMax = qj;
    }
    const o = r * width;
    const k = page.kind[i]!;
    out[o] = q[i]!;
    out[o + 1] = ovlMax;
    out[o + 2] = q[i]! - ovlMax;
    out[o + 3] = rowMax;
    out[o + 4] = Math.log1p(rowSure);
    out[o + 5] = colMax;
    out[o + 6] = kindTop.get(k)!;
    out[o + 7] = kindShare.get(k)!;
    out[o + 8] = simMax;
    out[o + 9] = Math.log1p(sure);
    out[o + 10] = pageTop;
  }
  return out;
}

/** The mean of the `k` largest values (of all of them when there are fewer). */
function topMean(values: ArrayLike<number>, k: number): number {
  const sorted = Array.from(values).sort((a, b) => b - a);
  const top = sorted.slice(0, k);
  return top.length ? top.reduce((s, v) => s + v, 0) / top.length : 0;
}
