/**
 * The rule detector: field boxes of a printed page, found from its drawn rules and boxes and its
 * text (see layout-page.ts for how a page is read) by hand-written rules. It no longer decides
 * alone: its candidates are one source of the proposals (candidates.ts) that the learned layout
 * detector scores (features.ts, model.ts), which also uses `toField`, `typeFor` and
 * `lineHeightOf` from here.
 *
 * Kinds of field it finds:
 * - cells: the space above a horizontal rule, up to the rule above it (a table cell, a box) or,
 *   with nothing above, a line's height (a fill-in line); split where vertical rules cross
 *   (not where a sub-column divides one header's column), and under each caption of a row of
 *   captions, or after each label along a one-line cell; a printed label at the top of a cell,
 *   or a currency sign where the amount goes, is left out of its box;
 * - comb fields: a row of three or more narrow cells of one size (or two touching), in groups
 *   half a cell apart or closer, as one field; cells may be open at the top (ticks on a rule);
 * - underscore runs typed as text (`Name ________`);
 * - check boxes: small squares and circles (drawn), small square cells of a table, cells under
 *   a Yes/No column header, and check box glyphs (☐ □ ❑ …);
 * and none where the space is taken: cells holding printed text (a table of values), shaded
 * cells, rules under words (underlines), the page's frame, rules too short or too long to write on,
 * table headers (but a header row with a line's room under captions that all end on one line is
 * the table's first row, filled in where it is printed).
 */
import { defaultLabel, type FieldType } from '../domain/fields.js';
import { CHECK_GLYPHS, rememberedByText, rememberedTest, type Box, type PageGraphics, type Segment, type Shape, type Word } from './layout-page.js';
import { lowerBound, pageRect, upperBound } from './geometry.js';
import type { DetectedField } from './types.js';

/** A field found on a page, in page points, before it becomes a DetectedField. */
export interface Candidate extends Box {
  kind: 'cell' | 'cell-top' | 'cell-left' | 'line' | 'comb' | 'underscore' | 'square' | 'glyph';
  type: FieldType;
  label: string;
  /** 0..1: which of two candidates found twice is kept (`dedupe`). */
  score: number;
  /** For squares: a circle or an oval (a radio button). */
  round?: boolean;
  /** For combs: the width of one of its cells. */
  cell?: number;
  /** For cells: the whole cell, between its rules (the field may be part of it). */
  frame?: { x1: number; x2: number; top: number; bottom: number };
}

const MIN_WIDTH = 14;
const MIN_HEIGHT = 7;
/** A cell taller than this is a text area (long text) only when empty; else not a cell. */
const MAX_CELL_HEIGHT = 160;
const CHECK_MIN = 4.5;
const MAX_RULES = 4000;
const MAX_WORDS = 20_000;
const MAX_PIECES = 20_000;
const CHECK_MAX = 16;

/**
 * Whether more than `limit` rules are drawn, counted before dashes are joined (strokes that touch
 * still join): thousands of short strokes are a drawing, though hatching joins into a few long
 * rules once dashes are. Only a page of more than `limit` segments is counted.
 */
export function strokesOver(segments: readonly Segment[], limit: number): boolean {
  if (segments.length <= limit) return false;
  const finite = segments.filter((s) => Number.isFinite(s.a + s.b + s.at + s.width));
  return mergeSegments(finite, 1.2, false).filter((s) => s.b - s.a >= 3).length > limit;
}

/**
 * Collinear rules that touch or overlap become one (per row, sorted); so do the dashes of a dashed
 * rule (pieces up to 10 pt, up to 4 pt apart).
 */
export function mergeSegments(segments: readonly Segment[], gap = 1.2, dashes = true): Segment[] {
  const sorted = [...segments].sort((p, q) => p.at - q.at || p.a - q.a);
  const out: Segment[] = [];
  let rowStart = 0;
  for (let i = 0; i <= sorted.length; i++) {
    if (i < sorted.length && i > rowStart && Math.abs(sorted[i]!.at - sorted[rowStart]!.at) <= 0.8) continue;
    const row = sorted.slice(rowStart, i).sort((p, q) => p.a - q.a);
    let current: Segment | null = null;
    let last = 0;
    for (const s of row) {
      const dash = dashes && last <= 10 && s.b - s.a <= 10;
      if (current && s.a <= current.b + (dash ? 4 : gap)) {
        current.b = Math.max(current.b, s.b);
        current.width = Math.max(current.width, s.width);
        last = s.b - s.a;
      } else {
        if (current) out.push(current);
        current = { ...s };
        last = s.b - s.a;
      }
    }
    if (current) out.push(current);
    rowStart = i;
  }
  return out;
}

const overlap = (a1: number, a2: number, b1: number, b2: number) => Math.max(0, Math.min(a2, b2) - Math.max(a1, b1));

/**
 * Words (of positive size) sorted by their top edge, to find the words over a box by bisection
 * rather than by a look at every word of the page.
 */
class WordBand {
  private readonly order: Int32Array;
  private readonly tops: Float64Array;
  private readonly tallest: number;

  constructor(readonly words: readonly Word[]) {
    // By top edge, then by index (as a stable sort by top edge orders them).
    const ys = new Float64Array(words.length);
    let tallest = 0;
    for (let i = 0; i < words.length; i++) {
      ys[i] = words[i]!.y;
      tallest = Math.max(tallest, words[i]!.h);
    }
    this.order = Int32Array.from(words.keys()).sort((a, b) => ys[a]! - ys[b]! || a - b);
    this.tops = new Float64Array(words.length);
    for (let k = 0; k < words.length; k++) this.tops[k] = ys[this.order[k]!]!;
    this.tallest = tallest;
  }

  /** The words that overlap a box by at least `share` (more than 0) of their own area, in the order of `words`. */
  over(b: Box, share: number): Word[] {
    // Only words overlapping the box's rows can: those whose top is in the band (a point of slack
    // against rounding; each is tested exactly).
    const from = lowerBound(this.tops, b.y - this.tallest - 1);
    const to = upperBound(this.tops, b.y + b.h);
    const found: number[] = [];
    for (let k = from; k < to; k++) {
      const i = this.order[k]!;
      const w = this.words[i]!;
      if (overlap(w.x, w.x + w.w, b.x, b.x + b.w) * overlap(w.y, w.y + w.h, b.y, b.y + b.h) >= share * w.w * w.h) found.push(i);
    }
    return found.sort((a, c) => a - c).map((i) => this.words[i]!);
  }

  /**
   * The words that may reach into the rows `top` to `bottom` (every word whose box does, and some
   * just outside: a point of slack), in the order of `words`: a loop over them in place of one
   * over all the words, with the same tests, finds the same words in the same order. When that is
   * most of the words (a page with one very tall word widens every band), all of them, unsorted
   * and uncopied, as the loop over all the words had them.
   */
  near(top: number, bottom: number): readonly Word[] {
    const from = lowerBound(this.tops, top - this.tallest - 1);
    const to = upperBound(this.tops, bottom + 1);
    if (to - from > this.words.length / 2) return this.words;
    const found = this.order.slice(from, to).sort();
    const out: Word[] = [];
    for (let k = 0; k < found.length; k++) out.push(this.words[found[k]!]!);
    return out;
  }
}

/** Words (of a band) that overlap a box by at least `share` of their own area. */
function wordsOver(band: WordBand, b: Box, share: number): Word[] {
  return band.over(b, share);
}

/** Dot leaders, dashes, arrows, bullets, and separators printed in a comb or an amount (`,` `/`): no letter, digit or currency sign, not words. */
const isLeader = rememberedTest((s) => !/[\p{L}\p{N}$€£%]/u.test(s));
/** A line number printed in a cell or before a line: `7`, `11`, `15a`. */
const LINE_NUMBER = /^\d{1,2}[a-z]?$/;
const CHECK_GLYPH = new RegExp(`^[${CHECK_GLYPHS}]$`);
const isCheckGlyph = rememberedTest((s) => CHECK_GLYPH.test(s));

/** The page's usual text size (the median size of its words, 7 to 14 pt; 10 with no words): a line's height. */
export function lineHeightOf(page: Pick<PageGraphics, 'words'>): number {
  const sizes = page.words.filter((w) => w.w > 0 && w.h > 0 && Number.isFinite(w.x + w.y + w.w + w.h) && !isLeader(w.str)).map((w) => w.size).sort((a, b) => a - b);
  return sizes.length ? Math.min(14, Math.max(7, sizes[Math.floor(sizes.length / 2)]!)) : 10;
}

/** The detector's view of one page, with spatial lookups. */
class PageIndex {
  readonly horizontal: Segment[];
  readonly vertical: Segment[];
  readonly words: Word[];
  /** The words that are not leaders (dots, dashes, underscores …), in the same order. */
  readonly text: Word[];
  /** Of those, the ones that are not box glyphs either. */
  readonly labels: Word[];
  /** The same three, sorted by top edge for `wordsOver`. */
  readonly wordBand: WordBand;
  readonly textBand: WordBand;
  readonly labelBand: WordBand;
  readonly shaded: Shape[];
  readonly lineHeight: number;

  constructor(readonly page: PageGraphics) {
    const long = (s: Segment) => s.b - s.a >= 3;
    this.horizontal = mergeSegments(page.horizontal).filter(long);
    this.vertical = mergeSegments(page.vertical).filter(long);
    this.words = page.words.filter((w) => w.w > 0 && w.h > 0 && Number.isFinite(w.x + w.y + w.w + w.h));
    this.text = this.words.filter((w) => !isLeader(w.str));
    this.labels = this.text.filter((w) => !isCheckGlyph(w.str));
    this.wordBand = new WordBand(this.words);
    this.textBand = new WordBand(this.text);
    this.labelBand = new WordBand(this.labels);
    // Grey areas mark space that is not to be written on (or decoration); white and near-white do not.
    this.shaded = page.shapes.filter((s) => s.filled && !s.round && s.fillLevel < 0.93 && s.w > 6 && s.h > 4);
    this.lineHeight = lineHeightOf({ words: this.words });
  }

  /** The nearest horizontal rule above `y` (strictly) that spans most of x1..x2. */
  ceiling(x1: number, x2: number, y: number, maxRise: number): number | null {
    let best: number | null = null;
    for (const s of this.horizontal) {
      if (s.at >= y - 2 || s.at < y - maxRise) continue;
      if (overlap(s.a, s.b, x1, x2) < 0.6 * (x2 - x1)) continue;
      if (best === null || s.at > best) best = s.at;
    }
    return best;
  }

  shadedShare(b: Box): number {
    let covered = 0;
    for (const s of this.shaded) covered += overlap(s.x, s.x + s.w, b.x, b.x + b.w) * overlap(s.y, s.y + s.h, b.y, b.y + b.h);
    return covered / Math.max(1e-6, b.w * b.h);
  }
}

/** The label of a check box: the words on its right on the same line, else on its left. */
function checkLabel(index: PageIndex, b: Box): string {
  const mid = b.y + b.h / 2;
  const row = index.labels.filter((w) => Math.abs(w.y + w.h / 2 - mid) < Math.max(b.h, w.h) * 0.6);
  const right = row.filter((w) => w.x >= b.x + b.w - 1 && w.x - (b.x + b.w) < 40).sort((p, q) => p.x - q.x);
  const pick = right.length ? right : row.filter((w) => w.x + w.w <= b.x + 1 && b.x - (w.x + w.w) < 40).sort((p, q) => q.x - p.x);
  if (!pick.length) return '';
  // The phrase: words that follow each other closely, up to the next box.
  const words = [pick[0]!];
  for (const w of pick.slice(1)) {
    const prev = words[words.length - 1]!;
    if (Math.abs(w.x - (prev.x + prev.w)) > prev.size * 1.5 && Math.abs(prev.x - (w.x + w.w)) > prev.size * 1.5) break;
    words.push(w);
  }
  return (right.length ? words : words.reverse()).map((w) => w.str).join(' ');
}

/** The label of a box: words at its top inside, else on its left on the same line, else above, else a caption just under it. */
function labelFor(index: PageIndex, b: Box, inside: readonly Word[]): string {
  // The seed and its neighbours on the same text line, in reading order: among `inside` (the words
  // in the box), else among the page's text words that may be on its line (`textBand.near`), with
  // `leftOfBox` only those ending before the box.
  const line = (seed: Word, { inside, leftOfBox = false }: { inside?: readonly Word[]; leftOfBox?: boolean } = {}) => {
    const mid = seed.y + seed.h / 2;
    const pool = inside ?? index.textBand.near(mid - seed.h * 0.45, mid + seed.h * 0.45);
    // (`pool` holds no leaders.)
    const row = pool.filter((w) => Math.abs(w.y + w.h / 2 - mid) < seed.h * 0.45 && (!leftOfBox || w.x + w.w <= b.x + 2)).sort((p, q) => p.x - q.x);
    const at = row.indexOf(seed);
    let lo = at;
    let hi = at;
    while (lo > 0 && row[lo]!.x - (row[lo - 1]!.x + row[lo - 1]!.w) < seed.size * 2.5) lo--;
    while (hi < row.length - 1 && row[hi + 1]!.x - (row[hi]!.x + row[hi]!.w) < seed.size * 2.5) hi++;
    return row.slice(lo, hi + 1).map((w) => w.str).join(' ');
  };
  const text = inside.filter((w) => !isLeader(w.str));
  if (text.length) {
    const first = [...text].sort((p, q) => p.y - q.y || p.x - q.x)[0]!;
    return line(first, { inside: text });
  }
  // Left on the same line: the nearest word ending before the box.
  const bottom = b.y + b.h;
  let left: Word | null = null;
  for (const w of index.labelBand.near(b.y - 2, bottom + 2)) {
    const wx2 = w.x + w.w;
    if (wx2 > b.x + 2 || b.x - wx2 > 250) continue;
    const wy = w.y + w.h / 2;
    if (wy < b.y - 2 || wy > bottom + 2) continue;
    if (!left || wx2 > left.x + left.w) left = w;
  }
  if (left) {
    const phrase = line(left, { leftOfBox: true });
    if (/[a-z]{2}/i.test(phrase)) return phrase;
  }
  // Above: the nearest word whose line sits just over the box, overlapping it.
  let above: Word | null = null;
  for (const w of index.textBand.near(b.y - 14, b.y + 2)) {
    const gapY = b.y - (w.y + w.h);
    if (gapY < -2 || gapY > 14) continue;
    if (overlap(w.x, w.x + w.w, b.x - 4, b.x + b.w) <= 0) continue;
    if (!above || w.y > above.y || (w.y === above.y && w.x < above.x)) above = w;
  }
  if (above) return line(above);
  if (left) return line(left);
  // Below: a caption printed under the line, starting within it.
  let below: Word | null = null;
  for (const w of index.textBand.near(bottom - 1, bottom + 6)) {
    const gapY = w.y - bottom;
    if (gapY < -1 || gapY > 6) continue;
    if (w.x < b.x - 2 || w.x > b.x + b.w - 4) continue;
    if (!below || w.y < below.y || (w.y === below.y && w.x < below.x)) below = w;
  }
  return below ? line(below) : '';
}

const SIGNATURE = /signature|\bsign here\b|\bsigned\b|unterschrift|\bfirma\b|(?<!\p{L})sign[ée]e?(?!\p{L})|подпись|handtekening|assinatura|\bpodpis|\bfirme\b/iu;
const INITIALS = /\binitials\b|\binitial here\b|paraphe|\bkürzel\b/i;
const DATE = /\bdate\b|\bdated\b|\bdatum\b|\bfecha\b|\bdata\b|\bdob\b|birth|geburt|naissance|mm\s*\/\s*dd|dd\s*\/\s*mm|jj\s*\/\s*mm|\btt\.mm|дата/i;
const EMAIL = /e-?mail|courriel|\bmail address/i;
const PHONE = /phone|\btel\b|\btel\.|telefon|téléphone|\bfax\b|mobile|\bcell\b|телефон/i;
const NUMBER = /amount|\btotal\b|\bsum\b|\$|€|£|\bbetrag|\bmontant|\bnumber of\b|\bno\. of\b|percent|%|\bquantity\b|\bqty\b|\bdollars?\b|\bprice\b|\bfee\b|\bcost\b/i;

/** What a label asks for, whatever the box: a type, or `number` / `short_text` unless the box is a text area. */
const labelType = rememberedByText((label): FieldType => {
  // "Signature" wins over "Date" in "Signature and date": the line is for the signature.
  if (SIGNATURE.test(label)) return 'digital_signature';
  if (INITIALS.test(label)) return 'initials';
  if (EMAIL.test(label)) return 'email';
  if (PHONE.test(label)) return 'phone';
  if (DATE.test(label)) return 'date';
  return NUMBER.test(label) ? 'number' : 'short_text';
});

/** A field type from a label and the box's shape. */
export function typeFor(label: string, b: Box, lineHeight: number): FieldType {
  const type = labelType(label);
  if (type !== 'number' && type !== 'short_text') return type;
  if (b.h >= Math.max(30, lineHeight * 2.8) && b.w >= 80) return 'long_text';
  return type;
}

/** Boxes in reading order: rows of tops each within 1.2 pt of the next, each row left to right. */
function inRows<T extends Box>(boxes: readonly T[]): T[] {
  const byY = [...boxes].sort((p, q) => p.y - q.y);
  const out: T[] = [];
  for (let i = 0; i < byY.length; ) {
    let j = i + 1;
    while (j < byY.length && byY[j]!.y - byY[j - 1]!.y <= 1.2) j++;
    out.push(...byY.slice(i, j).sort((p, q) => p.x - q.x));
    i = j;
  }
  return out;
}

/**
 * Every candidate of a page, in page points.
 */
export function pageCandidates(page: PageGraphics): Candidate[] {
  const index = new PageIndex(page);
  // Thousands of rules or words: a drawing, a map or a hostile page, not a form to fill (and the
  // rules below compare rules with rules and boxes with words).
  // Rules are counted as drawn, before dashes are joined: thousands of short strokes are a drawing.
  // (Merging never makes more rules than were drawn: a page with few drawn needs no count.)
  const drawn = (segments: readonly Segment[], merged: readonly Segment[]) => merged.length > MAX_RULES || strokesOver(segments, MAX_RULES);
  if (drawn(page.horizontal, index.horizontal) || drawn(page.vertical, index.vertical) || page.shapes.length > MAX_RULES * 2 || index.words.length > MAX_WORDS) return [];
  const out: Candidate[] = [];
  const { width: W, height: H } = page;
  const lh = index.lineHeight;
  const writeHeight = Math.min(22, Math.max(11, lh * 1.7));
  // Combs drawn as rows of separate small boxes: one field over the row.
  const combed = new Set<Shape>();
  const smalls = inRows(page.shapes.filter((s) => !s.round && s.stroked && s.w >= 4 && s.w <= 26 && s.h >= 6 && s.h <= 30));
  for (let i = 0; i < smalls.length; ) {
    const row = [smalls[i]!];
    let j = i + 1;
    for (; j < smalls.length; j++) {
      const prev = row[row.length - 1]!;
      const s = smalls[j]!;
      if (Math.abs(s.y - prev.y) > 1.5 || Math.abs(s.h - prev.h) > 1.5) break;
      const gap = s.x - (prev.x + prev.w);
      if (gap < -2.5 || gap > 0.5 * prev.w || Math.abs(s.w - prev.w) > 0.35 * prev.w + 1) {
        // Not part of this row; it may start the next one.
        break;
      }
      row.push(s);
    }
    // Three boxes or more; or two that touch (two boxes to tick stand apart, with their labels).
    const touching = row.every((s, k) => k === 0 || s.x - (row[k - 1]!.x + row[k - 1]!.w) <= 1.5);
    if (row.length >= 3 || (row.length === 2 && touching)) {
      const first = row[0]!;
      const last = row[row.length - 1]!;
      const b = { x: first.x, y: first.y, w: last.x + last.w - first.x, h: first.h };
      for (const s of row) combed.add(s);
      const label = labelFor(index, b, []);
      out.push({ ...b, kind: 'comb', type: typeFor(label, b, lh), label, score: 0.8, cell: b.w / row.length });
    }
    i = j;
  }
  // Check boxes: their edges are rules too, and must not become cells.
  const squares: Box[] = [...combed];
  for (const s of page.shapes) {
    if (combed.has(s)) continue;
    if (s.w < CHECK_MIN || s.h < CHECK_MIN || s.w > CHECK_MAX || s.h > CHECK_MAX) continue;
    // Squares, and circles or ovals (radio buttons).
    if (Math.abs(s.w - s.h) > (s.round ? 0.45 : 0.25) * Math.max(s.w, s.h)) continue;
    // Filled dark shapes are bullets, not boxes to tick.
    if (s.filled && !s.stroked && s.fillLevel < 0.9) continue;
    if (squares.some((q) => Math.abs(q.x - s.x) < 1.5 && Math.abs(q.y - s.y) < 1.5)) continue;
    // Text inside is a printed character in a box (a line number), not a box to tick.
    if (wordsOver(index.wordBand, s, 0.5).some((w) => !isCheckGlyph(w.str))) continue;
    squares.push(s);
    out.push({ x: s.x, y: s.y, w: s.w, h: s.h, kind: 'square', type: 'checkbox', label: '', score: 0.85, round: s.round });
  }
  for (const w of index.words) {
    if (!isCheckGlyph(w.str)) continue;
    const side = Math.max(4, w.size * 0.75);
    out.push({ x: w.x, y: w.y + w.h * 0.8 - side, w: side, h: side, kind: 'glyph', type: 'checkbox', label: '', score: 0.9 });
  }
  const inSquare = (x: number, y: number) => squares.some((q) => x >= q.x - 1 && x <= q.x + q.w + 1 && y >= q.y - 1 && y <= q.y + q.h + 1);
  const horizontal = index.horizontal.filter((s) => !(inSquare(s.a, s.at) && inSquare(s.b, s.at)));
  const vertical = index.vertical.filter((s) => !(inSquare(s.at, s.a) && inSquare(s.at, s.b)));
  const chainTop = columnTops(vertical);

  // Cells and fill-in lines: the space above each horizontal rule (at most MAX_PIECES of them a
  // page: each is compared with the page's rules and words).
  let budget = MAX_PIECES;
  for (const rule of horizontal) {
    const len = rule.b - rule.a;
    if (len < MIN_WIDTH) continue;
    // Split where vertical rules cross it from above: each piece is the floor of a cell of its own.
    const crossing = vertical.filter((v) => v.at > rule.a + 1.5 && v.at < rule.b - 1.5 && v.a < rule.at - 3 && v.b > rule.at - 1.5).sort((p, q) => p.at - q.at);
    const cuts = subColumns(index, vertical, rule, crossing, chainTop).map((v) => v.at);
    const xs = [rule.a, ...cuts, rule.b];
    budget -= xs.length;
    if (budget < 0) return [];
    const pieces: Array<{ x1: number; x2: number; top: number | null }> = [];
    for (let k = 1; k < xs.length; k++) {
      const x1 = xs[k - 1]!;
      const x2 = xs[k]!;
      if (x2 - x1 < 3) continue;
      pieces.push({ x1, x2, top: index.ceiling(x1, x2, rule.at, MAX_CELL_HEIGHT) });
    }
    openCombTops(pieces, vertical, rule, writeHeight);
    // Comb fields: three or more narrow pieces of one width and one top, side by side.
    const merged: Array<{ x1: number; x2: number; top: number | null; cells: number }> = [];
    for (let k = 0; k < pieces.length; ) {
      const p = pieces[k]!;
      let j = k;
      if (p.x2 - p.x1 < 24 && p.top !== null) {
        while (
          j + 1 < pieces.length &&
          pieces[j + 1]!.x2 - pieces[j + 1]!.x1 < 24 &&
          Math.abs(pieces[j + 1]!.x1 - pieces[j]!.x2) < 1 &&
          pieces[j + 1]!.top !== null &&
          Math.abs(pieces[j + 1]!.top! - p.top) < 1.5
        ) j++;
      }
      // Two narrow cells of one width are a comb of two (a two-digit code), not two fields.
      const pair = j - k === 1 && pieces[k]!.x2 - pieces[k]!.x1 >= 8 && Math.abs(pieces[j]!.x2 - pieces[j]!.x1 - (p.x2 - p.x1)) <= 0.2 * (p.x2 - p.x1);
      if (j - k >= 2 || pair) {
        merged.push({ x1: p.x1, x2: pieces[j]!.x2, top: p.top, cells: j - k + 1 });
      } else {
        for (let q = k; q <= j; q++) merged.push({ x1: pieces[q]!.x1, x2: pieces[q]!.x2, top: pieces[q]!.top, cells: 0 });
      }
      k = j + 1;
    }
    for (const piece of merged) {
      out.push(...cellAbove(index, piece.x1, piece.x2, rule, piece.top, writeHeight, piece.cells));
    }
  }

  // Underscore runs typed as text.
  for (const w of index.words) {
    if (!/^_{3,}$/.test(w.str) || w.w < MIN_WIDTH) continue;
    const base = w.y + w.h * 0.8 + w.size * 0.1;
    const b = { x: w.x, y: base - writeHeight, w: w.w, h: writeHeight };
    const label = labelFor(index, b, []);
    out.push({ ...b, kind: 'underscore', type: typeFor(label, b, lh), label, score: label ? 0.8 : 0.6 });
  }
  yesNoColumns(index, out);
  splitByCaptions(index, out);
  for (const c of out) if (c.type === 'checkbox') c.label = checkLabel(index, c);
  return dedupe(joinCombs(joinCents(dropHeaders(index, out))).filter((c) => c.x >= -1 && c.y >= -1 && c.x + c.w <= W + 1 && c.y + c.h <= H + 1));
}

/**
 * Where each vertical rule's column line starts: its segments one under the other (broken where
 * the rows' rules cross) are one line, and every segment maps to the top of its line.
 */
function columnTops(vertical: readonly Segment[]): Map<Segment, number> {
  const tops = new Map<Segment, number>();
  const sorted = [...vertical].sort((p, q) => p.at - q.at || p.a - q.a);
  for (let i = 0; i < sorted.length; ) {
    let j = i + 1;
    while (j < sorted.length && sorted[j]!.at - sorted[j - 1]!.at <= 1) j++;
    const column = sorted.slice(i, j).sort((p, q) => p.a - q.a);
    let top = column[0]!.a;
    let reach = column[0]!.b;
    for (const v of column) {
      if (v.a > reach + 2.5) top = v.a;
      reach = Math.max(reach, v.b);
      tops.set(v, top);
    }
    i = j;
  }
  return tops;
}

/**
 * The verticals that cut a rule into cells, without the sub-columns: a vertical that starts lower
 * than the column lines on both sides of it, under a header printed across it (a social security
 * number in three groups under one "Social security number" header), divides one field's
 * printed groups, not two fields. `vertical` is the page's verticals that cut cells (the ones
 * `tops` maps), `crossing` those of them that cross `rule`.
 */
function subColumns(index: PageIndex, vertical: readonly Segment[], rule: Segment, crossing: readonly Segment[], tops: Map<Segment, number>): Segment[] {
  if (crossing.length === 0) return [];
  const endTop = (x: number) => {
    let best = Infinity;
    for (const v of vertical) if (Math.abs(v.at - x) < 2.5 && v.a < rule.at - 3 && v.b > rule.at - 1.5) best = Math.min(best, tops.get(v)!);
    return best;
  };
  const all = [{ at: rule.a, top: endTop(rule.a) }, ...crossing.map((v) => ({ at: v.at, top: tops.get(v)! })), { at: rule.b, top: endTop(rule.b) }];
  const keep = new Set<number>();
  for (let k = 1; k < all.length - 1; k++) {
    const cut = all[k]!;
    let l = k - 1;
    while (l > 0 && all[l]!.top >= cut.top - 5) l--;
    let r = k + 1;
    while (r < all.length - 1 && all[r]!.top >= cut.top - 5) r++;
    const left = all[l]!;
    const right = all[r]!;
    const lower = left.top < cut.top - 5 && right.top < cut.top - 5;
    // The header: words across the cut, right over where it starts (no room to write under them),
    // in one cell from the column line on the left to the one on the right (no other vertical
    // between them there).
    const header =
      lower &&
      index.text.some(
        (w) =>
          w.x < cut.at - 3 &&
          w.x + w.w > cut.at + 3 &&
          w.x >= left.at - 2 &&
          w.x + w.w <= right.at + 2 &&
          w.y + w.h <= cut.top + 1 &&
          w.y + w.h >= Math.max(left.top, right.top, cut.top - 0.9 * index.lineHeight) - 1 &&
          !vertical.some((v) => v.at > left.at + 2 && v.at < right.at - 2 && overlap(v.a, v.b, w.y + w.h / 2, cut.top - 2) > 0),
      );
    if (!header) keep.add(k - 1);
  }
  return crossing.filter((_, i) => keep.has(i));
}

/**
 * Open-topped combs: three or more narrow pieces of a rule side by side, each between two ticks
 * rising from the rule, with no rule across their tops (or one more than 2 pt above the ticks),
 * are cells up to the ticks' top (a line's height when the ticks are short), so that they
 * become a comb.
 */
function openCombTops(pieces: Array<{ x1: number; x2: number; top: number | null }>, vertical: readonly Segment[], rule: Segment, writeHeight: number): void {
  const tick = (x: number) => {
    let top: number | null = null;
    for (const v of vertical) if (Math.abs(v.at - x) < 1.5 && v.b > rule.at - 1.5 && v.a < rule.at - 3 && (top === null || v.a < top)) top = v.a;
    return top;
  };
  const tops = pieces.map((p) => {
    if (p.x2 - p.x1 >= 24) return null;
    const a = tick(p.x1);
    const b = tick(p.x2);
    if (a === null || b === null) return null;
    // Short ticks: the field is a line's height over the rule.
    const top = Math.max(a, b);
    return rule.at - top >= 0.7 * writeHeight ? top : rule.at - writeHeight;
  });
  for (let k = 0; k < pieces.length; ) {
    let j = k;
    while (j < pieces.length && tops[j] !== null && (j === k || Math.abs(pieces[j]!.x1 - pieces[j - 1]!.x2) < 1)) j++;
    if (j - k >= 3) {
      const top = Math.max(...tops.slice(k, j).map((t) => t!));
      for (let q = k; q < j; q++) {
        const p = pieces[q]!;
        if (p.top === null || p.top < top - 2) p.top = top;
      }
    }
    k = Math.max(j, k + 1);
  }
}

const listOf = <T>(x: T | null): T[] => (x ? [x] : []);

/**
 * The fields above a piece of a rule: up to the rule above (`top`), without the label printed at
 * the top of the cell, or, with no rule above, a line's height; one field, or one after each
 * label along a one-line cell, or a check box for a small square cell. None when the space holds
 * printed text, is shaded, or is not the size of a field.
 */
function cellAbove(index: PageIndex, x1: number, x2: number, rule: Segment, top: number | null, writeHeight: number, cells: number): Candidate[] {
  const width = x2 - x1;
  const bottom = rule.at - rule.width / 2;
  if (width < MIN_WIDTH) return cells || top === null ? [] : listOf(tickCell(index, x1, x2, top, bottom));
  const lh = index.lineHeight;
  // A rule far above with no sides joining the two is the line before, not the top of a box.
  if (top !== null && bottom - top > writeHeight * 1.3 && !hasSides(index, x1, x2, top, bottom)) top = null;
  // The top edge of a box below, with no sides above it: the space above is outside the box.
  if ((top === null || !hasSides(index, x1, x2, top, bottom)) && boxTop(index, x1, x2, rule.at)) return [];
  if (top === null) return openLine(index, x1, x2, bottom, writeHeight);
  const cellTop = top;
  const height = bottom - cellTop;
  if (height < MIN_HEIGHT) return [];
  const cell = { x: x1, y: cellTop, w: width, h: height };
  if (index.shadedShare(cell) > 0.4) return [];
  const words = wordsOver(index.textBand, { x: x1, y: cellTop, w: width, h: height }, 0.5);
  // A currency sign where the amount goes (`$ ______`) is not the cell's label.
  const signs = words.filter((w) => /^[$€£]$/.test(w.str.trim()));
  const inside = words.filter((w) => !signs.includes(w));
  // Where writing can go: below the words at the top of the cell.
  let y1 = cellTop + 1;
  let x = x1;
  let kind: Candidate['kind'] = cells ? 'comb' : 'cell';
  let score = cells ? 0.8 : 0.75;
  if (inside.length) {
    const textBottom = Math.max(...inside.map((w) => w.y + w.h));
    const textTop = Math.min(...inside.map((w) => w.y));
    const room = bottom - textBottom;
    if (room >= Math.max(MIN_HEIGHT, lh * 0.9) && textTop - cellTop < height * 0.5) {
      // A label at the top, space below it.
      y1 = textBottom + 0.5;
      kind = 'cell-top';
      score = 0.8;
    } else {
      // Words down to the bottom: a label on the left of the space, or printed content.
      const lastRight = Math.max(...inside.map((w) => w.x + w.w));
      const textShare = inside.reduce((sum, w) => sum + w.w * w.h, 0) / (width * height);
      // A printed amount (12.50, $1,000.00, 15 %) is a value in a table, not a label; a line
      // number (7, 15a) is a label.
      const printedValue = inside.every((w) => /^[-–(+]?[$€£]?\s?\d[\d\s,.']*[.,]\d{1,2}\)?%?$|^\d+(?:[.,]\d+)?\s?%$/.test(w.str));
      // After a line number alone (`11`), 30 pt is room enough for a code or an amount.
      const lineNo = inside.length === 1 && LINE_NUMBER.test(inside[0]!.str.trim());
      if (!printedValue && x2 - lastRight >= (lineNo ? 30 : Math.max(40, width * 0.35)) && textShare < 0.35 && height <= lh * 3) {
        x = lastRight + 2;
        kind = 'cell-left';
        score = 0.55;
      } else if (!printedValue && textShare < 0.35 && height <= lh * 3) {
        return labelledRuns(index, x1, x2, cellTop, bottom, inside);
      } else {
        return [];
      }
    }
  }
  const b = { x, y: y1, w: x2 - x, h: bottom - y1 };
  if (b.h < MIN_HEIGHT || b.w < MIN_WIDTH) return [];
  // A cell two or more lines tall that is not wide enough for a text area is written on its
  // bottom line (a row whose printed description runs over two lines).
  if (b.h > writeHeight * 1.4 && !(b.w >= 150 && b.h >= 36)) {
    b.y = bottom - writeHeight;
    b.h = writeHeight;
  }
  const sign = signs.filter((w) => w.y + w.h / 2 >= b.y && w.y + w.h / 2 <= b.y + b.h && w.x < b.x + b.w / 2).sort((p, q) => q.x - p.x)[0];
  if (sign && sign.x + sign.w + 1 > b.x) {
    b.w -= sign.x + sign.w + 1 - b.x;
    b.x = sign.x + sign.w + 1;
    if (b.w < MIN_WIDTH) return [];
  }
  if (b.h > MAX_CELL_HEIGHT) return [];
  // A tall empty cell much taller than wide is a column of a table, not a field.
  if (b.h > 3 * b.w && b.h > 40) return [];
  const label = labelFor(index, b, inside);
  if (!label) score -= 0.15;
  const type = typeFor(sign ? `${label} ${sign.str}` : label, b, lh);
  if (b.h > 60) score -= 0.1;
  // (Written out rather than spread: a conditional spread makes a slow object, and this is made for most cells of a page.)
  const found: Candidate = { x: b.x, y: b.y, w: b.w, h: b.h, kind, type, label, score, frame: { x1, x2, top: cellTop, bottom: rule.at } };
  if (cells) found.cell = width / cells;
  return [found];
}

/**
 * A cell of one line with labels along it and room after each (`City ____ State __ ZIP ____`):
 * each run of 30 pt or more after a label is a field, labelled by it. Two such runs at least.
 */
function labelledRuns(index: PageIndex, x1: number, x2: number, top: number, bottom: number, inside: readonly Word[]): Candidate[] {
  const words = [...inside].sort((p, q) => p.x - q.x);
  const spread = Math.max(...words.map((w) => w.y + w.h)) - Math.min(...words.map((w) => w.y));
  if (spread > index.lineHeight * 1.6) return [];
  const runs: Candidate[] = [];
  let at = x1;
  let label: Word[] = [];
  const flush = (end: number) => {
    if (!label.length || end - at < 30 || label.reduce((n, w) => n + w.str.length, 0) > 16) {
      label = [];
      return;
    }
    const b = { x: at, y: top + 1, w: end - at, h: bottom - top - 1 };
    const text = label.map((w) => w.str).join(' ');
    runs.push({ ...b, kind: 'cell-left', type: typeFor(text, b, index.lineHeight), label: text, score: 0.55 });
    label = [];
  };
  for (const w of words) {
    flush(w.x - 1);
    if (label.length && w.x - at > w.size * 1.5) label = [];
    label.push(w);
    at = Math.max(at, w.x + w.w + 1);
  }
  flush(x2);
  return runs.length >= 2 ? runs : [];
}

/** A small empty square cell of a table (a column of boxes to tick): a check box. */
function tickCell(index: PageIndex, x1: number, x2: number, top: number, bottom: number): Candidate | null {
  const b = { x: x1, y: top, w: x2 - x1, h: bottom - top };
  if (b.w < CHECK_MIN || b.h < CHECK_MIN || b.h > CHECK_MAX || Math.abs(b.w - b.h) > 0.35 * Math.max(b.w, b.h)) return null;
  if (!hasSides(index, x1, x2, top, bottom) || index.shadedShare(b) > 0.4) return null;
  if (wordsOver(index.labelBand, b, 0.3).length) return null;
  return { ...b, kind: 'square', type: 'checkbox', label: '', score: 0.7 };
}

/** Vertical rules going down from both ends of the rule x1..x2 at `y`: the top of a box. */
function boxTop(index: PageIndex, x1: number, x2: number, y: number): boolean {
  const down = (x: number) => index.vertical.some((v) => Math.abs(v.at - x) < 2.5 && v.a >= y - 3 && v.a <= y + 2 && v.b > y + 5);
  return down(x1) && down(x2);
}

/** A vertical rule on either side of x1..x2 that covers most of top..bottom. */
function hasSides(index: PageIndex, x1: number, x2: number, top: number, bottom: number): boolean {
  const side = (x: number) => index.vertical.some((v) => Math.abs(v.at - x) < 2.5 && overlap(v.a, v.b, top, bottom) >= 0.7 * (bottom - top));
  return side(x1) || side(x2);
}

/** An open fill-in line: a line's height above the rule, when labelled and not written on. */
function openLine(index: PageIndex, x1: number, x2: number, bottom: number, writeHeight: number): Candidate[] {
  const width = x2 - x1;
  const lh = index.lineHeight;
  const b = { x: x1, y: bottom - writeHeight, w: width, h: writeHeight };
  const over = wordsOver(index.textBand, { ...b, y: bottom - lh * 1.2, h: lh * 1.2 }, 0.3);
  // Text standing on the rule: an underline, or a printed value on a line.
  if (over.length) return [];
  // Long, lonely rules across the page are separators, not lines to write on.
  if (width > index.page.width * 0.75) return [];
  if (index.shadedShare(b) > 0.5) return [];
  const label = labelFor(index, b, []);
  if (!label) return [];
  return [{ ...b, kind: 'line', type: typeFor(label, b, lh), label, score: 0.6 }];
}

/**
 * One line or cell under a row of captions (`Your last name      Your first name      M.I.`):
 * a field under each caption, from where it starts to where the next one starts.
 */
function splitByCaptions(index: PageIndex, candidates: Candidate[]): void {
  const lh = index.lineHeight;
  const added: Candidate[] = [];
  for (const c of candidates) {
    if ((c.kind !== 'line' && c.kind !== 'cell' && c.kind !== 'cell-top') || c.w < 90 || c.h > lh * 2.5) continue;
    const near = index.text.filter((w) => w.y + w.h >= c.y - lh * 1.3 - 2 && w.y + w.h <= c.y + 2 && w.x >= c.x - 2 && w.x <= c.x + c.w - 15);
    if (near.length < 2) continue;
    // The text line right over the field.
    const lowest = Math.max(...near.map((w) => w.y + w.h / 2));
    const row = near.filter((w) => lowest - (w.y + w.h / 2) < lh * 0.5).sort((p, q) => p.x - q.x);
    const phrases: Word[][] = [];
    for (const w of row) {
      const last = phrases[phrases.length - 1];
      const prev = last?.[last.length - 1];
      // A box number or letter (`2`, `A`, `12a`) goes with the caption after it.
      const number = last?.length === 1 && last[0]!.str.trim().length <= 3;
      if (last && prev && (number || w.x - (prev.x + prev.w) < prev.size * 0.8)) last.push(w);
      else phrases.push([w]);
    }
    if (phrases.length < 2 || phrases.length > 4 || phrases.some((p) => p.map((w) => w.str).join(' ').length > 40)) continue;
    // The first caption starts the field; each caption's field ends where the next begins.
    if (phrases[0]![0]!.x > c.x + 0.25 * c.w) continue;
    const starts = [c.x, ...phrases.slice(1).map((p) => p[0]!.x - 1), c.x + c.w];
    if (starts.some((x, i) => i > 0 && x - starts[i - 1]! < 20)) continue;
    const parts = phrases.map((p, i) => {
      const b = { x: starts[i]!, y: c.y, w: starts[i + 1]! - starts[i]!, h: c.h };
      const label = p.map((w) => w.str).join(' ');
      return { ...c, ...b, label, type: typeFor(label, b, lh), frame: undefined };
    });
    Object.assign(c, parts[0]);
    added.push(...parts.slice(1));
  }
  candidates.push(...added);
}

const YES_NO = /^(yes|no|oui|non|ja|nein|s[ií]|n\/a)$/i;

/**
 * Yes/No columns: an empty cell under a column headed "Yes" or "No" is a box to tick, drawn or
 * not; it becomes a check box in the middle of the cell.
 */
function yesNoColumns(index: PageIndex, candidates: Candidate[]): void {
  for (const c of candidates) {
    if ((c.kind !== 'cell' && c.kind !== 'cell-top') || !c.frame || c.h > 30 || c.w > 60) continue;
    const { x1, x2, top } = c.frame;
    let header: Word | null = null;
    if (c.kind === 'cell-top') {
      const inside = wordsOver(index.wordBand, { x: x1, y: top, w: x2 - x1, h: c.y - top }, 0.5);
      if (inside.length === 1) header = inside[0]!;
    } else {
      // The nearest word above whose middle is within the column.
      for (const w of index.words) {
        const mid = w.x + w.w / 2;
        if (mid < x1 || mid > x2 || w.y + w.h > top + 1 || top - (w.y + w.h) > 100) continue;
        if (!header || w.y > header.y) header = w;
      }
    }
    if (!header || !YES_NO.test(header.str.trim())) continue;
    const side = Math.max(CHECK_MIN, Math.min(10, c.h - 2, c.w - 2));
    Object.assign(c, { x: c.x + (c.w - side) / 2, y: c.y + (c.h - side) / 2, w: side, h: side, kind: 'square', type: 'checkbox', label: '', round: false });
    c.frame = undefined;
  }
}

/**
 * Combs in groups (`[][][]-[][]-[][][][]`, a telephone number in three groups, the tail of a
 * comb drawn apart from its head): groups on one row, of one height, no more than half a cell
 * apart, are one field.
 */
function joinCombs(candidates: Candidate[]): Candidate[] {
  const combs = inRows(candidates.filter((c) => c.kind === 'comb' && c.cell));
  const dropped = new Set<Candidate>();
  for (let i = 0; i < combs.length; ) {
    const head = combs[i]!;
    let j = i + 1;
    for (; j < combs.length; j++) {
      const next = combs[j]!;
      const gap = next.x - (head.x + head.w);
      if (Math.abs(next.y - head.y) > 1.5 || Math.abs(next.y + next.h - (head.y + head.h)) > 1.5) break;
      if (gap < -3 || gap > 0.5 * Math.min(head.cell!, next.cell!) || Math.abs(next.cell! - head.cell!) > 0.35 * head.cell! + 1) break;
      head.w = next.x + next.w - head.x;
      dropped.add(next);
    }
    i = j;
  }
  return candidates.filter((c) => !dropped.has(c));
}

/**
 * Amounts with cents: a narrow empty cell right after a wider empty cell of the same row is the
 * cents part of one amount; the two are one field.
 */
function joinCents(candidates: Candidate[]): Candidate[] {
  const near = (a: number, b: number) => Math.abs(a - b) < 2.5;
  const dropped = new Set<Candidate>();
  for (const c of candidates) {
    if (c.kind !== 'cell' || !c.frame || c.frame.x2 - c.frame.x1 >= 26) continue;
    const f = c.frame;
    const left = candidates.find(
      (l) => l !== c && !dropped.has(l) && (l.kind === 'cell' || l.kind === 'cell-top') && l.frame && near(l.frame.x2, f.x1) && near(l.frame.top, f.top) && near(l.frame.bottom, f.bottom) && l.frame.x2 - l.frame.x1 > 2 * (f.x2 - f.x1),
    );
    if (!left) continue;
    left.w = c.x + c.w - left.x;
    left.frame = { ...left.frame!, x2: f.x2 };
    dropped.add(c);
  }
  return candidates.filter((c) => !dropped.has(c));
}

/**
 * Table headers: a cell with printed text is a header, not a field, when the cell under it (its
 * column) or on its right (its row) is an empty cell of the same width or height. Two kinds of
 * such cells are fields all the same:
 * - a cell headed by a caption with a writing line's room under it, in a row whose captions all
 *   end on the same line, currency signs where the amounts go left aside: the table's first row,
 *   filled in its header (`15 State | 16 State wages` over the space for them); a header row's
 *   room is where a longer caption next to it still runs, or a column letter (`A`) stands alone;
 * - a cell holding only a line number (`11`) on its left, room after it, before an empty cell of
 *   the row: a numbered row's first field.
 */
function dropHeaders(index: PageIndex, candidates: Candidate[]): Candidate[] {
  const near = (a: number, b: number) => Math.abs(a - b) < 2.5;
  // The empty cells' frames by their top (a frame whose top is not a number is near nothing), to
  // look up those whose top is near a value by bisection rather than one by one: every top `near`
  // a value v is within [v - 2.5, v + 2.5] as those ends round (rounding keeps numbers in order),
  // and each found is tested by `near`.
  const empty = candidates
    .filter((c) => c.kind === 'cell' && c.frame && !Number.isNaN(c.frame.top))
    .map((c) => c.frame!)
    .sort((a, b) => a.top - b.top);
  const tops = Float64Array.from(empty, (f) => f.top);
  const anyNear = (top: number, test: (e: NonNullable<Candidate['frame']>) => boolean) => {
    for (let k = lowerBound(tops, top - 2.5), end = upperBound(tops, top + 2.5); k < end; k++) if (test(empty[k]!)) return true;
    return false;
  };
  return candidates.filter((c) => {
    if ((c.kind !== 'cell-top' && c.kind !== 'cell-left') || !c.frame) return true;
    const f = c.frame;
    const column = anyNear(f.bottom, (e) => near(e.top, f.bottom) && near(e.x1, f.x1) && near(e.x2, f.x2));
    const row = anyNear(f.top, (e) => near(e.x1, f.x2) && near(e.top, f.top) && near(e.bottom, f.bottom));
    if (column && !row && c.kind === 'cell-top' && filledHeader(index, c)) return true;
    if (row && !column && c.kind === 'cell-left' && LINE_NUMBER.test(c.label.trim())) return true;
    return !column && !row;
  });
}


/** A header cell with room for a line of writing under its caption, captions of its row all ending on one line. */
function filledHeader(index: PageIndex, c: Candidate): boolean {
  const f = c.frame!;
  if (/^\p{L}$/u.test(c.label.trim())) return false;
  const text = (x1: number, x2: number) => wordsOver(index.textBand, { x: x1, y: f.top, w: x2 - x1, h: f.bottom - f.top }, 0.5).filter((w) => !/^[$€£]$/.test(w.str.trim()));
  const own = text(f.x1, f.x2);
  if (!own.length) return false;
  const textBottom = Math.max(...own.map((w) => w.y + w.h));
  if (f.bottom - textBottom < index.lineHeight) return false;
  // The row: the rule under the cell, as far as it runs.
  const floor = index.horizontal.find((s) => Math.abs(s.at - f.bottom) < 2 && s.a <= f.x1 + 2 && s.b >= f.x2 - 2);
  if (!floor) return false;
  return text(floor.a, floor.b).every((w) => w.y + w.h <= textBottom + 1);
}

/** Candidates found twice (a drawn box is also a cell of its own rules): the better one stays. */
function dedupe(candidates: Candidate[]): Candidate[] {
  const sorted = [...candidates].sort((a, b) => b.score - a.score);
  const kept: Candidate[] = [];
  // The kept boxes' edges and areas, read for every candidate after them.
  const n = sorted.length;
  const x1 = new Float64Array(n);
  const x2 = new Float64Array(n);
  const y1 = new Float64Array(n);
  const y2 = new Float64Array(n);
  const area = new Float64Array(n);
  for (const c of sorted) {
    const cx2 = c.x + c.w;
    const cy2 = c.y + c.h;
    const own = c.w * c.h;
    let clash = false;
    for (let k = 0; k < kept.length && !clash; k++) clash = overlap(x1[k]!, x2[k]!, c.x, cx2) * overlap(y1[k]!, y2[k]!, c.y, cy2) > 0.5 * Math.min(area[k]!, own);
    if (clash) continue;
    const k = kept.length;
    kept.push(c);
    x1[k] = c.x;
    x2[k] = cx2;
    y1[k] = c.y;
    y2[k] = cy2;
    area[k] = own;
  }
  return kept;
}

/** A field box (in page points) as a detected field, its box in fractions of the displayed page. */
export function toField(c: Box & { type: FieldType; label: string }, pageNumber: number, page: { width: number; height: number }, confidence: number): DetectedField | null {
  const rect = pageRect(c.x / page.width, c.y / page.height, (c.x + c.w) / page.width, (c.y + c.h) / page.height);
  if (!rect) return null;
  const label = c.label.replace(/\s+/g, ' ').trim().slice(0, 200) || defaultLabel(c.type);
  return { type: c.type, label, pageNumber, rect, confidence, source: 'layout', assigneeRole: null, isRequired: false, isReadOnly: false, options: {} };
}
