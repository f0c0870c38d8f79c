/**
 * A page's text read from its operator list (the `showText` operations pdf.js prepares for
 * drawing), instead of a second parse of the page with `getTextContent`: the layout detector
 * needs the operator list anyway, and `getTextContent` cost it more than the operator list itself
 * (docs/decisions.md, "Text from the operator list").
 *
 * The runs follow `getTextContent`'s rules (pdf.js 5, `evaluator.js`): a run is one font at one
 * size along one line; a gap of more than 0.6 em between one glyph's ink and the next (or a step
 * back of more than 0.2 em, or a move off the line) starts a new run; inside a run, a space glyph
 * or a gap of at least 0.102 em is one space. Unlike `getTextContent`, a run does not end at
 * marked content, an image or a form XObject (what prints decides), and every character keeps
 * where it starts (`offsets`), so a run's words and underscore runs are placed where they print,
 * not estimated from the run's width. Not read: vertical writing; right-to-left runs are kept in
 * drawing order (no bidi reordering).
 */
import { normalizeUnicode, OPS } from '../files/pdfjs.js';
import { CHECK_GLYPHS, matrixOf, multiply, type Matrix, type TextRun } from './layout-page.js';

export type { TextRun };

/** What the reader needs of a font pdf.js loaded for the page (`page.commonObjs`). */
export interface FontInfo {
  /** PostScript name, when known (to read the box glyphs of symbol fonts). */
  name?: string;
  /** Glyph space to text space along x (`fontMatrix[0]`, 0.001 for all but Type 3 fonts). */
  scale: number;
  vertical: boolean;
}

interface OperatorList {
  fnArray: ArrayLike<number>;
  argsArray: ArrayLike<unknown>;
}

const IDENTITY: Matrix = [1, 0, 0, 1, 0, 0];
const UNKNOWN_FONT: FontInfo = { scale: 0.001, vertical: false };

/** pdf.js's factors of the font size (`getTextContent`). */
const SPACE_MIN = 0.102;
const SPACE_MAX = 0.6;
const BACK_MAX = -0.2;
const OFF_LINE = 0.25;

/**
 * Box glyphs of the symbol fonts that pdf.js reads as plain letters (no Unicode mapping):
 * ZapfDingbats o p q r (❏ ❐ ❑ ❒); Wingdings o q r ¨ ý þ; Wingdings 2 £ (Wingdings boxes that come
 * out in the private use area are check glyphs already). Their other glyphs (arrows, stars,
 * bullets) are marks, not text: a bullet stands for each.
 */
const SYMBOL_BOXES: Array<[RegExp, RegExp]> = [
  [/dingbats/i, /^[opqr]$/],
  [/wingdings-?2|wingdings\s*2/i, /^[£]$/],
  // Wingdings 3 is arrows: no box glyph.
  [/wingdings-?3|wingdings\s*3/i, /^$/],
  [/wingdings/i, /^[oqr¨ýþ]$/],
];

/** The fonts of a pdf.js page, read once per id. */
export function pageFonts(page: { commonObjs: { has(id: string): boolean; get(id: string): unknown } }): (id: string) => FontInfo | undefined {
  const known = new Map<string, FontInfo | undefined>();
  return (id) => {
    if (known.has(id)) return known.get(id);
    let info: FontInfo | undefined;
    try {
      const font = page.commonObjs.has(id) ? (page.commonObjs.get(id) as { name?: string; fontMatrix?: ArrayLike<number>; vertical?: boolean } | null) : null;
      if (font) {
        const scale = Number(font.fontMatrix?.[0] ?? 0.001);
        info = { name: typeof font.name === 'string' ? font.name : undefined, scale: Number.isFinite(scale) && scale !== 0 ? scale : 0.001, vertical: font.vertical === true };
      }
    } catch {
      info = undefined;
    }
    known.set(id, info);
    return info;
  };
}

interface Glyph {
  unicode?: string;
  width?: number;
  isSpace?: boolean;
}

interface State {
  ctm: Matrix;
  font: FontInfo | undefined;
  fontId: string;
  size: number;
  charSpacing: number;
  wordSpacing: number;
  hScale: number;
  leading: number;
  rise: number;
}

interface Open {
  chars: string[];
  offsets: number[];
  /** Run origin (user space), unit direction along it, em (along) and height (up) in user space. */
  ox: number;
  oy: number;
  ux: number;
  uy: number;
  em: number;
  height: number;
  transform: Matrix;
  fontName: string;
  size: number;
  end: number;
}

/**
 * The text runs of a page's operator list (`AnnotationMode.DISABLE`: the printed page).
 * `viewport` is the page's viewport at scale 1: glyphs whose origin lies off the displayed page
 * are left out, as `getTextContent` leaves them out. `fonts` describes the page's fonts by
 * pdf.js's id (`pageFonts`). `maxChars` bounds the work and memory (past it, no more text is read).
 */
export function readText(
  viewport: { width: number; height: number; transform: number[] },
  ops: OperatorList,
  fonts: (id: string) => FontInfo | undefined,
  maxChars = 200_000,
): TextRun[] {
  const base = viewport.transform as Matrix;
  // The viewport's scale along x (a glyph's length in user space, in the viewport).
  const baseScale = Math.hypot(base[0], base[1]);
  const runs: TextRun[] = [];
  let state: State = { ctm: IDENTITY, font: undefined, fontId: '', size: 0, charSpacing: 0, wordSpacing: 0, hScale: 1, leading: 0, rise: 0 };
  const stack: State[] = [];
  let tm: Matrix = IDENTITY;
  let tlm: Matrix = IDENTITY;
  let open: Open | null = null;
  let pendingSpace = false;
  let chars = 0;
  // The symbol font's mapping of the current font, found once per font id.
  let symbolFor = '';
  let symbol: RegExp | null = null;

  const flush = () => {
    if (open && open.chars.length) {
      const str = open.chars.join('');
      const offsets = new Float64Array(open.offsets.length + 1);
      offsets.set(open.offsets);
      offsets[open.offsets.length] = open.end;
      runs.push({ str, transform: open.transform, width: open.end, offsets, fontName: open.fontName });
    }
    open = null;
    pendingSpace = false;
  };
  const moveText = (tx: number, ty: number) => {
    tlm = [tlm[0], tlm[1], tlm[2], tlm[3], tx * tlm[0] + ty * tlm[2] + tlm[4], tx * tlm[1] + ty * tlm[3] + tlm[5]];
    tm = tlm;
  };
  const num = (v: unknown, fallback = 0) => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
  const setFont = (fontId: unknown, fontSize: unknown) => {
    const id = typeof fontId === 'string' ? fontId : '';
    const size = num(fontSize);
    if (id !== state.fontId || size !== state.size) flush();
    state.fontId = id;
    // A font pdf.js could not describe still shows glyphs with their widths and Unicode.
    state.font = id ? (fonts(id) ?? UNKNOWN_FONT) : undefined;
    state.size = size;
  };

  /** Whether a glyph at (px, py), running along (ux, uy) at `size`, continues `run` (getTextContent's rules). */
  const continues = (run: Open, px: number, py: number, ux: number, uy: number, size: number) => {
    const dx = px - run.ox;
    const dy = py - run.oy;
    const gap = dx * run.ux + dy * run.uy - run.end;
    const across = dy * run.ux - dx * run.uy;
    const same = run.fontName === state.fontId && run.size === size && run.ux * ux + run.uy * uy > 0.999;
    return same && Math.abs(across) <= OFF_LINE * run.height && gap >= BACK_MAX * run.em && gap <= SPACE_MAX * run.em;
  };

  const show = (glyphs: unknown) => {
    if (!Array.isArray(glyphs)) return;
    const font = state.font;
    // A negative size turns the glyphs 180° and runs them backwards (the spacings keep their sign).
    const size = state.size;
    const scale = font?.scale ?? 0.001;
    // Text space to user space; the font size and horizontal scaling are applied by hand below.
    const m = multiply(tm, state.ctm);
    const along = Math.hypot(m[0], m[1]);
    const up = Math.hypot(m[2], m[3]);
    // Where each glyph starts along the line, in text space (PDF 32000-1, 9.4.4: tx).
    let x = 0;
    const width = (g: Glyph) => num(g.width) * size * scale * state.hScale;
    const step = (g: unknown) =>
      typeof g === 'number' ? ((-g * size) / 1000) * state.hScale : width(g as Glyph) + (state.charSpacing + ((g as Glyph).isSpace ? state.wordSpacing : 0)) * state.hScale;
    const readable = font && !font.vertical && size !== 0 && along > 0 && up > 0;
    if (!readable) {
      // No font, a size of 0, a flat matrix, or vertical writing: the glyphs only move the text matrix.
      if (!font?.vertical) {
        for (const g of glyphs) x += step(g);
        tm = [tm[0], tm[1], tm[2], tm[3], tm[4] + x * tm[0], tm[5] + x * tm[1]];
      }
      return;
    }
    if (symbolFor !== state.fontId) {
      symbolFor = state.fontId;
      // The first family that matches (Wingdings 2 before Wingdings).
      symbol = SYMBOL_BOXES.find(([name]) => font.name !== undefined && name.test(font.name))?.[1] ?? null;
    }
    const sign = size < 0 ? -1 : 1;
    const ux = (sign * m[0]) / along;
    const uy = (sign * m[1]) / along;
    const em = Math.abs(size) * along;
    const height = Math.abs(size) * up;
    for (const g of glyphs) {
      const start = x;
      x += step(g);
      if (typeof g === 'number') continue;
      const glyph = g as Glyph;
      let text = typeof glyph.unicode === 'string' ? glyph.unicode : '';
      // A space glyph separates words; a glyph with no Unicode is ink with no text (below).
      if (text && !text.trim()) {
        pendingSpace = true;
        continue;
      }
      if (chars >= maxChars) continue;
      // Where the glyph starts, in user space and on the displayed page, and how long its ink is
      // along the run (the character and word spacing after it are gap, as for getTextContent).
      const px = m[0] * start + m[2] * state.rise + m[4];
      const py = m[1] * start + m[3] * state.rise + m[5];
      const vx = base[0] * px + base[2] * py + base[4];
      const vy = base[1] * px + base[3] * py + base[5];
      const length = Math.abs(width(glyph)) * along;
      // (pdf.js's test: a turned glyph's ink runs to the left of its origin.)
      if (vx + sign * length * baseScale < 0 || vx > viewport.width || vy < 0 || vy > viewport.height) continue;
      if (!text) {
        // Ink that reads as nothing: it extends the run it continues, and starts none.
        if (open && continues(open, px, py, ux, uy, size)) open.end = Math.max(open.end, (px - open.ox) * open.ux + (py - open.oy) * open.uy + length);
        continue;
      }
      if (symbol) text = symbol.test(text) ? '\u2751' : [...text].map((c) => (CHECK_GLYPHS.includes(c) ? c : '\u2022')).join('');
      else if (text.length > 1 || text.charCodeAt(0) > 0x7f) text = normalizeUnicode(text);
      let run: Open | null = open;
      let offset = 0;
      if (run) {
        offset = (px - run.ox) * run.ux + (py - run.oy) * run.uy;
        const gap = offset - run.end;
        if (!continues(run, px, py, ux, uy, size)) {
          flush();
          run = null;
        } else if (pendingSpace || gap >= SPACE_MIN * run.em) {
          run.chars.push(' ');
          run.offsets.push(run.end);
        }
      }
      if (!run) {
        offset = 0;
        run = {
          chars: [],
          offsets: [],
          ox: px,
          oy: py,
          ux,
          uy,
          em,
          height,
          transform: [size * state.hScale * m[0], size * state.hScale * m[1], size * m[2], size * m[3], px, py],
          fontName: state.fontId,
          size,
          end: 0,
        };
        open = run;
      }
      // A ligature or a multi-letter glyph: its letters share its advance.
      const n = text.length;
      for (let k = 0; k < n; k++) {
        run.chars.push(text[k]!);
        run.offsets.push(offset + (length * k) / n);
      }
      chars += n;
      run.end = Math.max(run.end, offset + length);
      pendingSpace = false;
    }
    tm = [tm[0], tm[1], tm[2], tm[3], tm[4] + x * tm[0], tm[5] + x * tm[1]];
  };

  const { fnArray, argsArray } = ops;
  for (let i = 0; i < fnArray.length; i++) {
    const fn = fnArray[i];
    const args = argsArray[i] as unknown[] | null;
    switch (fn) {
      case OPS.save:
        stack.push(state);
        state = { ...state };
        break;
      case OPS.restore:
      case OPS.paintFormXObjectEnd:
        state = stack.pop() ?? state;
        break;
      case OPS.transform: {
        const matrix = matrixOf(args);
        if (matrix) state.ctm = multiply(matrix, state.ctm);
        break;
      }
      case OPS.paintFormXObjectBegin: {
        stack.push(state);
        state = { ...state };
        const matrix = matrixOf(args?.[0]);
        if (matrix) state.ctm = multiply(matrix, state.ctm);
        break;
      }
      case OPS.beginText:
        tm = tlm = IDENTITY;
        break;
      case OPS.setFont:
        setFont(args?.[0], args?.[1]);
        break;
      case OPS.setGState: {
        // An ExtGState may set the font too (`/Font [font size]`).
        const entries = args?.[0];
        if (Array.isArray(entries)) {
          for (const entry of entries) if (Array.isArray(entry) && entry[0] === 'Font' && Array.isArray(entry[1])) setFont(entry[1][0], entry[1][1]);
        }
        break;
      }
      case OPS.setTextMatrix: {
        // pdf.js 5 gives the matrix as one argument; older versions gave six.
        const matrix = matrixOf(args?.length === 1 ? args[0] : args);
        if (matrix) tm = tlm = matrix;
        break;
      }
      case OPS.moveText:
        moveText(num(args?.[0]), num(args?.[1]));
        break;
      case OPS.setLeadingMoveText:
        state.leading = -num(args?.[1]);
        moveText(num(args?.[0]), num(args?.[1]));
        break;
      case OPS.nextLine:
        moveText(0, -state.leading);
        break;
      case OPS.setLeading:
        state.leading = num(args?.[0]);
        break;
      case OPS.setCharSpacing:
        state.charSpacing = num(args?.[0]);
        break;
      case OPS.setWordSpacing:
        state.wordSpacing = num(args?.[0]);
        break;
      case OPS.setHScale:
        state.hScale = num(args?.[0], 100) / 100;
        break;
      case OPS.setTextRise:
        state.rise = num(args?.[0]);
        break;
      case OPS.showText:
        show(args?.[0]);
        break;
      default:
        break;
    }
  }
  flush();
  return runs;
}
