/**
 * Field proposals for the learned detector: every plausible field box of a printed page, many
 * more than there are fields. A model scores each from its feature vector (features.ts) and
 * non-maximum suppression keeps the best; so where a field sits in its cell (the whole cell, a
 * band over its bottom rule, the room right of its label …) is not decided here: each placement
 * is proposed as a candidate of its own, and the model learns which one forms use.
 *
 * Besides what the rule detector finds (layout.ts: cells, fill-in lines, combs, underscore runs,
 * drawn squares, box glyphs), it proposes what those rules miss: the empty run right of a label
 * up to the next text, rule or cell edge; the space under a column caption, ruled or not; a box
 * beside an option word (`☐ Yes`) even when none is drawn; several fields in one cell (after
 * each label along it); a field much smaller than its cell (its bottom band, a line's height).
 *
 * Also: each character cell of a comb and groups of boxes a little apart (a date), parts of a
 * field printed between short dashes, parts of typed templates (`…/…/…`), dot leaders typed in
 * a word, boxes typed as brackets (`[ ]`), a fill-in line cut by the captions under it, and the
 * rows of a table under its column captions where only horizontal rules divide it.
 *
 * The work is bounded: at most MAX_WORDS words, MAX_RULES rules and MAX_SHAPES boxes are read (a
 * page of vector art or a hostile page gets the rule detector's candidates only, which has its
 * own bounds), at most MAX_RAW proposals are made and MAX_PROPOSALS returned, and every
 * neighbour lookup goes through a grid index.
 */
import { pageCandidates, mergeSegments, strokesOver, type Candidate } from './layout.js';
import { CHECK_GLYPHS, rememberedByText, rememberedTest, type Box, type PageGraphics, type Segment, type Shape, type Word } from './layout-page.js';

export type ProposalKind =
  /** layout.ts: the writing space of a ruled cell (below its label). */
  | 'cell'
  /** layout.ts: the space under a label at the top of a cell. */
  | 'cell-top'
  /** layout.ts: the space right of a label in a one-line cell. */
  | 'cell-left'
  /** The whole cell, between its rules, label and all. */
  | 'cell-full'
  /** A band over the cell's bottom rule, a line or two high. */
  | 'cell-bottom'
  /** The room right of a label inside a cell, up to the next text or the cell's edge. */
  | 'cell-right-of-label'
  /** A line's height over a fill-in rule. */
  | 'line'
  /** The empty run right of a label on its text line (no cell), up to the next text or rule. */
  | 'label-run'
  /** The space under a column caption, up to the next text or rule below. */
  | 'under-caption'
  | 'comb'
  | 'underscore'
  /** A small drawn square or circle. */
  | 'square'
  /** A check box glyph (☐ ❑ …). */
  | 'glyph'
  /** A box to tick just left (or right) of an option word, drawn or not. */
  | 'option-box'
  /** A drawn rectangle, whole (a box bigger than a check box). */
  | 'shape-box'
  /** Several fill-in lines one under the other, as one text area. */
  | 'line-stack'
  /** A group of a field printed in parts between short dashes (`___ - __ - ____`). */
  | 'dash-group'
  /** A part of a typed template between slashes (`…/…/…`, `__/__/____`). */
  | 'template-part';

export const PROPOSAL_KINDS: readonly ProposalKind[] = [
  'cell',
  'cell-top',
  'cell-left',
  'cell-full',
  'cell-bottom',
  'cell-right-of-label',
  'line',
  'label-run',
  'under-caption',
  'comb',
  'underscore',
  'square',
  'glyph',
  'option-box',
  'shape-box',
  'line-stack',
  'dash-group',
  'template-part',
];

export type ProposalClass = 'text' | 'checkbox' | 'signature';
/** A class as a small number, for typed arrays. */
const CLASS_ID: Readonly<Record<ProposalClass, number>> = { text: 0, checkbox: 1, signature: 2 };

export interface Proposal {
  /** Points of the displayed page, origin top-left. */
  x: number;
  y: number;
  w: number;
  h: number;
  kind: ProposalKind;
  cls: ProposalClass;
  /** The label text nearest to it (left on its line, or above), '' when none. */
  label: string;
}

/** More words than this: a page of running text or a hostile page; only the rule detector's candidates. */
export const MAX_WORDS = 6000;
/** More rules than this (merged, or drawn before dashes are joined): a drawing. */
export const MAX_RULES = 3000;
/** More drawn boxes than this: a drawing too. */
export const MAX_SHAPES = 6000;
/** At most this many proposals a page (the first, by kind priority, are kept). */
export const MAX_PROPOSALS = 2500;
/** At most this many proposals are made before near-duplicates are dropped (the rest are not made). */
const MAX_RAW = 20_000;
/** At most this many pieces of rules are looked at as cells' floors. */
const MAX_PIECES = 10_000;

const MIN_W = 8;
const MIN_H = 5;
/** Cells taller than this are not fields (nor their full box). */
const MAX_CELL_H = 200;

const overlap = (a1: number, a2: number, b1: number, b2: number) => Math.max(0, Math.min(a2, b2) - Math.max(a1, b1));

export function iouBox(a: Box, b: Box): number {
  const inter = overlap(a.x, a.x + a.w, b.x, b.x + b.w) * overlap(a.y, a.y + a.h, b.y, b.y + b.h);
  if (inter <= 0) return 0;
  return inter / (a.w * a.h + b.w * b.h - inter);
}

/** Dot leaders, dashes, bullets, separators: no letter or digit. */
export const isLeader = rememberedTest((s) => !/[\p{L}\p{N}$€£%]/u.test(s));
const CHECK_GLYPH = new RegExp(`^[${CHECK_GLYPHS}]$`);
export const isCheckGlyph = rememberedTest((s) => CHECK_GLYPH.test(s));
export const isUnderscore = rememberedTest((s) => /^_{3,}$/.test(s));
/** Underscores, dot leaders and dashes: where one writes, not text that ends a run. */
export const isFill = (s: string) => /^[_.…·\-–—\s]+$/.test(s);
/** A word that is printed text (not a leader, underscores or a box glyph). */
export const isText = rememberedTest((s) => !isLeader(s) && !isCheckGlyph(s));

/** An item covering more cells than this is kept apart from the grid's cells. */
const BIG_CELLS = 256;
/** At most this many such items are indexed. */
export const MAX_BIG = 256;

/**
 * A uniform grid over the page for neighbour lookups: each item is filed in every cell it
 * covers; items off the page are filed in the border cells. Its memory is bounded: at most
 * about 80,000 cells, and an item in at most BIG_CELLS of them.
 *
 * The items' edges are copied into typed arrays: a scan compares numbers there rather than the
 * properties of items of every shape (words, rules, phrases, proposals), which would make the
 * one compiled `scan` look properties up the slow way.
 */
export class Grid<T extends Box> {
  /** Per cell, the indexes of the items filed in it: `filed[start[c] .. start[c + 1])`. */
  private readonly start: Int32Array;
  private readonly filed: Int32Array;
  private readonly stamp: Uint32Array;
  private epoch = 0;
  /** Columns and rows of cells: cell `row * cols + col` (`cellOf`). */
  readonly cols: number;
  readonly rows: number;
  private readonly size: number;
  /** Each item's box: x, y, x + w, y + h. */
  private readonly x1: Float64Array;
  private readonly y1: Float64Array;
  private readonly x2: Float64Array;
  private readonly y2: Float64Array;
  /** The items found by the last `scan` (its first n). */
  readonly hits: T[] = [];
  /** The indexes of the items found by the last `scan` (its first n). */
  readonly hitIndexes: number[] = [];
  /** Items covering more than BIG_CELLS cells. */
  private readonly big: number[] = [];

  constructor(
    readonly items: readonly T[],
    size: number,
    width: number,
    height: number,
  ) {
    // At most about 80,000 cells, whatever the page's size and shape: cells of at least the
    // page's area over 40,000 (a large page), and at least 1/40,000 of its width and height
    // together (a long, narrow page, whose cells of that area would still be millions in a row).
    this.size = Math.max(size, Math.sqrt((Math.max(width, 1) * Math.max(height, 1)) / 40_000), (Math.max(width, 1) + Math.max(height, 1)) / 40_000);
    size = this.size;
    this.cols = Math.max(1, Math.ceil(Math.max(width, 1) / size));
    this.rows = Math.max(1, Math.ceil(Math.max(height, 1) / size));
    const n = items.length;
    this.stamp = new Uint32Array(n);
    this.x1 = new Float64Array(n);
    this.y1 = new Float64Array(n);
    this.x2 = new Float64Array(n);
    this.y2 = new Float64Array(n);
    // Each item's cell range (or -1 for a big one), then the cells' lists counted and filled.
    const c1s = new Int32Array(n);
    const c2s = new Int32Array(n);
    const r1s = new Int32Array(n);
    const r2s = new Int32Array(n);
    const counts = new Int32Array(this.cols * this.rows + 1);
    for (let i = 0; i < n; i++) {
      const b = items[i]!;
      this.x1[i] = b.x;
      this.y1[i] = b.y;
      this.x2[i] = b.x + b.w;
      this.y2[i] = b.y + b.h;
      const c1 = this.col(b.x);
      const c2 = this.col(b.x + b.w);
      const r1 = this.row(b.y);
      const r2 = this.row(b.y + b.h);
      // A big item (a page frame) is looked at by every scan rather than filed in every cell;
      // past MAX_BIG of them (a hostile page), the rest are not indexed.
      if ((c2 - c1 + 1) * (r2 - r1 + 1) > BIG_CELLS) {
        if (this.big.length < MAX_BIG) this.big.push(i);
        c1s[i] = -1;
        continue;
      }
      // A box with a coordinate that is not a number is filed nowhere.
      if (Number.isNaN(c1 + c2 + r1 + r2)) {
        c1s[i] = -1;
        continue;
      }
      c1s[i] = c1;
      c2s[i] = c2;
      r1s[i] = r1;
      r2s[i] = r2;
      for (let r = r1; r <= r2; r++) for (let c = c1; c <= c2; c++) counts[r * this.cols + c + 1]!++;
    }
    for (let c = 1; c < counts.length; c++) counts[c]! += counts[c - 1]!;
    this.start = counts;
    this.filed = new Int32Array(counts[counts.length - 1]!);
    const next = counts.slice(0, -1);
    // In the order of the items, as each cell's list always was.
    for (let i = 0; i < n; i++) {
      if (c1s[i]! < 0) continue;
      for (let r = r1s[i]!; r <= r2s[i]!; r++) for (let c = c1s[i]!; c <= c2s[i]!; c++) this.filed[next[r * this.cols + c]!++] = i;
    }
  }

  private col(x: number): number {
    return Math.max(0, Math.min(this.cols - 1, Math.floor(x / this.size)));
  }

  private row(y: number): number {
    return Math.max(0, Math.min(this.rows - 1, Math.floor(y / this.size)));
  }

  /** The cell (row by row) holding a point; `scan` visits cells in this order. */
  cellOf(x: number, y: number): number {
    return this.row(y) * this.cols + this.col(x);
  }

  /** Whether a box, were it an item of a grid of this one's size, would be kept apart as big. */
  isBig(b: Box): boolean {
    return (this.col(b.x + b.w) - this.col(b.x) + 1) * (this.row(b.y + b.h) - this.row(b.y) + 1) > BIG_CELLS;
  }

  /** Items whose box overlaps (or touches) x1..x2 × y1..y2. */
  query(x1: number, y1: number, x2: number, y2: number): T[] {
    return this.hits.slice(0, this.scan(x1, y1, x2, y2));
  }

  /**
   * The hot-path form of `query`: the items are `hits[0 .. returned count)` (their indexes in
   * `hitIndexes`), valid until the next scan of this grid (so a scan's loop must not scan the
   * same grid again); nothing is allocated.
   */
  scan(x1: number, y1: number, x2: number, y2: number): number {
    let n = 0;
    if (!(x2 >= x1 && y2 >= y1)) return n;
    if (++this.epoch === 0xffffffff) {
      this.stamp.fill(0);
      this.epoch = 1;
    }
    const { epoch, hits, hitIndexes, items, stamp, start, filed } = this;
    const bx1 = this.x1;
    const by1 = this.y1;
    const bx2 = this.x2;
    const by2 = this.y2;
    for (let k = 0; k < this.big.length; k++) {
      const i = this.big[k]!;
      if (bx1[i]! <= x2 && bx2[i]! >= x1 && by1[i]! <= y2 && by2[i]! >= y1) {
        hitIndexes[n] = i;
        hits[n++] = items[i]!;
      }
    }
    const c1 = this.col(x1);
    const c2 = this.col(x2);
    const r2 = this.row(y2);
    // The cells c1..c2 of a row are consecutive in `filed`: one run of it a row, in cell order.
    for (let r = this.row(y1); r <= r2; r++) {
      const base = r * this.cols;
      for (let k = start[base + c1]!, end = start[base + c2 + 1]!; k < end; k++) {
        const i = filed[k]!;
        if (stamp[i] === epoch) continue;
        stamp[i] = epoch;
        if (bx1[i]! <= x2 && bx2[i]! >= x1 && by1[i]! <= y2 && by2[i]! >= y1) {
          hitIndexes[n] = i;
          hits[n++] = items[i]!;
        }
      }
    }
    return n;
  }
}

/** A rule as a box (for the grid): horizontal rules are `a..b` wide at `at`, verticals tall. */
export interface RuleBox extends Box {
  seg: Segment;
}

const hBox = (s: Segment): RuleBox => ({ x: s.a, y: s.at - s.width / 2, w: s.b - s.a, h: Math.max(s.width, 0.1), seg: s });
const vBox = (s: Segment): RuleBox => ({ x: s.at - s.width / 2, y: s.a, w: Math.max(s.width, 0.1), h: s.b - s.a, seg: s });

/** What a word is: printed text (`isText`), a box glyph, an underscore run, another leader. */
export const WORD_TEXT = 0;
export const WORD_GLYPH = 1;
export const WORD_UNDERSCORE = 2;
export const WORD_LEADER = 3;
/** A word's kind (one of the four above), remembered by its text: one lookup where the tests would take three. */
const wordKindOf = rememberedByText((s) => (isCheckGlyph(s) ? WORD_GLYPH : isUnderscore(s) ? WORD_UNDERSCORE : isLeader(s) ? WORD_LEADER : WORD_TEXT));

/** A text line: words whose middles are within half a height of each other, left to right. */
export interface TextLine {
  words: Word[];
  y: number;
  h: number;
  size: number;
}

/** A phrase: words of a line that follow each other closely. */
export interface Phrase extends Box {
  words: Word[];
  str: string;
  size: number;
  line: TextLine;
}

/**
 * The page as the proposer and the feature extractor read it: merged rules, text words, lines,
 * phrases and the grids over them. Built once per page.
 */
export class PageModel {
  readonly words: Word[];
  /** What each of `words` is (by index, as `wordGrid.hitIndexes` gives them): WORD_TEXT, WORD_GLYPH … */
  readonly wordKind: Uint8Array;
  readonly text: Word[];
  readonly horizontal: Segment[];
  readonly vertical: Segment[];
  readonly hGrid: Grid<RuleBox>;
  readonly vGrid: Grid<RuleBox>;
  readonly wordGrid: Grid<Word>;
  readonly lines: TextLine[];
  readonly phrases: Phrase[];
  readonly phraseGrid: Grid<Phrase>;
  /** Where the page's text ends on the right (points). */
  readonly textRight: number;
  /** The median size of the page's text (points), 7..14. */
  readonly lineHeight: number;
  /** Too many words, rules or boxes to read more than the rule detector does. */
  readonly overloaded: boolean;

  constructor(readonly page: PageGraphics) {
    const finite = (b: Box) => Number.isFinite(b.x + b.y + b.w + b.h) && b.w >= 0 && b.h >= 0;
    const words = page.words.filter((w) => finite(w) && w.w > 0 && w.h > 0);
    // Narrow dark bars drawn as filled boxes divide cells as rules do.
    const bars = page.shapes.filter((s) => s.filled && !s.round && s.fillLevel < 0.9 && Number.isFinite(s.x + s.y + s.w + s.h));
    const hBars = bars.filter((s) => s.h <= 8 && s.w >= 3 * s.h).map((s) => ({ a: s.x, b: s.x + s.w, at: s.y + s.h / 2, width: s.h }));
    const vBars = bars.filter((s) => s.w <= 8 && s.h >= 3 * s.w).map((s) => ({ a: s.y, b: s.y + s.h, at: s.x + s.w / 2, width: s.w }));
    const horizontal = mergeSegments([...page.horizontal, ...hBars].filter((s) => Number.isFinite(s.a + s.b + s.at + s.width))).filter((s) => s.b - s.a >= 3);
    const vertical = mergeSegments([...page.vertical, ...vBars].filter((s) => Number.isFinite(s.a + s.b + s.at + s.width))).filter((s) => s.b - s.a >= 3);
    // Rules are also counted as drawn, before dashes are joined, as the rule detector counts them.
    this.overloaded =
      words.length > MAX_WORDS ||
      horizontal.length > MAX_RULES ||
      vertical.length > MAX_RULES ||
      page.shapes.length > MAX_SHAPES ||
      strokesOver(page.horizontal, MAX_RULES) ||
      strokesOver(page.vertical, MAX_RULES);
    this.words = this.overloaded ? [] : words;
    this.horizontal = this.overloaded ? [] : horizontal;
    this.vertical = this.overloaded ? [] : vertical;
    this.wordKind = Uint8Array.from(this.words, (w) => wordKindOf(w.str));
    // (Not a leader, an underscore run or a box glyph: `isText` and not `isUnderscore`.)
    this.text = this.words.filter((_, i) => this.wordKind[i] === WORD_TEXT);
    const sizes = this.text.map((w) => w.size).sort((a, b) => a - b);
    this.lineHeight = sizes.length ? Math.min(14, Math.max(7, sizes[Math.floor(sizes.length / 2)]!)) : 10;
    const cell = 24;
    this.hGrid = new Grid(this.horizontal.map(hBox), cell, page.width, page.height);
    this.vGrid = new Grid(this.vertical.map(vBox), cell, page.width, page.height);
    this.wordGrid = new Grid(this.words, cell, page.width, page.height);
    this.lines = textLines(this.text);
    this.textRight = this.text.reduce((m, w) => Math.max(m, w.x + w.w), 0);
    this.phrases = this.lines.flatMap(phrasesOf);
    this.phraseGrid = new Grid(this.phrases, cell, page.width, page.height);
  }

  /** Text words overlapping a box by at least `share` of their own area. */
  wordsIn(b: Box, share = 0.3): Word[] {
    const found: Word[] = [];
    const { hits, hitIndexes } = this.wordGrid;
    for (let i = 0, n = this.wordGrid.scan(b.x, b.y, b.x + b.w, b.y + b.h); i < n; i++) {
      const w = hits[i]!;
      if (this.wordKind[hitIndexes[i]!] === WORD_TEXT && overlap(w.x, w.x + w.w, b.x, b.x + b.w) * overlap(w.y, w.y + w.h, b.y, b.y + b.h) >= share * w.w * w.h) found.push(w);
    }
    return found;
  }

  /** The nearest horizontal rule strictly above `y` (within `rise`) spanning most of x1..x2. */
  ceiling(x1: number, x2: number, y: number, rise: number, share = 0.6): Segment | null {
    let best: Segment | null = null;
    const hits = this.hGrid.hits;
    for (let i = 0, n = this.hGrid.scan(x1, y - rise, x2, y - 2); i < n; i++) {
      const s = hits[i]!.seg;
      if (s.at >= y - 2 || s.at < y - rise) continue;
      if (overlap(s.a, s.b, x1, x2) < share * (x2 - x1)) continue;
      if (!best || s.at > best.at) best = s;
    }
    return best;
  }

  /** The nearest horizontal rule below `y` (within `drop`) under most of x1..x2. */
  floor(x1: number, x2: number, y: number, drop: number, share = 0.6): Segment | null {
    let best: Segment | null = null;
    const hits = this.hGrid.hits;
    for (let i = 0, n = this.hGrid.scan(x1, y, x2, y + drop); i < n; i++) {
      const s = hits[i]!.seg;
      if (s.at < y || s.at > y + drop) continue;
      if (overlap(s.a, s.b, x1, x2) < share * (x2 - x1)) continue;
      if (!best || s.at < best.at) best = s;
    }
    return best;
  }

  /** The x of the nearest vertical rule crossing y1..y2 (most of it) right of x, within `reach`; null when none. */
  wallRight(x: number, y1: number, y2: number, reach: number): number | null {
    let best: number | null = null;
    const hits = this.vGrid.hits;
    for (let i = 0, n = this.vGrid.scan(x, y1, x + reach, y2); i < n; i++) {
      const s = hits[i]!.seg;
      if (s.at <= x + 0.5 || overlap(s.a, s.b, y1, y2) < 0.5 * (y2 - y1)) continue;
      if (best === null || s.at < best) best = s.at;
    }
    return best;
  }

  /** The x of the nearest vertical rule crossing y1..y2 left of x, within `reach`. */
  wallLeft(x: number, y1: number, y2: number, reach: number): number | null {
    let best: number | null = null;
    const hits = this.vGrid.hits;
    for (let i = 0, n = this.vGrid.scan(x - reach, y1, x, y2); i < n; i++) {
      const s = hits[i]!.seg;
      if (s.at >= x - 0.5 || overlap(s.a, s.b, y1, y2) < 0.5 * (y2 - y1)) continue;
      if (best === null || s.at > best) best = s.at;
    }
    return best;
  }
}

function textLines(words: readonly Word[]): TextLine[] {
  const sorted = [...words].sort((p, q) => p.y + p.h / 2 - (q.y + q.h / 2));
  const lines: TextLine[] = [];
  let current: Word[] = [];
  let mid = 0;
  const flush = () => {
    if (!current.length) return;
    current.sort((p, q) => p.x - q.x);
    const y = Math.min(...current.map((w) => w.y));
    const h = Math.max(...current.map((w) => w.y + w.h)) - y;
    const sizes = current.map((w) => w.size).sort((a, b) => a - b);
    lines.push({ words: current, y, h, size: sizes[Math.floor(sizes.length / 2)]! });
    current = [];
  };
  for (const w of sorted) {
    const m = w.y + w.h / 2;
    if (current.length && Math.abs(m - mid) > Math.min(w.h, current[0]!.h) * 0.45) flush();
    if (!current.length) mid = m;
    current.push(w);
  }
  flush();
  return lines;
}

/** Words of a line a little more than a space apart or closer are one phrase. */
function phrasesOf(line: TextLine): Phrase[] {
  const out: Phrase[] = [];
  let cur: Word[] = [];
  const flush = () => {
    if (!cur.length) return;
    const x = cur[0]!.x;
    const y = Math.min(...cur.map((w) => w.y));
    const x2 = Math.max(...cur.map((w) => w.x + w.w));
    const y2 = Math.max(...cur.map((w) => w.y + w.h));
    out.push({ x, y, w: x2 - x, h: y2 - y, words: cur, str: cur.map((w) => w.str).join(' '), size: line.size, line });
    cur = [];
  };
  for (const w of line.words) {
    const prev = cur[cur.length - 1];
    if (prev && w.x - (prev.x + prev.w) > Math.max(prev.size, w.size) * 0.9) flush();
    cur.push(w);
  }
  flush();
  return out;
}

const classOf = (c: Candidate): ProposalClass => (c.type === 'checkbox' ? 'checkbox' : c.type === 'digital_signature' || c.type === 'initials' ? 'signature' : 'text');

const SIGNATURE = /signature|\bsign here\b|unterschrift|\bfirma\b|подпись|assinatura|\bpodpis|handtekening/iu;
const textClass = rememberedByText((label): ProposalClass => (SIGNATURE.test(label) ? 'signature' : 'text'));

/** Option words a box to tick stands beside. */
export const OPTION_WORD = /^(yes|no|oui|non|ja|nein|s[ií]|n[ãa]o|да|нет|tak|nie|kyllä|ei|n\/a|other|autre|andere|otro|male|female|m|f|homme|femme|männlich|weiblich)[.:]?$/i;

/** Every proposal of a page, in points of the displayed page. */
export function proposeCandidates(page: PageGraphics): Proposal[] {
  const model = new PageModel(page);
  return proposeWith(model);
}

/** The proposals of a page already read into a PageModel (features.ts reuses the model). */
export function proposeWith(model: PageModel): Proposal[] {
  const page = model.page;
  const out: Proposal[] = [];
  const add = (x: number, y: number, w: number, h: number, kind: ProposalKind, cls: ProposalClass, label = '') => {
    if (out.length >= MAX_RAW) throw FULL;
    if (!(w >= MIN_W || (cls === 'checkbox' && w >= 3)) || !(h >= MIN_H || (cls === 'checkbox' && h >= 3))) return;
    if (!Number.isFinite(x + y + w + h)) return;
    if (x < -1 || y < -1 || x + w > page.width + 1 || y + h > page.height + 1) return;
    out.push({ x, y, w, h, kind, cls, label });
  };
  try {
    // The rule detector's candidates (bounded on its own).
    for (const c of pageCandidates(page)) add(c.x, c.y, c.w, c.h, c.kind, classOf(c), c.label);
    if (!model.overloaded) {
      proposeCells(model, add);
      proposeLines(model, add);
      proposeDashGroups(model, add);
      proposeTemplates(model, add);
      proposeTypedRuns(model, add);
      proposeBrackets(model, add);
      proposeCaptionedLines(model, add);
      proposeLabelRuns(model, add);
      proposeUnderCaptions(model, add);
      proposeBoxes(model, add);
    }
  } catch (error) {
    // MAX_RAW proposals made: the page is done.
    if (error !== FULL) throw error;
  }
  const kept = dedupe(out, page.width).slice(0, MAX_PROPOSALS);
  for (const p of kept) if (!p.label) p.label = labelOf(model, p);
  return kept;
}

/** Thrown by `add` past MAX_RAW proposals, to stop proposing on a page. */
const FULL = new Error('too many proposals');

type Add = (x: number, y: number, w: number, h: number, kind: ProposalKind, cls: ProposalClass, label?: string) => void;

/**
 * Cells: each horizontal rule cut where vertical rules cross it, up to the rule above: the whole
 * cell, bands over its bottom rule, the space under its label and right of each label in it.
 */
function proposeCells(model: PageModel, add: Add): void {
  let pieces = 0;
  for (const rule of model.horizontal) {
    // Each piece is looked up against the page's rules and words: a bounded number of them.
    if (pieces > MAX_PIECES) return;
    if (rule.b - rule.a < MIN_W) continue;
    const cuts = model.vGrid
      .query(rule.a + 1.5, rule.at - 3, rule.b - 1.5, rule.at)
      .map((r) => r.seg)
      .filter((v) => v.at > rule.a + 1.5 && v.at < rule.b - 1.5 && v.a < rule.at - 3 && v.b > rule.at - 1.5)
      .map((v) => v.at)
      .sort((p, q) => p - q);
    const xs = [rule.a, ...cuts, rule.b];
    pieces += xs.length;
    // Runs of four or more narrow pieces are combs: one cell over each run and each character
    // cell on its own, no cell proposals of other kinds for its pieces.
    const narrow = (k: number) => k >= 1 && k < xs.length && xs[k]! - xs[k - 1]! < 20;
    const inComb = new Set<number>();
    for (let k = 1; k < xs.length; ) {
      let j = k;
      while (narrow(j)) j++;
      if (j - k >= 4) {
        cellAbove(model, rule, xs[k - 1]!, xs[j - 1]!, false, add);
        // Each character cell as well: some forms have a field per character.
        for (let q = k; q < j; q++) {
          inComb.add(q);
          const top = model.ceiling(xs[q - 1]!, xs[q]!, rule.at, 40);
          if (top) add(xs[q - 1]!, top.at, xs[q]! - xs[q - 1]!, rule.at - top.at, 'comb', 'text');
        }
      }
      k = Math.max(j, k + 1);
    }
    for (let k = 1; k < xs.length; k++) {
      if (inComb.has(k)) continue;
      cellAbove(model, rule, xs[k - 1]!, xs[k]!, true, add);
      // Two and three pieces as one (a sub-column's tick, a divider that is not a field's edge).
      for (const span of [2, 3]) if (k + span - 1 < xs.length && !inComb.has(k + span - 1)) cellAbove(model, rule, xs[k - 1]!, xs[k + span - 1]!, false, add);
    }
  }
}

/**
 * The proposals of the cell over x1..x2 of `rule`, up to the rule above: the whole cell, bands
 * over its bottom rule, a box to tick in it when small and empty; for a single piece (`whole`),
 * also the space under its label and right of each label in it.
 */
function cellAbove(model: PageModel, rule: Segment, x1: number, x2: number, whole: boolean, add: Add): void {
  const lh = model.lineHeight;
  if (x2 - x1 < 4) return;
  const bottom = rule.at - rule.width / 2;
  const top = model.ceiling(x1, x2, rule.at, MAX_CELL_H);
  if (!top) return;
  const y1 = top.at + top.width / 2;
  const height = bottom - y1;
  if (height < 3) return;
  const cell = { x: x1, y: y1, w: x2 - x1, h: height };
  const inside = model.wordsIn(cell, 0.5);
  const label = inside.length ? [...inside].sort((p, q) => p.y - q.y || p.x - q.x)[0]!.str : '';
  const cls = textClass(label);
  if (whole && !inside.length && cell.w <= 90 && height <= 40) {
    // A box to tick in a small empty cell: the cell itself, or a box centred in it.
    if (cell.w <= 22 && height <= 22) add(x1, y1, cell.w, height, 'square', 'checkbox');
    for (const side of [lh, Math.min(cell.w, height) * 0.6]) {
      if (side < Math.min(cell.w, height) * 0.9) add(x1 + (cell.w - side) / 2, y1 + (height - side) / 2, side, side, 'square', 'checkbox');
    }
  }
  add(x1, y1, cell.w, height, 'cell-full', cls, label);
  for (const band of [lh * 1.3, lh * 1.9]) if (height > band * 1.25) add(x1, bottom - band, cell.w, band, 'cell-bottom', cls, label);
  if (!whole || !inside.length) return;
  // Under the text at the top of the cell.
  const textBottom = Math.max(...inside.map((w) => w.y + w.h));
  if (bottom - textBottom >= MIN_H) add(x1, textBottom + 0.5, cell.w, bottom - textBottom - 0.5, 'cell-top', cls, label);
  // Right of each phrase inside the cell, on its line.
  for (const ph of model.phraseGrid.query(x1, y1, x2, bottom)) {
    if (ph.x < x1 - 1 || ph.x + ph.w > x2 + 1 || ph.y < y1 - 2 || ph.y + ph.h > bottom + 2) continue;
    const start = ph.x + ph.w + 1;
    const end = Math.min(x2, nextOnLine(model, ph, x2));
    if (end - start < 12) continue;
    const pcls = textClass(ph.str);
    // The line's band, and from it down to the cell's bottom.
    add(start, ph.y - ph.size * 0.2, end - start, ph.size * 1.4, 'cell-right-of-label', pcls, ph.str);
    if (bottom - ph.y > ph.size * 1.8) add(start, ph.y - 1, end - start, bottom - ph.y + 1, 'cell-right-of-label', pcls, ph.str);
  }
}

/** The x where the next text of the phrase's line starts (or `limit`). */
function nextOnLine(model: PageModel, ph: Phrase, limit: number): number {
  let next = limit;
  const { hits, hitIndexes } = model.wordGrid;
  for (let i = 0, n = model.wordGrid.scan(ph.x + ph.w + 0.5, ph.y + ph.h * 0.2, limit, ph.y + ph.h * 0.8); i < n; i++) {
    const w = hits[i]!;
    if (w.x > ph.x + ph.w + 0.5 && w.x < next && (model.wordKind[hitIndexes[i]!] === WORD_TEXT || /[()[\]]/.test(w.str))) next = w.x;
  }
  return next;
}

/**
 * Fill-in lines: bands of a few heights over every horizontal rule, and stacks of evenly spaced
 * lines of one length as one area.
 */
function proposeLines(model: PageModel, add: Add): void {
  const lh = model.lineHeight;
  const groups = new Map<string, Segment[]>();
  for (const rule of model.horizontal) {
    const len = rule.b - rule.a;
    if (len < 15) continue;
    const bottom = rule.at - rule.width / 2;
    if (len <= model.page.width * 0.9) for (const h of [lh * 1.2, lh * 1.6, lh * 2.2]) add(rule.a, bottom - h, len, h, 'line', 'text');
    if (len >= 40) {
      const key = `${Math.round(rule.a / 3)}:${Math.round(rule.b / 3)}`;
      const list = groups.get(key);
      if (list) list.push(rule);
      else groups.set(key, [rule]);
    }
  }
  for (const rules of groups.values()) {
    if (rules.length < 2) continue;
    rules.sort((p, q) => p.at - q.at);
    for (let i = 0; i < rules.length - 1; ) {
      const pitch = rules[i + 1]!.at - rules[i]!.at;
      let j = i + 1;
      if (pitch >= lh * 0.9 && pitch <= lh * 3.5) while (j + 1 < rules.length && Math.abs(rules[j + 1]!.at - rules[j]!.at - pitch) <= pitch * 0.2) j++;
      else {
        i++;
        continue;
      }
      const first = rules[i]!;
      const last = rules[j]!;
      const x = first.a;
      const w = first.b - first.a;
      add(x, first.at - pitch, w, last.at - first.at + pitch, 'line-stack', 'text');
      if (j - i >= 2) add(x, first.at, w, last.at - first.at, 'line-stack', 'text');
      i = j;
    }
  }
}

/**
 * A field printed in groups between short dashes (`[___] - [__] - [____]`, drawn or typed): each
 * group from the obstacle before it (the previous dash, text, a vertical rule) to the dash, and
 * after the last dash to the next obstacle, centred on the dashes' line.
 */
function proposeDashGroups(model: PageModel, add: Add): void {
  const lh = model.lineHeight;
  const dashes: Box[] = [];
  for (const s of model.horizontal) if (s.b - s.a >= 2.5 && s.b - s.a <= 15) dashes.push({ x: s.a, y: s.at, w: s.b - s.a, h: 0 });
  for (const w of model.words) if (/^[-–—]$/.test(w.str)) dashes.push({ x: w.x, y: w.y + w.h * 0.45, w: w.w, h: 0 });
  if (dashes.length > 400) return;
  const reach = 150;
  for (const d of dashes) {
    const y = d.y;
    // The nearest obstacle on either side, on the dash's line.
    let left = d.x - reach;
    let right = d.x + d.w + reach;
    for (const e of dashes) {
      if (e === d || Math.abs(e.y - y) > 1.5) continue;
      if (e.x + e.w <= d.x) left = Math.max(left, e.x + e.w);
      else if (e.x >= d.x + d.w) right = Math.min(right, e.x);
    }
    for (const w of model.wordGrid.query(d.x - reach, y - lh * 0.4, d.x + d.w + reach, y + lh * 0.4)) {
      if (/^[-–—]$/.test(w.str)) continue;
      if (w.x + w.w <= d.x) left = Math.max(left, w.x + w.w);
      else if (w.x >= d.x + d.w) right = Math.min(right, w.x);
    }
    const wl = model.wallLeft(d.x, y - lh * 0.6, y + lh * 0.6, d.x - left);
    if (wl !== null) left = Math.max(left, wl);
    const wr = model.wallRight(d.x + d.w, y - lh * 0.6, y + lh * 0.6, right - d.x - d.w);
    if (wr !== null) right = Math.min(right, wr);
    for (const h of [lh * 1.7, lh * 2.2]) {
      if (d.x - 3 - (left + 3) >= 8) add(left + 3, y - h / 2, d.x - 3 - (left + 3), h, 'dash-group', 'text');
      if (right - 3 - (d.x + d.w + 3) >= 8) add(d.x + d.w + 3, y - h / 2, right - 3 - (d.x + d.w + 3), h, 'dash-group', 'text');
    }
  }
}

/**
 * Typed fill-in runs: dot leaders and ellipses (`Name ………………`, `Date:..........`), and underscore
 * runs, alone or inside a word: a field over each run of four characters or more, placed by the
 * characters' share of the word's width.
 */
function proposeTypedRuns(model: PageModel, add: Add): void {
  for (const w of model.words) {
    if (w.str.length < 4 || w.w < 12) continue;
    const n = w.str.length;
    for (const m of w.str.matchAll(/(?:[._…·] ?){4,}|_{3,}/g)) {
      const x1 = w.x + (w.w * m.index) / n;
      const x2 = w.x + (w.w * (m.index + m[0].length)) / n;
      if (x2 - x1 < 12) continue;
      const s = w.size;
      const bottom = w.y + w.h + s * 0.1;
      for (const h of [1.3, 2.0]) add(x1, bottom - h * s, x2 - x1, h * s, 'underscore', 'text');
    }
  }
}

/**
 * Boxes typed as brackets (`[ ] Yes`, `( ) No`): from an opening bracket to the closing one
 * after it on its line, inside one word or across two.
 */
function proposeBrackets(model: PageModel, add: Add): void {
  for (const w of model.words) {
    const s = w.size;
    const cy = w.y + w.h * 0.46;
    const box = (x1: number, x2: number) => {
      if (x2 - x1 < 3 || x2 - x1 > s * 3) return;
      for (const h of [0.8, 1.1]) add(x1, cy - (h * s) / 2, x2 - x1, h * s, 'option-box', 'checkbox');
    };
    const n = w.str.length;
    for (const m of w.str.matchAll(/[[(]\s*[\])]/g)) box(w.x + (w.w * m.index) / n, w.x + (w.w * (m.index + m[0].length)) / n);
    if (!/[[(]\s*$/.test(w.str)) continue;
    // The closing bracket starts a later word of the line.
    const open = w.x + (w.w * (w.str.trimEnd().length - 1)) / n;
    let close: Word | null = null;
    for (const o of model.wordGrid.query(w.x + w.w, w.y + w.h * 0.3, w.x + w.w + s * 3, w.y + w.h * 0.7)) {
      if (o.x >= w.x + w.w - 0.5 && /^\s*[\])]/.test(o.str) && (!close || o.x < close.x)) close = o;
    }
    if (close) box(open, close.x + (close.w * (close.str.length - close.str.trimStart().length + 1)) / close.str.length);
  }
}

/**
 * A fill-in line (a rule or an underscore run) with captions printed under it (`(Street)
 * (City) (State)`): a field over each caption's part of the line, cut half way between
 * captions.
 */
function proposeCaptionedLines(model: PageModel, add: Add): void {
  const lh = model.lineHeight;
  const lines: Array<{ a: number; b: number; at: number; kind: ProposalKind }> = [];
  for (const r of model.horizontal) if (r.b - r.a >= 60) lines.push({ a: r.a, b: r.b, at: r.at, kind: 'line' });
  for (const w of model.words) if (isUnderscore(w.str) && w.w >= 60) lines.push({ a: w.x, b: w.x + w.w, at: w.y + w.h * 0.85, kind: 'underscore' });
  for (const line of lines) {
    const captions = model.phraseGrid
      .query(line.a, line.at, line.b, line.at + lh * 1.6)
      .filter((ph) => ph.y >= line.at - 1 && ph.x >= line.a - 5 && ph.x + ph.w <= line.b + 5)
      .sort((p, q) => p.x - q.x);
    // The captions' own line: those as high as the first.
    const row = captions.filter((ph) => Math.abs(ph.y - captions[0]!.y) < lh * 0.5);
    if (row.length < 2 || row.length > 8) continue;
    const mids = row.map((ph) => ph.x + ph.w / 2);
    const cuts = [line.a, ...mids.slice(1).map((m, i) => (m + mids[i]!) / 2), line.b];
    for (let i = 1; i < cuts.length; i++) {
      for (const h of [1.3, 1.8]) add(cuts[i - 1]!, line.at - h * lh, cuts[i]! - cuts[i - 1]!, h * lh, line.kind, 'text', row[i - 1]!.str);
    }
  }
}

/** A typed template of dots or underscores between slashes (`…/…/…`, `__/__/____`): each part, and the whole. */
const TEMPLATE = /^([:\s]*)([._…·]+(?:\s*\/\s*[._…·]+)+)\s*$/;

function proposeTemplates(model: PageModel, add: Add): void {
  for (const w of model.words) {
    const m = TEMPLATE.exec(w.str);
    if (!m) continue;
    const n = w.str.length;
    const at = (i: number) => w.x + (w.w * i) / n;
    const s = w.size;
    const y = w.y + w.h + s * 0.2 - s * 1.6;
    let i = m[1]!.length;
    add(at(i), y, w.x + w.w - at(i), s * 1.6, 'template-part', 'text');
    for (const part of m[2]!.split('/')) {
      const lead = part.length - part.trimStart().length;
      const body = part.trim().length;
      if (body) add(at(i + lead), y, at(i + lead + body) - at(i + lead), s * 1.6, 'template-part', 'text');
      i += part.length + 1;
    }
  }
}

/**
 * The empty run right of each phrase on its line, up to the next text, a vertical rule, or the
 * page's margin: `Name: ............` with or without anything printed to write on.
 */
function proposeLabelRuns(model: PageModel, add: Add): void {
  const W = model.page.width;
  // Marks that start a field as a label does (`• ____`, `$ ____`, `( ) ____`), as phrases of their own.
  const marks: Phrase[] = [];
  for (const w of model.words) {
    if (isText(w.str) || isFill(w.str) || isCheckGlyph(w.str) || w.str.length > 3) continue;
    marks.push({ x: w.x, y: w.y, w: w.w, h: w.h, words: [w], str: '', size: w.size, line: { words: [w], y: w.y, h: w.h, size: w.size } });
  }
  for (const ph of [...model.phrases, ...marks]) {
    if (ph.str && !/\p{L}/u.test(ph.str)) continue;
    const start = ph.x + ph.w + 1;
    const limit = Math.min(W - 10, start + W * 0.8);
    const wall = model.wallRight(start, ph.y, ph.y + ph.h, limit - start);
    const end = Math.min(nextOnLine(model, ph, limit), wall ?? limit);
    if (end - start < 15) continue;
    const cls = textClass(ph.str);
    const s = ph.size;
    const floor = model.floor(start, end, ph.y + ph.h * 0.5, s * 1.2, 0.5);
    const base = floor ? floor.at - floor.width / 2 : ph.y + ph.h + s * 0.25;
    // After a sentence, one run only.
    if (isSentence(ph)) {
      add(start, base - s * 1.5, end - start, s * 1.5, 'label-run', cls, ph.str);
      continue;
    }
    for (const x2 of runEnds(model, ph, start, end)) {
      add(start, base - s * 1.3, x2 - start, s * 1.3, 'label-run', cls, ph.str);
      add(start, base - s * 1.8, x2 - start, s * 1.8, 'label-run', cls, ph.str);
    }
    // Nothing ends a long run: fields of a common width after a label (nothing printed shows theirs).
    if (end - start > s * 20) for (const width of [8, 16]) add(start, base - s * 1.5, width * s, s * 1.5, 'label-run', cls, ph.str);
  }
}

/**
 * Where a run right of a label may end, besides `end` (the next text or rule on its line): where
 * the rules just above or below it end, and where the text of the lines around it ends (the
 * right edge of its column, of the page's text). Ends closer than a tenth of the run are one.
 */
function runEnds(model: PageModel, ph: Phrase, start: number, end: number): number[] {
  const s = ph.size;
  const ends = [end];
  const consider = (x: number) => {
    if (x > start + 15 && x < end - 3) ends.push(x);
  };
  for (const r of model.hGrid.query(start, ph.y - s * 1.5, start, ph.y + ph.h + s * 1.5)) if (r.seg.a <= start + 2) consider(r.seg.b);
  // The right edge of the text column around it, and where a column of text on its right starts.
  let column = -Infinity;
  let nextColumn = Infinity;
  for (const w of model.wordGrid.query(start, ph.y - s * 5, end, ph.y + ph.h + s * 5)) {
    if (!isText(w.str)) continue;
    if (w.x < start) column = Math.max(column, w.x + w.w);
    else if (w.x > start + 15) nextColumn = Math.min(nextColumn, w.x - 2);
  }
  consider(column);
  consider(nextColumn);
  consider(model.textRight);
  ends.sort((a, b) => a - b);
  return ends.filter((x, i) => i === 0 || x - ends[i - 1]! > 0.1 * (x - start));
}

/**
 * The space under each caption: from under it to the next text or rule below, as wide as the
 * caption's column (up to the next caption on its line, or a vertical rule).
 */
function proposeUnderCaptions(model: PageModel, add: Add): void {
  const W = model.page.width;
  const lh = model.lineHeight;
  for (const ph of model.phrases) {
    if (!/\p{L}/u.test(ph.str)) continue;
    const top = ph.y + ph.h + 0.5;
    const nextX = nextOnLine(model, ph, Math.min(W - 10, ph.x + ph.w + W * 0.5));
    const wall = model.wallRight(ph.x + ph.w, top, top + lh * 2, nextX - ph.x - ph.w);
    const x1 = ph.x - 1;
    const x2 = Math.min(nextX - 2, wall ?? Infinity);
    if (x2 - x1 < 15) continue;
    // Down to the next text under the column or a rule.
    let limit = top + lh * 4;
    for (const w of model.wordGrid.query(x1, top + 0.5, x2, limit)) if (w.y > top && isText(w.str)) limit = Math.min(limit, w.y - 0.5);
    const floor = model.floor(x1, x2, top, limit - top, 0.5);
    if (floor) limit = Math.min(limit, floor.at - floor.width / 2);
    const room = limit - top;
    const cls = textClass(ph.str);
    if (room >= MIN_H) {
      for (const h of [lh * 1.3, lh * 1.9]) if (room >= h * 0.8) add(x1, top, x2 - x1, Math.min(h, room), 'under-caption', cls, ph.str);
      if (floor) {
        // Down to the rule under it, and a line's height over that rule.
        add(x1, top, x2 - x1, room, 'under-caption', cls, ph.str);
        if (room > lh * 1.6) add(x1, limit - lh * 1.4, x2 - x1, lh * 1.4, 'under-caption', cls, ph.str);
      }
      // A box to tick centred under a short caption (`Retirement plan` over its box).
      if (ph.words.length <= 4 && ph.str.length <= 30) {
        const side = ph.size * 1.1;
        const mid = top + Math.min(room, ph.size * 2.2) / 2;
        if (room >= side) add(ph.x + ph.w / 2 - side / 2, mid - side / 2, side, side, 'option-box', 'checkbox', ph.str);
      }
      // The caption's own width only (a column narrower than the gap to the next caption).
      if (x2 - x1 > ph.w * 1.8 && ph.w >= 15) add(x1, top, ph.w + 2, Math.min(lh * 1.5, room), 'under-caption', cls, ph.str);
    }
    columnRows(model, ph, x1, x2, top, cls, add);
  }
}

/** At most this many rows of a table are proposed under a caption. */
const MAX_ROWS = 40;

/**
 * The rows of a table under a column caption, where only horizontal rules divide it (no
 * vertical rules, or none between the columns): between each two rules under the caption's
 * column, down to the first row with printed text in the column.
 */
function columnRows(model: PageModel, ph: Phrase, x1: number, x2: number, top: number, cls: ProposalClass, add: Add): void {
  const lh = model.lineHeight;
  const width = x2 - x1;
  let y = top;
  let last: Segment | null = null;
  for (let row = 0; row < MAX_ROWS; row++) {
    const rule = model.floor(x1, x2, y + 1, lh * 3.5, 0.8);
    if (!rule) return;
    const bottom = rule.at - rule.width / 2;
    if (last) {
      const up = last.at + last.width / 2;
      const h = bottom - up;
      if (h < MIN_H) {
        y = rule.at;
        continue;
      }
      if (model.wordsIn({ x: x1, y: up, w: width, h }, 0.5).length) return;
      // The column of the row (to where the rules end, when the caption's line runs on).
      const right = Math.min(x2, rule.b, last.b);
      add(x1, up, right - x1, h, 'under-caption', cls, ph.str);
      if (h > lh * 1.8) add(x1, bottom - lh * 1.4, right - x1, lh * 1.4, 'under-caption', cls, ph.str);
    }
    last = rule;
    y = rule.at;
  }
}

/**
 * Boxes: drawn squares and rectangles as they are, and a box to tick beside every option word
 * and before every phrase that starts after a gap (a list of options), drawn or not.
 */
function proposeBoxes(model: PageModel, add: Add): void {
  const shapes = model.page.shapes.filter((s) => Number.isFinite(s.x + s.y + s.w + s.h));
  const combed = combRows(shapes, add);
  for (const s of shapes) {
    if (combed.has(s)) continue;
    if (s.w <= 24 && s.h <= 24 && s.w >= 3 && s.h >= 3) {
      add(s.x, s.y, s.w, s.h, 'square', 'checkbox');
      // The widget is often drawn a little larger (or smaller) than the printed box.
      for (const f of [1.4, 2, 0.7]) add(s.x + (s.w * (1 - f)) / 2, s.y + (s.h * (1 - f)) / 2, s.w * f, s.h * f, 'square', 'checkbox');
    } else if (s.h <= MAX_CELL_H && s.w >= 10 && s.h >= 5 && !(s.filled && !s.stroked && s.fillLevel < 0.5)) add(s.x, s.y, s.w, s.h, 'shape-box', 'text');
  }
  // A single character in a symbol font that did not read as a box glyph (`c`, `o`, `q`).
  for (const w of model.words) {
    if ([...w.str].length !== 1 || /[\d.,:;!?()[\]'"/\\+*=%$€£&#@-]/.test(w.str)) continue;
    // Letter-spaced text (`S e c t i o n`) is not a row of boxes.
    const spaced = model.wordGrid
      .query(w.x - w.size, w.y + w.h * 0.3, w.x + w.w + w.size, w.y + w.h * 0.7)
      .some((o) => o !== w && [...o.str].length === 1 && !isCheckGlyph(o.str) && o.str !== w.str);
    if (spaced) continue;
    const cx = w.x + w.w / 2;
    const cy = w.y + w.h * 0.55;
    for (const side of [w.size * 0.7, w.size, w.size * 1.35, w.size * 1.8]) add(cx - side / 2, cy - side / 2, side, side, 'glyph', 'checkbox');
  }
  for (const ph of model.phrases) {
    const first = ph.words[0]!;
    const s = Math.max(4, Math.min(16, ph.size));
    // Boxes beside text sit on the middle of its line (measured on the data: 0.46 of the height).
    const cy = first.y + first.h * 0.46;
    // Room on the left of the phrase, up to the previous text on its line.
    let prevEnd = -Infinity;
    for (const w of model.wordGrid.query(ph.x - s * 4, first.y + first.h * 0.3, ph.x - 0.5, first.y + first.h * 0.7)) if (w.x + w.w < ph.x - 0.5 && !isCheckGlyph(w.str)) prevEnd = Math.max(prevEnd, w.x + w.w);
    const room = ph.x - prevEnd;
    // A sentence gets the commonest size only.
    const sizes = isSentence(ph) ? LEFT_BOXES.slice(0, 1) : LEFT_BOXES;
    for (const [side, gap] of sizes) {
      if (room >= (side + gap + 0.15) * s) add(ph.x - (gap + side) * s, cy - (side * s) / 2, side * s, side * s, 'option-box', 'checkbox', ph.str);
    }
    // A box after a short option phrase (`Yes ☐  No ☐`).
    if (ph.str.length <= 12 || OPTION_WORD.test(ph.words[ph.words.length - 1]!.str)) {
      const last = ph.words[ph.words.length - 1]!;
      const next = nextOnLine(model, ph, ph.x + ph.w + s * 4);
      const ly = last.y + last.h * 0.46;
      for (const [side, gap] of [
        [1.05, 0.45],
        [0.9, 0.2],
      ] as const) {
        if (next - (ph.x + ph.w) >= (side + gap + 0.15) * s) add(ph.x + ph.w + gap * s, ly - (side * s) / 2, side * s, side * s, 'option-box', 'checkbox', ph.str);
      }
    }
  }
}

/** Seven words or more, not ending with a colon: a sentence, seldom a field's label. */
const isSentence = (ph: Phrase) => !/[:：]\s*$/.test(ph.str) && ph.str.split(/\s+/).length >= 7;

/** Boxes left of text: side and gap in font sizes, from the spread of real boxes beside text. */
const LEFT_BOXES = [
  [0.95, 0.4],
  [1.35, 0.4],
  [1.0, 0.15],
] as const;

/**
 * Rows of small boxes of one size side by side (a comb of character boxes): one text field over
 * each row of three or more, and over groups of two or more a little apart on one row (`[][]
 * [][] [][][][]`, a date); each box as a field too. Their boxes are not check boxes.
 * Returns the boxes in combs.
 */
function combRows(shapes: readonly Shape[], add: Add): Set<Shape> {
  const small = shapes.filter((s) => !s.round && s.w >= 3 && s.h >= 5 && s.w <= 24 && s.h <= 30).sort((p, q) => Math.round(p.y) - Math.round(q.y) || p.x - q.x);
  const chained = new Set<Shape>();
  const chains: Shape[][] = [];
  for (let i = 0; i < small.length; i++) {
    const head = small[i]!;
    if (chained.has(head)) continue;
    const row = [head];
    // Followers: the same size, the same top, touching or nearly (in a bounded window).
    for (let j = i + 1; j < small.length && j < i + 400; j++) {
      const s = small[j]!;
      const prev = row[row.length - 1]!;
      if (Math.abs(s.y - head.y) > 1.5) {
        if (s.y > head.y + 1.5) break;
        continue;
      }
      if (chained.has(s) || Math.abs(s.h - head.h) > 1.5 || Math.abs(s.w - head.w) > 1.5) continue;
      const gap = s.x - (prev.x + prev.w);
      if (gap < -1.5) continue;
      if (gap > Math.max(3, head.w * 0.5)) break;
      row.push(s);
    }
    if (row.length < 2) continue;
    for (const s of row) chained.add(s);
    chains.push(row);
  }
  const combed = new Set<Shape>();
  const span = (boxes: readonly Shape[]) => add(boxes[0]!.x, boxes[0]!.y, boxes[boxes.length - 1]!.x + boxes[boxes.length - 1]!.w - boxes[0]!.x, boxes[0]!.h, 'comb', 'text');
  const accept = (chain: readonly Shape[]) => {
    for (const s of chain) {
      combed.add(s);
      // Each character box as well: some forms have a field per character.
      add(s.x, s.y, s.w, s.h, 'comb', 'text');
    }
  };
  chains.sort((p, q) => Math.round(p[0]!.y) - Math.round(q[0]!.y) || p[0]!.x - q[0]!.x);
  for (let i = 0; i < chains.length; ) {
    // Groups of one row and size, at most 1.6 boxes apart, are one field.
    let j = i + 1;
    while (j < chains.length) {
      const prev = chains[j - 1]!;
      const next = chains[j]!;
      const end = prev[prev.length - 1]!;
      const gap = next[0]!.x - (end.x + end.w);
      if (Math.abs(next[0]!.y - prev[0]!.y) > 1.5 || Math.abs(next[0]!.w - prev[0]!.w) > 1.5 || Math.abs(next[0]!.h - prev[0]!.h) > 1.5 || gap < 0 || gap > 1.6 * end.w) break;
      j++;
    }
    const group = chains.slice(i, j);
    if (group.length > 1) {
      span(group.flat());
      for (const chain of group) {
        accept(chain);
        span(chain);
      }
    } else if (group[0]!.length >= 3) {
      accept(group[0]!);
      span(group[0]!);
    }
    i = j;
  }
  return combed;
}

/**
 * Kinds in the order their proposals are kept when two are the same box, and when a page has
 * more than MAX_PROPOSALS: the most specific first (the rule detector's, drawn marks), the most
 * speculative (runs and boxes beside text) last.
 */
const ORDER: readonly ProposalKind[] = [
  'underscore',
  'comb',
  'glyph',
  'cell',
  'cell-top',
  'cell-left',
  'square',
  'template-part',
  'line',
  'cell-full',
  'cell-bottom',
  'under-caption',
  'cell-right-of-label',
  'shape-box',
  'dash-group',
  'line-stack',
  'option-box',
  'label-run',
];
const PRIORITY = new Map<ProposalKind, number>(PROPOSAL_KINDS.map((k) => [k, ORDER.includes(k) ? ORDER.indexOf(k) : ORDER.length]));

/** The most cell keys `dedupe` files its heads in an array for (1 MB of them). */
const MAX_DENSE_KEYS = 1 << 18;

/** Near-identical proposals (IoU > 0.9, same class): the first kept, by kind priority. */
function dedupe(proposals: Proposal[], width: number): Proposal[] {
  if (!proposals.length) return [];
  // By kind priority, and in the order they were made within a kind: a bucket per priority.
  const buckets: Proposal[][] = Array.from({ length: ORDER.length + 1 }, () => []);
  for (const p of proposals) buckets[PRIORITY.get(p.kind)!]!.push(p);
  const kept: Proposal[] = [];
  // The kept boxes filed by the cell of their top-left corner: the last filed in each cell
  // (`head`), each one's predecessor there (`next`), their numbers in typed arrays. Whether a box
  // clashes does not depend on the order in which the kept boxes are looked at.
  const cell = 16;
  const cols = Math.ceil(width / cell) + 4;
  // A cell's key is `row * cols + column`. On a page of ordinary size every key a box looks up
  // lies in one short range, and the heads are an array over it; otherwise (a hostile page whose
  // keys spread over more than MAX_DENSE_KEYS, or boxes with no number for a corner) a map. (A
  // box whose key is not a number clashes with nothing either way, and is looked up by no other.)
  let low = Infinity;
  let high = -Infinity;
  for (const p of proposals) {
    const key = Math.floor(p.y / cell) * cols + Math.floor(p.x / cell);
    if (key < low) low = key;
    if (key > high) high = key;
  }
  low -= cols + 1;
  high += cols + 1;
  const span = high - low;
  const dense = span >= 0 && span < MAX_DENSE_KEYS ? new Int32Array(span + 1).fill(-1) : null;
  const sparse = dense ? null : new Map<number, number>();
  const next = new Int32Array(proposals.length);
  const x = new Float64Array(proposals.length);
  const y = new Float64Array(proposals.length);
  const w = new Float64Array(proposals.length);
  const h = new Float64Array(proposals.length);
  const cls = new Uint8Array(proposals.length);
  for (const bucket of buckets) {
    for (const p of bucket) {
      const cx = Math.floor(p.x / cell);
      const cy = Math.floor(p.y / cell);
      const c = CLASS_ID[p.cls];
      let clash = false;
      // Near-identical boxes have their top-left corners within a cell of each other.
      for (let r = cy - 1; r <= cy + 1 && !clash; r++)
        for (let cc = cx - 1; cc <= cx + 1 && !clash; cc++) {
          const key = r * cols + cc;
          for (let k = dense ? dense[key - low]! : (sparse!.get(key) ?? -1); k >= 0 && !clash; k = next[k]!) {
            // IoU over 0.9 with a kept box of its class, as `iouBox` measures it.
            if (cls[k] !== c) continue;
            const inter = overlap(p.x, p.x + p.w, x[k]!, x[k]! + w[k]!) * overlap(p.y, p.y + p.h, y[k]!, y[k]! + h[k]!);
            if (inter > 0 && inter / (p.w * p.h + w[k]! * h[k]! - inter) > 0.9) clash = true;
          }
        }
      if (clash) continue;
      const k = kept.length;
      kept.push(p);
      x[k] = p.x;
      y[k] = p.y;
      w[k] = p.w;
      h[k] = p.h;
      cls[k] = c;
      const key = cy * cols + cx;
      if (dense) {
        next[k] = dense[key - low]!;
        dense[key - low] = k;
      } else {
        next[k] = sparse!.get(key) ?? -1;
        sparse!.set(key, k);
      }
    }
  }
  return kept;
}

/**
 * The label of a check box: the phrase on its line nearest to it on either side (`☐ Yes`, `Yes ☐`),
 * at most three of the phrase's font sizes away, the one on the right on a tie; null when none.
 * A phrase that holds the box itself (box glyphs and option words read as one phrase, `☐ Yes ☐ No`)
 * gives the words after the box up to the next box glyph. A check box answers with the option
 * word beside it, whichever of the proposals for its box (drawn square, box beside an option
 * word, cell) won the suppression.
 */
export function checkBoxLabelOf(model: PageModel, b: Box): string | null {
  const mid = b.y + b.h / 2;
  const right = b.x + b.w;
  let best: string | null = null;
  let bestGap = Infinity;
  for (const ph of model.phraseGrid.query(b.x - 100, mid - 2, right + 100, mid + 2)) {
    if (mid < ph.y - 2 || mid > ph.y + ph.h + 2) continue;
    let str = ph.str;
    let gap: number;
    if (ph.x - right >= -1) gap = ph.x - right - 0.01; // on the right: wins a tie
    else if (b.x - (ph.x + ph.w) >= -1) gap = b.x - (ph.x + ph.w);
    else {
      const after: Word[] = [];
      for (const w of ph.words) {
        if (w.x < right - 1) continue;
        if (isCheckGlyph(w.str)) break;
        after.push(w);
      }
      if (!after.length) continue;
      str = after.map((w) => w.str).join(' ');
      gap = after[0]!.x - right - 0.01;
    }
    if (gap <= ph.size * 3 && gap < bestGap) {
      best = str;
      bestGap = gap;
    }
  }
  return best;
}

/** The label of a proposal: the phrase nearest on its left on its line, else just above it. */
export function labelOf(model: PageModel, b: Box): string {
  const mid = b.y + b.h / 2;
  let left: Phrase | null = null;
  for (const ph of model.phraseGrid.query(b.x - 200, mid - 2, b.x + 2, mid + 2)) {
    if (ph.x + ph.w > b.x + 2 || mid < ph.y - 2 || mid > ph.y + ph.h + 2) continue;
    if (!left || ph.x + ph.w > left.x + left.w) left = ph;
  }
  if (left) return left.str;
  let above: Phrase | null = null;
  for (const ph of model.phraseGrid.query(b.x - 4, b.y - 20, b.x + b.w, b.y + 2)) {
    if (ph.y + ph.h > b.y + 2) continue;
    if (!above || ph.y > above.y) above = ph;
  }
  return above?.str ?? '';
}
