/**
 * What the layout detector reads of a page: its drawn rules and boxes and its text, in points of
 * the displayed page (CropBox and /Rotate applied, origin top-left), from pdf.js's operator list
 * (with every transform applied: the CTM, form XObject matrices) and the text runs `readText`
 * (page-text.ts) reads from the same list.
 */
import { OPS } from '../files/pdfjs.js';

/** A horizontal or vertical rule: `a..b` along it, at `at` across it. */
export interface Segment {
  a: number;
  b: number;
  at: number;
  /** Thickness in points. */
  width: number;
}

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Shape extends Box {
  /** Drawn as an outline (stroked) or as a filled area. */
  stroked: boolean;
  filled: boolean;
  /** Fill colour, 0 (black) .. 1 (white) as grey level, for filled shapes. */
  fillLevel: number;
  /** A closed curve (a circle, a rounded box) rather than a rectangle. */
  round: boolean;
}

export interface Word extends Box {
  str: string;
  /** Font size in points (the height of the text line). */
  size: number;
}

/** A text run as the layout detector and the tag reader read it (`readText`, page-text.ts). */
export interface TextRun {
  str: string;
  /** `[a, b, c, d, e, f]`: text space to PDF user space at the run's first glyph. */
  transform: number[];
  /** Advance of the whole run in user space, along (a, b). */
  width: number;
  /** Where each character of `str` starts, in user space along the run (`offsets[str.length]` is `width`). */
  offsets: Float64Array;
  /** pdf.js's id of the run's font. */
  fontName: string;
}

export interface PageGraphics {
  width: number;
  height: number;
  horizontal: Segment[];
  vertical: Segment[];
  /** Rectangles and small closed curves, as drawn. */
  shapes: Shape[];
  /** Text runs, each split at runs of spaces and at underscore runs (underscores are kept apart). */
  words: Word[];
}

/** A PDF matrix `[a, b, c, d, e, f]`. */
export type Matrix = [number, number, number, number, number, number];

/** `m` then `n` (a point is mapped by `m`, then by `n`). */
export const multiply = (m: Matrix, n: Matrix): Matrix => [
  m[0] * n[0] + m[1] * n[2],
  m[0] * n[1] + m[1] * n[3],
  m[2] * n[0] + m[3] * n[2],
  m[2] * n[1] + m[3] * n[3],
  m[4] * n[0] + m[5] * n[2] + n[4],
  m[4] * n[1] + m[5] * n[3] + n[5],
];

/** A matrix given by pdf.js (an array or a Float32Array of 6 finite numbers), else null. */
export function matrixOf(value: unknown): Matrix | null {
  const m = value as ArrayLike<unknown> | null | undefined;
  if (m?.length !== 6) return null;
  const a = m[0], b = m[1], c = m[2], d = m[3], e = m[4], f = m[5]; // prettier-ignore
  const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  return finite(a) && finite(b) && finite(c) && finite(d) && finite(e) && finite(f) ? [a, b, c, d, e, f] : null;
}

const apply = (m: Matrix, x: number, y: number): [number, number] => [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]];

/** Lines thinner than this (points) drawn as filled rectangles are rules, not areas. */
const RULE_MAX = 2.5;
/** Coordinates closer than this are the same (points). */
const EPS = 0.6;
/** At most this many path points are read per page: a page of vector art is not a form. */
const MAX_POINTS = 400_000;

function greyOf(args: unknown[]): number | null {
  const v = args[0];
  if (typeof v === 'string' && /^#[0-9a-f]{6}$/i.test(v)) {
    const r = parseInt(v.slice(1, 3), 16);
    const g = parseInt(v.slice(3, 5), 16);
    const b = parseInt(v.slice(5, 7), 16);
    return (0.3 * r + 0.59 * g + 0.11 * b) / 255;
  }
  return null;
}

interface OperatorList {
  fnArray: number[];
  argsArray: unknown[];
}

/**
 * Reads the rules, boxes and text of one page. `viewport` is pdf.js's page viewport at scale 1
 * (its `transform` maps PDF user space to the displayed page).
 */
export function readPage(
  viewport: { width: number; height: number; transform: number[] },
  ops: OperatorList,
  /** The page's text runs (`readText` of the same operator list). */
  runs: readonly TextRun[],
): PageGraphics {
  const page: PageGraphics = { width: viewport.width, height: viewport.height, horizontal: [], vertical: [], shapes: [], words: [] };
  const base = viewport.transform as Matrix;
  let ctm: Matrix = [1, 0, 0, 1, 0, 0];
  let lineWidth = 1;
  let fillLevel = 0;
  let strokeLevel = 0;
  const stack: Array<{ ctm: Matrix; lineWidth: number; fillLevel: number; strokeLevel: number }> = [];
  let points = 0;
  const whites = new WhiteBoxes(page);
  const { fnArray, argsArray } = ops;
  for (let i = 0; i < fnArray.length; i++) {
    const fn = fnArray[i];
    const args = argsArray[i] as unknown[];
    switch (fn) {
      case OPS.save:
        stack.push({ ctm, lineWidth, fillLevel, strokeLevel });
        break;
      case OPS.restore:
      case OPS.paintFormXObjectEnd: {
        const s = stack.pop();
        if (s) ({ ctm, lineWidth, fillLevel, strokeLevel } = s);
        break;
      }
      case OPS.transform:
        ctm = multiply(args as Matrix, ctm);
        break;
      case OPS.paintFormXObjectBegin: {
        stack.push({ ctm, lineWidth, fillLevel, strokeLevel });
        // The form's /Matrix: pdf.js gives it as a Float32Array (or null).
        const matrix = matrixOf(args[0]);
        if (matrix) ctm = multiply(matrix, ctm);
        break;
      }
      case OPS.setLineWidth:
        lineWidth = Number(args[0]) || 0;
        break;
      case OPS.setFillRGBColor:
        fillLevel = greyOf(args) ?? fillLevel;
        break;
      case OPS.setStrokeRGBColor:
        strokeLevel = greyOf(args) ?? strokeLevel;
        break;
      case OPS.constructPath: {
        if (points > MAX_POINTS) break;
        const op = args[0] as number;
        const data = (args[1] as unknown[] | undefined)?.[0] as ArrayLike<number> | undefined;
        if (!data || typeof data.length !== 'number') break;
        // Past the budget, no more paths are read (one huge path counts whole, before it is read).
        points += data.length;
        if (points > MAX_POINTS) break;
        const stroke = op === OPS.stroke || op === OPS.closeStroke || op === OPS.fillStroke || op === OPS.eoFillStroke || op === OPS.closeFillStroke || op === OPS.closeEOFillStroke;
        const fill = op === OPS.fill || op === OPS.eoFill || op === OPS.fillStroke || op === OPS.eoFillStroke || op === OPS.closeFillStroke || op === OPS.closeEOFillStroke;
        if (!stroke && !fill) break;
        // Invisible ink: a white rule on a white page draws nothing.
        if (stroke && !fill && strokeLevel > 0.95) break;
        const m = multiply(ctm, base);
        if (fill && !stroke && fillLevel > 0.95) {
          // White on white draws nothing; white over a shaded area drawn before is a white box.
          whites.read(data, m, fillLevel);
          break;
        }
        const scale = Math.sqrt(Math.abs(m[0] * m[3] - m[1] * m[2]));
        readPath(page, data, m, stroke, fill, Math.max(lineWidth * scale, 0.1), fillLevel);
        break;
      }
      default:
        break;
    }
  }
  for (const run of runs) splitWords(page, run, base);
  return page;
}

/** Comparisons of white rectangles with shaded areas one page may take (a bound on the work). */
const WHITE_CHECKS = 2_000_000;

/**
 * White filled rectangles over shaded areas: forms printed on grey or coloured bands leave their
 * fields as white boxes with no outline, which are drawn by filling white over the band. Such a
 * rectangle is kept as a filled shape (fill level above 0.95) when it lies within a shaded
 * rectangle drawn before it and is smaller than it; any other white fill draws nothing visible.
 */
class WhiteBoxes {
  /** Filled rectangles darker than white, in the order drawn (`page.shapes` read so far). */
  private readonly shaded: Shape[] = [];
  private seen = 0;
  private checks = 0;
  private readonly scratch: PageGraphics;

  constructor(private readonly page: PageGraphics) {
    this.scratch = { width: page.width, height: page.height, horizontal: [], vertical: [], shapes: [], words: [] };
  }

  read(data: ArrayLike<number>, m: Matrix, fillLevel: number): void {
    if (this.checks > WHITE_CHECKS) return;
    const page = this.page;
    for (; this.seen < page.shapes.length; this.seen++) {
      const s = page.shapes[this.seen]!;
      if (s.filled && !s.round && s.fillLevel <= 0.95 && s.w > 6 && s.h > 4) this.shaded.push(s);
    }
    if (!this.shaded.length) return;
    const scratch = this.scratch;
    scratch.shapes.length = 0;
    scratch.horizontal.length = 0;
    scratch.vertical.length = 0;
    readPath(scratch, data, m, false, true, 0.1, fillLevel);
    for (const w of scratch.shapes) {
      if (w.round) continue;
      this.checks += this.shaded.length;
      if (this.checks > WHITE_CHECKS) return;
      const area = w.w * w.h;
      const under = this.shaded.some((s) => s.x <= w.x + 1 && s.y <= w.y + 1 && s.x + s.w >= w.x + w.w - 1 && s.y + s.h >= w.y + w.h - 1 && area < 0.9 * s.w * s.h);
      if (under) page.shapes.push(w);
    }
    this.seen = page.shapes.length;
  }
}

/** One subpath's points, in page points. */
function readPath(page: PageGraphics, data: ArrayLike<number>, m: Matrix, stroke: boolean, fill: boolean, strokeWidth: number, fillLevel: number): void {
  let sub: Array<[number, number]> = [];
  let curved = false;
  const flush = (closed: boolean) => {
    if (sub.length >= 2) addSubpath(page, sub, closed, curved, stroke, fill, strokeWidth, fillLevel);
    sub = [];
    curved = false;
  };
  let k = 0;
  while (k < data.length) {
    const code = data[k++];
    if (code === 0) {
      flush(false);
      sub.push(apply(m, data[k]!, data[k + 1]!));
      k += 2;
    } else if (code === 1) {
      sub.push(apply(m, data[k]!, data[k + 1]!));
      k += 2;
    } else if (code === 2) {
      sub.push(apply(m, data[k + 4]!, data[k + 5]!));
      curved = true;
      k += 6;
    } else if (code === 3) {
      sub.push(apply(m, data[k + 2]!, data[k + 3]!));
      curved = true;
      k += 4;
    } else if (code === 4) {
      if (sub.length) sub.push(sub[0]!);
      flush(true);
    } else {
      break;
    }
  }
  flush(false);
}

function addSubpath(page: PageGraphics, pts: Array<[number, number]>, closed: boolean, curved: boolean, stroke: boolean, fill: boolean, strokeWidth: number, fillLevel: number): void {
  let x1 = Infinity;
  let y1 = Infinity;
  let x2 = -Infinity;
  let y2 = -Infinity;
  for (const [x, y] of pts) {
    if (x < x1) x1 = x;
    if (x > x2) x2 = x;
    if (y < y1) y1 = y;
    if (y > y2) y2 = y;
  }
  const w = x2 - x1;
  const h = y2 - y1;
  if (!Number.isFinite(w) || !Number.isFinite(h)) return;
  // Nothing of it on the page.
  if (x2 < 0 || y2 < 0 || x1 > page.width || y1 > page.height) return;
  const isClosed = closed || (pts.length >= 4 && Math.abs(pts[0]![0] - pts[pts.length - 1]![0]) < EPS && Math.abs(pts[0]![1] - pts[pts.length - 1]![1]) < EPS);
  if (curved) {
    // A small closed curve (a circle or a rounded square) may be a radio button or a check box.
    if ((isClosed || fill) && w > 3 && h > 3 && w < 30 && h < 30) page.shapes.push({ x: x1, y: y1, w, h, stroked: stroke, filled: fill, fillLevel, round: true });
    return;
  }
  const axisAligned = pts.every(([x, y]) => (Math.abs(x - x1) < EPS || Math.abs(x - x2) < EPS) && (Math.abs(y - y1) < EPS || Math.abs(y - y2) < EPS));
  if (axisAligned && (isClosed || fill) && pts.length >= 4) {
    // A rectangle: a thin one is a rule, else a box (outline) or an area (fill).
    if (fill && h <= RULE_MAX && w > h) {
      page.horizontal.push({ a: x1, b: x2, at: (y1 + y2) / 2, width: Math.max(h, 0.1) });
      return;
    }
    if (fill && w <= RULE_MAX && h > w) {
      page.vertical.push({ a: y1, b: y2, at: (x1 + x2) / 2, width: Math.max(w, 0.1) });
      return;
    }
    if (w < 1 || h < 1) return;
    page.shapes.push({ x: x1, y: y1, w, h, stroked: stroke, filled: fill, fillLevel, round: false });
    if (stroke) {
      page.horizontal.push({ a: x1, b: x2, at: y1, width: strokeWidth }, { a: x1, b: x2, at: y2, width: strokeWidth });
      page.vertical.push({ a: y1, b: y2, at: x1, width: strokeWidth }, { a: y1, b: y2, at: x2, width: strokeWidth });
    }
    return;
  }
  if (!stroke) return;
  // Any other path: its straight horizontal and vertical pieces are rules.
  for (let k = 1; k < pts.length; k++) {
    const [ax, ay] = pts[k - 1]!;
    const [bx, by] = pts[k]!;
    if (Math.abs(ay - by) < EPS && Math.abs(ax - bx) >= EPS) page.horizontal.push({ a: Math.min(ax, bx), b: Math.max(ax, bx), at: (ay + by) / 2, width: strokeWidth });
    else if (Math.abs(ax - bx) < EPS && Math.abs(ay - by) >= EPS) page.vertical.push({ a: Math.min(ay, by), b: Math.max(ay, by), at: (ax + bx) / 2, width: strokeWidth });
  }
}

/**
 * Check box glyphs: ☐ □ ❑ ❒ ◻ ◽ ❏ ❐ ☑ ☒, and the box glyphs of the Wingdings fonts, which
 * have no Unicode mapping and come out in the private use area (Wingdings o q r ¨ ý þ, Wingdings 2 £).
 */
export const CHECK_GLYPHS = '\u2610\u2611\u2612\u25A1\u2751\u2752\u25FB\u25FD\u274F\u2750\uF06F\uF071\uF072\uF0A8\uF0FD\uF0FE\uF0A3';
/** At most this many texts are remembered by a `rememberedByText` question, each of at most REMEMBERED_CHARS characters. */
const REMEMBERED = 4096;
const REMEMBERED_CHARS = 128;

/**
 * A question about a text (a word, a label), its answer remembered by text: the detectors ask the
 * same question of the same texts many times (a regular expression with Unicode classes costs
 * more than a lookup). The memory is bounded: REMEMBERED texts (past that it starts again), and
 * a longer text than REMEMBERED_CHARS is asked each time.
 */
export function rememberedByText<T>(answer: (s: string) => T): (s: string) => T {
  let known = new Map<string, T>();
  return (s) => {
    if (s.length > REMEMBERED_CHARS) return answer(s);
    let found = known.get(s);
    if (found === undefined && !known.has(s)) {
      if (known.size >= REMEMBERED) known = new Map();
      found = answer(s);
      known.set(s, found);
    }
    return found as T;
  };
}

/** A test of a text, remembered by text (`rememberedByText`). */
export const rememberedTest = (test: (s: string) => boolean): ((s: string) => boolean) => rememberedByText(test);

/** Runs of underscores (fill-in lines typed as text) and check box glyphs: words of their own. */
const UNDERSCORES = new RegExp(`_{3,}|[${CHECK_GLYPHS}]`, 'g');

/**
 * A text run as words on the displayed page: split at runs of two or more spaces, and with runs
 * of three or more underscores and check box glyphs as words of their own, each placed where its
 * characters print (the run's `offsets`). Only
 * upright text (along the page's x axis after /Rotate) keeps its words' places; other text is one
 * word for the whole run.
 */
function splitWords(page: PageGraphics, item: TextRun, base: Matrix): void {
  if (!item.str || !item.str.trim()) return;
  const t = item.transform as Matrix;
  const m = multiply(t, base);
  // Along the text and up it, on the displayed page.
  const along = Math.hypot(m[0], m[1]);
  const size = Math.hypot(m[2], m[3]);
  if (!(size > 0.5) || !(along > 0)) return;
  const [ox, oy] = apply(base, t[4]!, t[5]!);
  const unitX = m[0] / along;
  const unitY = m[1] / along;
  // Advance of the whole run on the page (the run gives it in user space).
  const advance = item.width * Math.hypot(base[0], base[1]);
  const upright = Math.abs(unitY) < 0.05 && unitX > 0;
  if (!upright) {
    // Rotated text: one word around the whole run.
    const ends: Array<[number, number]> = [
      [ox, oy],
      [ox + unitX * advance, oy + unitY * advance],
      [ox + m[2], oy + m[3]],
      [ox + unitX * advance + m[2], oy + unitY * advance + m[3]],
    ];
    const xs = ends.map((p) => p[0]);
    const ys = ends.map((p) => p[1]);
    const x = Math.min(...xs);
    const y = Math.min(...ys);
    page.words.push({ str: item.str.trim(), x, y, w: Math.max(...xs) - x, h: Math.max(...ys) - y, size: Math.min(size, 72) });
    return;
  }
  const str = item.str;
  // Where a character of the run starts, on the page (the run gives it in user space).
  const scale = Math.hypot(base[0], base[1]);
  const at = (i: number) => item.offsets[i]! * scale;
  // Pieces: underscore runs apart, and text split at two or more spaces.
  const pieces: Array<{ start: number; end: number }> = [];
  let last = 0;
  const push = (start: number, end: number) => {
    const part = str.slice(start, end);
    let offset = start;
    for (const chunk of part.split(/( {2,})/)) {
      if (chunk && !/^ +$/.test(chunk)) pieces.push({ start: offset, end: offset + chunk.length });
      offset += chunk.length;
    }
  };
  for (const match of str.matchAll(UNDERSCORES)) {
    push(last, match.index);
    pieces.push({ start: match.index, end: match.index + match[0].length });
    last = match.index + match[0].length;
  }
  push(last, str.length);
  for (const { start, end } of pieces) {
    const text = str.slice(start, end);
    const lead = text.length - text.trimStart().length;
    const trail = text.length - text.trimEnd().length;
    const word = text.trim();
    if (!word) continue;
    const x = ox + at(start + lead);
    const w = at(end - trail) - at(start + lead);
    // The text line: from a little below the baseline to the top of capitals.
    page.words.push({ str: word, x, y: oy - size * 0.8, w, h: size, size: Math.min(size, 72) });
  }
}
