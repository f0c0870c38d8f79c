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
/** Proposals higher than this (a fraction of the page's height) are looked at from anywhere on the page. */
const TALL = 0.05;
/** The band of tops a proposal looks at is this much wider on each side than its tests need. */
const EDGE = 1e-6;
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
  // The page and each kind on it: how many sure proposals, and the mean of the best ones.
  let sure = 0;
  const pageTop = new TopValues(PAGE_TOP);
  const kinds = new Map<number, { top: TopValues; sure: number; count: number }>();
  for (let i = 0; i < n; i++) {
    const k = page.kind[i]!;
    let of = kinds.get(k);
    if (!of) kinds.set(k, (of = { top: new TopValues(KIND_TOP), sure: 0, count: 0 }));
    pageTop.add(q[i]!);
    of.top.add(q[i]!);
    of.count++;
    if (q[i]! >= SURE) {
      sure++;
      of.sure++;
    }
  }
  const pageMean = pageTop.mean();
  // The live proposals' boxes, probabilities and kinds, copied once into typed arrays: first the
  // short ones (at most TALL high) in the order of their tops, then the others. The short proposals
  // on a proposal's row, in its column or over it have their tops in a band around its own.
  const { x, y, w, h } = page;
  const L = live.length;
  const short = new Uint8Array(n);
  for (const j of live) short[j] = +(h[j]! <= TALL && Number.isFinite(y[j]!));
  live.sort((a, b) => short[b]! - short[a]! || (short[a] ? y[a]! - y[b]! : 0) || a - b);
  let S = 0;
  while (S < L && short[live[S]!]) S++;
  const lx1 = new Float64Array(L), ly1 = new Float64Array(L), lx2 = new Float64Array(L), ly2 = new Float64Array(L); // prettier-ignore
  const lw = new Float64Array(L), lh = new Float64Array(L), lq = new Float64Array(L), lk = new Float64Array(L); // prettier-ignore
  const lIndex = Int32Array.from(live);
  // A box of no height or width, or not finite, is on every row or column: then every live
  // proposal is looked at, and in full.
  let odd = false;
  for (let t = 0; t < L; t++) {
    const j = live[t]!;
    lx1[t] = x[j]!;
    ly1[t] = y[j]!;
    lw[t] = w[j]!;
    lh[t] = h[j]!;
    lx2[t] = lx1[t]! + lw[t]!;
    ly2[t] = ly1[t]! + lh[t]!;
    lq[t] = q[j]!;
    lk[t] = page.kind[j]!;
    if (!(lh[t]! > 0 && lw[t]! > 0 && Number.isFinite(ly2[t]!) && Number.isFinite(lx2[t]!) && Number.isFinite(lx1[t]!))) odd = true;
  }
  // Each kind's live proposals, the most probable first (n_similar_max: the first that qualifies).
  const byProbability = new Map<number, number[]>();
  for (let t = 0; t < L; t++) {
    let list = byProbability.get(lk[t]!);
    if (!list) byProbability.set(lk[t]!, (list = []));
    list.push(t);
  }
  for (const list of byProbability.values()) list.sort((a, b) => lq[b]! - lq[a]! || a - b);
  /** The first short live proposal (in top order) whose top is at least `v`, or S. */
  const firstTopFrom = (v: number) => {
    let lo = 0;
    let hi = S;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ly1[mid]! < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const iouWith = (t: number, ix1: number, iy1: number, ix2: number, iy2: number, areaI: number) => {
    const inter = Math.max(0, Math.min(ix2, lx2[t]!) - Math.max(ix1, lx1[t]!)) * Math.max(0, Math.min(iy2, ly2[t]!) - Math.max(iy1, ly1[t]!));
    const union = areaI + lw[t]! * lh[t]! - inter;
    return union > 0 ? inter / union : 0;
  };
  for (let r = 0; r < which.length; r++) {
    const i = which[r]!;
    const ix1 = x[i]!, iy1 = y[i]!, iw = w[i]!, ih = h[i]!, ik = page.kind[i]!; // prettier-ignore
    const ix2 = ix1 + iw;
    const iy2 = iy1 + ih;
    const areaI = iw * ih;
    let ovlMax = 0;
    let rowMax = 0;
    let rowSure = 0;
    let colMax = 0;
    let simMax = 0;
    // Overlapping it, on its row or within COLUMN_GAP above or below it: of the short ones, those
    // with a top from about iy1 - COLUMN_GAP - TALL to iy2 + COLUMN_GAP; and every tall one (every
    // one of all, when some box is odd or this one is).
    const whole: boolean = odd || !(ih > 0 && iw > 0 && Number.isFinite(iy2) && Number.isFinite(ix2));
    // (The band is EDGE wider on each side than the tests below need, so that a top on its edge,
    // where the tests' own rounding decides, is always tested.)
    const from: number = whole ? 0 : firstTopFrom(iy1 - COLUMN_GAP - TALL - EDGE);
    const to: number = whole ? S : firstTopFrom(iy2 + COLUMN_GAP + EDGE);
    const end = to + (L - S);
    for (let u: number = from; u < end; u++) {
      const t = u < to ? u : S + (u - to);
      if (lIndex[t] === i) continue;
      const ox = Math.max(0, Math.min(ix2, lx2[t]!) - Math.max(ix1, lx1[t]!));
      const oy = Math.max(0, Math.min(iy2, ly2[t]!) - Math.max(iy1, ly1[t]!));
      // Neither on its row nor in its column nor over it (of boxes with a size, not odd).
      if (ox === 0 && oy === 0 && !whole) continue;
      const qj = lq[t]!;
      const jw = lw[t]!, jh = lh[t]!; // prettier-ignore
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
      if (qj > colMax && ox >= 0.5 * Math.min(iw, jw) && Math.max(ly1[t]! - iy2, iy1 - ly2[t]!) < COLUMN_GAP) colMax = qj;
    }
    // Of its kind and height, apart from it, anywhere on the page: the most probable.
    for (const t of byProbability.get(ik) ?? []) {
      if (lIndex[t] === i || !(Math.abs(ih - lh[t]!) <= SAME_HEIGHT * ih)) continue;
      if (iouWith(t, ix1, iy1, ix2, iy2, areaI) < APART_IOU) {
        simMax = lq[t]!;
        break;
      }
    }
    const o = r * width;
    out[o] = q[i]!;
    out[o + 1] = ovlMax;
    out[o + 2] = q[i]! - ovlMax;
    out[o + 3] = rowMax;
    out[o + 4] = Math.log1p(rowSure);
    out[o + 5] = colMax;
    const kind = kinds.get(ik)!;
    out[o + 6] = kind.top.mean();
    out[o + 7] = kind.sure / kind.count;
    out[o + 8] = simMax;
    out[o + 9] = Math.log1p(sure);
    out[o + 10] = pageMean;
  }
  return out;
}

/** The `k` largest of the values added, largest first. */
class TopValues {
  private readonly top: number[] = [];
  constructor(private readonly k: number) {}

  add(v: number): void {
    const top = this.top;
    if (top.length === this.k && !(v > top[top.length - 1]!)) return;
    let at = top.length === this.k ? top.length - 1 : top.length;
    while (at > 0 && top[at - 1]! < v) {
      top[at] = top[at - 1]!;
      at--;
    }
    top[at] = v;
  }

  /** Their mean (added largest first), 0 when none was added. */
  mean(): number {
    return this.top.length ? this.top.reduce((s, v) => s + v, 0) / this.top.length : 0;
  }
}
