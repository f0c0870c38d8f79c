/**
 * The feature vector of each proposal (candidates.ts), for the learned scorer: generic
 * measurements only, so that what is learned transfers to forms of other sources. Its geometry
 * relative to the page, to the local font size and to its neighbours; the marks around it (rules
 * on its sides, the cell it sits in, dots, underscores, shading); the words left of and above it
 * (a colon, a number, a word of a small multilingual list of field words); the text inside it;
 * how it lines up with other proposals and how often its size repeats; its kind and class.
 * Nothing names a font, a producer, a file or a page size.
 *
 * Distances are in units of the local font size (the median size of the words near the box)
 * and capped, so that a sentinel of -1 ("none") stays apart from every real value.
 */
import { Grid, MAX_BIG, OPTION_WORD, PageModel, PROPOSAL_KINDS, WORD_GLYPH, WORD_LEADER, WORD_TEXT, WORD_UNDERSCORE, type Phrase, type Proposal } from './candidates.js';
import { type Box, type PageGraphics, type Shape } from './layout-page.js';
import { CONTEXT_REGIONS, INK_CHANNELS, PageInk } from './ink.js';

/**
 * Whole words (any of `words`, in any case) or, for `stems`, words starting so. JavaScript's `\b`
 * knows only ASCII letters (`\bимя\b` never matches), so word edges are "no letter or digit".
 */
function wordsRe(words: readonly string[], stems: readonly string[] = []): RegExp {
  const alt = (xs: readonly string[]) => xs.map((w) => w.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|');
  const whole = `(?<![\\p{L}\\p{N}])(?:${alt(words)})(?![\\p{L}\\p{N}])`;
  return new RegExp(stems.length ? `${whole}|(?<![\\p{L}\\p{N}])(?:${alt(stems)})` : whole, 'iu');
}

/** Words of the field lists, by what they ask for (several languages). */
const LEXICON: Array<[string, RegExp]> = [
  ['name', wordsRe(['name', 'names', 'nom', 'nome', 'nombre', 'apellido', 'apellidos', 'vorname', 'nachname', 'surname', 'prénom', 'prenom', 'imię', 'nazwisko', 'имя', 'фамилия', 'отчество', 'sukunimi', 'etunimi', 'namn'])],
  ['date', wordsRe(['date', 'dated', 'datum', 'fecha', 'data', 'dob', 'naissance', 'дата', 'päivämäärä', 'mm/dd', 'dd/mm', 'jj/mm', 'tt.mm'], ['birth', 'geburt'])],
  ['signature', wordsRe(['sign', 'signed', 'firma', 'podpis', 'подпись'], ['signature', 'unterschrift', 'assinatura', 'handtekening', 'allekirjoitus'])],
  ['address', wordsRe(['city', 'ville', 'ort', 'ciudad', 'zip', 'plz', 'code postal', 'state', 'pays', 'land', 'адрес', 'street', 'straße', 'strasse'], ['address', 'adresse', 'dirección', 'direccion', 'endereço', 'anschrift', 'postal', 'country'])],
  ['phone', wordsRe(['tel', 'tel.', 'fax', 'cell', 'mobile'], ['phone', 'telefon', 'téléphone', 'teléfono', 'telefone', 'телефон', 'puhelin'])],
  ['email', wordsRe(['courriel', 'correo', 'почта'], ['e-mail', 'email'])],
  ['number', /(?<![\p{L}\p{N}])(?:no\.|nr\.?|id|ssn|ein|sum)(?![\p{L}\p{N}])|number|numéro|numero|número|nummer|номер|amount|total|betrag|montant|importe|[$€£%]/iu],
  ['option', /^(yes|no|oui|non|ja|nein|s[ií]|n[ãa]o|да|нет|tak|nie|kyllä|ei|n\/a|other|autre|andere|otro|male|female|m|f)[.:]?$/iu],
  ['office', /office use|for official|use only|réservé|reserved|nur für|amtlich|do not write|leave blank/iu],
];

const KINDS = PROPOSAL_KINDS;

/**
 * Whether a text ends with one of `colons` and then only white space: `/[:：]\s*$/` (`trimEnd`
 * removes what `\s` matches), without a regular expression run per proposal.
 */
const endsWith = (s: string, colons: string): boolean => {
  const t = s.trimEnd();
  return t.length > 0 && colons.includes(t[t.length - 1]!);
};
const CLASSES = ['text', 'checkbox', 'signature'] as const;

const textFeatures = (prefix: string) => [
  `${prefix}_exists`,
  `${prefix}_gap`,
  `${prefix}_colon`,
  `${prefix}_chars`,
  `${prefix}_words`,
  `${prefix}_number`,
  `${prefix}_size_ratio`,
  ...LEXICON.map(([k]) => `${prefix}_is_${k}`),
];

export const FEATURE_NAMES: readonly string[] = [
  // Geometry on the page.
  'x',
  'y',
  'x2',
  'y2',
  'w_page',
  'h_page',
  'page_landscape',
  // Geometry in font sizes.
  'w_font',
  'h_font',
  'aspect_log',
  'local_size_ratio',
  'square_like',
  // Rules around it.
  'rule_bottom_cover',
  'rule_bottom_dist',
  'rule_top_cover',
  'rule_top_dist',
  'rule_left_cover',
  'rule_left_dist',
  'rule_right_cover',
  'rule_right_dist',
  'rule_bottom_thick',
  'sides_closed',
  'shape_iou',
  'shape_inside',
  'shaded_share',
  'white_fill_share',
  // What is inside it.
  'text_inside_words',
  'text_inside_share',
  'text_inside_chars',
  'leaders_inside',
  'underscore_share',
  'glyph_inside',
  // Words around it.
  ...textFeatures('left'),
  ...textFeatures('above'),
  'right_gap',
  'right_is_option',
  'right_colon',
  'below_gap',
  'label_chars',
  'label_colon',
  // The cell it sits in.
  'cell_exists',
  'cell_w_share',
  'cell_h_share',
  'cell_touch_bottom',
  'cell_touch_top',
  'cell_touch_left',
  'cell_touch_right',
  'cell_h_font',
  'cell_text_words',
  // Other proposals.
  'overlap_count',
  'max_iou',
  'iou_largest',
  'contained_in',
  'contains',
  'row_aligned',
  'col_aligned',
  'same_size',
  'same_size_same_kind',
  // The page.
  'page_words',
  'page_rules',
  'page_proposals',
  // Kind and class.
  ...KINDS.map((k) => `kind_${k}`),
  ...CLASSES.map((c) => `cls_${c}`),
  // What the page prints around it, coarsely (PageInk): per region, per kind of mark.
  ...CONTEXT_REGIONS.flatMap((r) => INK_CHANNELS.map((c) => `ctx_${r}_${c}`)),
];

const overlap = (a1: number, a2: number, b1: number, b2: number) => Math.max(0, Math.min(a2, b2) - Math.max(a1, b1));
const clamp = (v: number, lo: number, hi: number) => (Number.isFinite(v) ? Math.max(lo, Math.min(hi, v)) : lo);
const area = (b: Box) => Math.max(1e-6, b.w * b.h);

function iou(a: Box, b: Box): number {
  const inter = overlap(a.x, a.x + a.w, b.x, b.x + b.w) * overlap(a.y, a.y + a.h, b.y, b.y + b.h);
  return inter <= 0 ? 0 : inter / (area(a) + area(b) - inter);
}

/** One row per proposal, in the same order, FEATURE_NAMES.length finite numbers each. */
export function proposalFeatures(page: PageGraphics, proposals: readonly Proposal[]): Float32Array[] {
  return featuresWith(new PageModel(page), proposals);
}

/** The features of proposals of a page already read into a PageModel: a row per proposal (views of one `featureMatrix`). */
export function featuresWith(model: PageModel, proposals: readonly Proposal[]): Float32Array[] {
  return featureRows(featureMatrix(model, proposals), proposals.length);
}

/** The rows of a feature matrix of `count` proposals, each a view of its part. */
export function featureRows(matrix: Float32Array, count: number): Float32Array[] {
  const N = FEATURE_NAMES.length;
  return Array.from({ length: count }, (_, i) => matrix.subarray(i * N, (i + 1) * N));
}

/**
 * A proposal's row while it is written: the values in double precision, `at` where the next one
 * goes. The writers store into `values` directly (a number passed to a function that is not
 * inlined would be boxed: a heap allocation a value), and `copyTo` puts the row in the matrix.
 */
class RowWriter {
  readonly values = new Float64Array(FEATURE_NAMES.length);
  at = 0;

  /** The row as row `index` of the matrix: as float32 (as the model reads it), a value that is not finite as -1. */
  copyTo(matrix: Float32Array, index: number): void {
    if (this.at !== this.values.length) throw new Error(`features: ${this.at} values for ${this.values.length} names`);
    const values = this.values;
    const start = index * values.length;
    // Each value stored as float32 (rounded as the store rounds it), or -1 when it is not finite
    // (`v - v` is 0 for every finite v, NaN for the others). One loop: faster than `set` from a
    // Float64Array (a conversion V8 does element by element outside the compiled code) and a
    // second loop for the values that are not finite.
    for (let k = 0; k < values.length; k++) {
      const v = values[k]!;
      matrix[start + k] = v - v === 0 ? v : -1;
    }
    this.at = 0;
  }
}

/**
 * How many of the values in `keys` equal each one (itself included), by an open-addressing hash
 * table of the distinct values (the keys are whole numbers).
 */
function countEqual(keys: Float64Array): Int32Array {
  let size = 16;
  while (size < keys.length * 2) size *= 2;
  const mask = size - 1;
  const table = new Float64Array(size);
  const tally = new Int32Array(size);
  const slot = new Int32Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    let h = (key % size) & mask;
    while (tally[h]! > 0 && table[h] !== key) h = (h + 1) & mask;
    table[h] = key;
    tally[h]!++;
    slot[i] = h;
  }
  const counts = new Int32Array(keys.length);
  for (let i = 0; i < keys.length; i++) counts[i] = tally[slot[i]!]!;
  return counts;
}

/**
 * The features of proposals of a page already read into a PageModel: `FEATURE_NAMES.length`
 * float32 values a proposal, the rows laid end to end in the proposals' order.
 */
export function featureMatrix(model: PageModel, proposals: readonly Proposal[]): Float32Array {
  const page = model.page;
  const W = Math.max(1, page.width);
  const H = Math.max(1, page.height);
  const N = FEATURE_NAMES.length;
  const matrix = new Float32Array(proposals.length * N);
  if (!proposals.length) return matrix;
  const neighbours = new Neighbours(proposals, W, H);
  const cells = proposals.filter((p) => p.kind === 'cell-full');
  const cellGrid = new Grid(cells, 24, W, H);
  const shapes = page.shapes.filter((s) => Number.isFinite(s.x + s.y + s.w + s.h));
  const shapeGrid = new Grid(shapes, 24, W, H);
  // Alignment and repetition: how many proposals share the rounded bottom edge and height, the
  // left edge and width, the size, the size and kind (numeric keys, counted once).
  const b2 = (v: number) => Math.round(v / 2) + 50_000;
  const b15 = (v: number) => Math.round(v / 1.5) + 50_000;
  const keys = [0, 1, 2, 3].map(() => new Float64Array(proposals.length));
  proposals.forEach((p, i) => {
    const size = b15(p.w) * 200_003 + b15(p.h);
    keys[0]![i] = b2(p.y + p.h) * 200_003 + b2(p.h);
    keys[1]![i] = b2(p.x) * 200_003 + b2(p.w);
    keys[2]![i] = size;
    keys[3]![i] = size * 64 + KINDS.indexOf(p.kind);
  });
  const [bottoms, lefts, sizes, sizeKinds] = keys.map(countEqual) as [Int32Array, Int32Array, Int32Array, Int32Array];
  const sizes0 = new LocalSize(model);
  const facts = new PhraseFacts(model.phrases);
  const cellWords = new Map<Proposal, number>();
  const pageWords = model.words.length;
  const pageRules = model.horizontal.length + model.vertical.length;
  const ink = new PageInk(model);
  const row = new RowWriter();
  const v = row.values;
  proposals.forEach((p, index) => {
    const local = sizes0.at(p);
    let i = 0;
    v[i++] = p.x / W;
    v[i++] = p.y / H;
    v[i++] = (p.x + p.w) / W;
    v[i++] = (p.y + p.h) / H;
    v[i++] = p.w / W;
    v[i++] = p.h / H;
    v[i++] = W > H ? 1 : 0;
    v[i++] = clamp(p.w / local, 0, 100);
    v[i++] = clamp(p.h / local, 0, 50);
    v[i++] = clamp(Math.log(Math.max(p.w, 0.1) / Math.max(p.h, 0.1)), -5, 5);
    v[i++] = local / model.lineHeight;
    v[i++] = Math.abs(p.w - p.h) <= 0.2 * Math.max(p.w, p.h) ? 1 : 0;
    row.at = i;
    pushRules(model, p, local, row);
    pushShapes(shapeGrid, p, row);
    pushInside(model, p, row);
    pushText(left(model, p), p, local, 'left', facts, row);
    pushText(above(model, p), p, local, 'above', facts, row);
    const r = right(model, p);
    i = row.at;
    v[i++] = r >= 0 ? clamp((model.phrases[r]!.x - (p.x + p.w)) / local, -2, 40) : -1;
    v[i++] = r >= 0 ? facts.of(r)[OPTION_AT]! : 0;
    v[i++] = r >= 0 ? facts.of(r)[COLON_AT]! : 0;
    row.at = i;
    pushBelowGap(model, p, local, row);
    i = row.at;
    v[i++] = Math.min(p.label.length, 80);
    v[i++] = endsWith(p.label, ':：') ? 1 : 0;
    row.at = i;
    pushCell(model, cellGrid, cellWords, p, local, row);
    neighbours.push(index, row);
    i = row.at;
    v[i++] = Math.min(bottoms[index]!, 50) - 1;
    v[i++] = Math.min(lefts[index]!, 50) - 1;
    v[i++] = Math.min(sizes[index]!, 100) - 1;
    v[i++] = Math.min(sizeKinds[index]!, 100) - 1;
    v[i++] = Math.min(pageWords, 6000) / 1000;
    v[i++] = Math.min(pageRules, 6000) / 1000;
    v[i++] = Math.min(proposals.length, 5000) / 1000;
    for (let k = 0; k < KINDS.length; k++) v[i++] = p.kind === KINDS[k] ? 1 : 0;
    for (let c = 0; c < CLASSES.length; c++) v[i++] = p.cls === CLASSES[c] ? 1 : 0;
    row.at = ink.around(p, v, i);
    row.copyTo(matrix, index);
  });
  return matrix;
}


/**
 * The median size of the text words around each point of the page: per cell of a coarse grid,
 * the median over the words of its 3 × 3 neighbourhood (the page's line height where none).
 */
class LocalSize {
  private readonly step = 40;
  private readonly cols: number;
  private readonly rows: number;
  private readonly median: Float64Array;

  constructor(model: PageModel) {
    const page = model.page;
    this.cols = Math.max(1, Math.min(200, Math.ceil(page.width / this.step)));
    this.rows = Math.max(1, Math.min(200, Math.ceil(page.height / this.step)));
    const bins: number[][] = Array.from({ length: this.cols * this.rows }, () => []);
    for (const w of model.text) bins[this.key(w.x + w.w / 2, w.y + w.h / 2)]!.push(w.size);
    this.median = new Float64Array(this.cols * this.rows).fill(model.lineHeight);
    for (let r = 0; r < this.rows; r++)
      for (let c = 0; c < this.cols; c++) {
        const sizes: number[] = [];
        for (let dr = -1; dr <= 1; dr++)
          for (let dc = -1; dc <= 1; dc++) {
            const rr = r + dr;
            const cc = c + dc;
            if (rr >= 0 && rr < this.rows && cc >= 0 && cc < this.cols) for (const v of bins[rr * this.cols + cc]!) sizes.push(v);
          }
        if (sizes.length) {
          sizes.sort((a, b) => a - b);
          this.median[r * this.cols + c] = clamp(sizes[Math.floor(sizes.length / 2)]!, 4, 30);
        }
      }
  }

  private key(x: number, y: number): number {
    const c = Math.max(0, Math.min(this.cols - 1, Math.floor(x / this.step)));
    const r = Math.max(0, Math.min(this.rows - 1, Math.floor(y / this.step)));
    return r * this.cols + c;
  }

  at(b: Box): number {
    return this.median[this.key(b.x + b.w / 2, b.y + b.h / 2)]!;
  }
}

/**
 * For each side: how much of the side a rule covers (0..1) within 3 pt of it, and the distance
 * to the nearest rule beyond or at it covering half the side (in font sizes, -1 when none within 4).
 */
function pushRules(model: PageModel, p: Proposal, local: number, row: RowWriter): void {
  const near = 3;
  const reach = local * 4;
  const x2 = p.x + p.w;
  const y2 = p.y + p.h;
  // One lookup a side: the cover at the side, and the nearest rule beyond it covering half of it.
  let bottomCover = 0;
  let bottomThick = 0;
  let below = Infinity;
  for (let i = 0, n = model.hGrid.scan(p.x, y2 - near, x2, y2 + reach), hits = model.hGrid.hits; i < n; i++) {
    const r = hits[i]!;
    const c = overlap(r.seg.a, r.seg.b, p.x, x2) / Math.max(p.w, 1e-6);
    if (Math.abs(r.seg.at - y2) <= near && c > bottomCover) {
      bottomCover = c;
      bottomThick = r.seg.width;
    }
    if (r.seg.at >= y2 - near && c >= 0.5) below = Math.min(below, r.seg.at);
  }
  let topCover = 0;
  let above = -Infinity;
  for (let i = 0, n = model.hGrid.scan(p.x, p.y - reach, x2, p.y + near), hits = model.hGrid.hits; i < n; i++) {
    const r = hits[i]!;
    const c = overlap(r.seg.a, r.seg.b, p.x, x2) / Math.max(p.w, 1e-6);
    if (Math.abs(r.seg.at - p.y) <= near && c > topCover) topCover = c;
    if (r.seg.at <= p.y + near && c >= 0.5) above = Math.max(above, r.seg.at);
  }
  let leftCover = 0;
  let leftWall = -Infinity;
  for (let i = 0, n = model.vGrid.scan(p.x - reach, p.y, p.x + near, y2), hits = model.vGrid.hits; i < n; i++) {
    const r = hits[i]!;
    const c = overlap(r.seg.a, r.seg.b, p.y, y2) / Math.max(p.h, 1e-6);
    if (Math.abs(r.seg.at - p.x) <= near && c > leftCover) leftCover = c;
    if (r.seg.at <= p.x + near && c >= 0.5) leftWall = Math.max(leftWall, r.seg.at);
  }
  let rightCover = 0;
  let rightWall = Infinity;
  for (let i = 0, n = model.vGrid.scan(x2 - near, p.y, x2 + reach, y2), hits = model.vGrid.hits; i < n; i++) {
    const r = hits[i]!;
    const c = overlap(r.seg.a, r.seg.b, p.y, y2) / Math.max(p.h, 1e-6);
    if (Math.abs(r.seg.at - x2) <= near && c > rightCover) rightCover = c;
    if (r.seg.at >= x2 - near && c >= 0.5) rightWall = Math.min(rightWall, r.seg.at);
  }
  bottomCover = Math.min(1, bottomCover);
  topCover = Math.min(1, topCover);
  leftCover = Math.min(1, leftCover);
  rightCover = Math.min(1, rightCover);
  const v = row.values;
  let i = row.at;
  v[i++] = bottomCover;
  v[i++] = Number.isFinite(below) ? (below - y2) / local : -1;
  v[i++] = topCover;
  v[i++] = Number.isFinite(above) ? (p.y - above) / local : -1;
  v[i++] = leftCover;
  v[i++] = Number.isFinite(leftWall) ? (p.x - leftWall) / local : -1;
  v[i++] = rightCover;
  v[i++] = Number.isFinite(rightWall) ? (rightWall - x2) / local : -1;
  v[i++] = Math.min(bottomThick, 5);
  v[i++] = (bottomCover > 0.7 ? 1 : 0) + (topCover > 0.7 ? 1 : 0) + (leftCover > 0.7 ? 1 : 0) + (rightCover > 0.7 ? 1 : 0);
  row.at = i;
}

/** The drawn shape most like the box (IoU), whether a shape holds it, and shading over it. */
function pushShapes(grid: Grid<Shape>, p: Proposal, row: RowWriter): void {
  let best = 0;
  let inside = 0;
  let shaded = 0;
  let white = 0;
  for (let i = 0, n = grid.scan(p.x, p.y, p.x + p.w, p.y + p.h), hits = grid.hits; i < n; i++) {
    const s = hits[i]!;
    best = Math.max(best, iou(s, p));
    if (s.x <= p.x + 1 && s.y <= p.y + 1 && s.x + s.w >= p.x + p.w - 1 && s.y + s.h >= p.y + p.h - 1 && s.w * s.h < 4 * area(p)) inside = 1;
    if (s.filled) {
      const cover = (overlap(s.x, s.x + s.w, p.x, p.x + p.w) * overlap(s.y, s.y + s.h, p.y, p.y + p.h)) / area(p);
      if (s.fillLevel < 0.93) shaded += cover;
      else white += cover;
    }
  }
  const v = row.values;
  let i = row.at;
  v[i++] = best;
  v[i++] = inside;
  v[i++] = Math.min(1, shaded);
  v[i++] = Math.min(1, white);
  row.at = i;
}

/** Text, dot leaders, underscores and box glyphs inside the box. */
function pushInside(model: PageModel, p: Proposal, row: RowWriter): void {
  let words = 0;
  let textArea = 0;
  let chars = 0;
  let leaders = 0;
  let underscore = 0;
  let glyph = 0;
  const { hits, hitIndexes } = model.wordGrid;
  for (let i = 0, n = model.wordGrid.scan(p.x, p.y, p.x + p.w, p.y + p.h); i < n; i++) {
    const w = hits[i]!;
    const inter = overlap(w.x, w.x + w.w, p.x, p.x + p.w) * overlap(w.y, w.y + w.h, p.y, p.y + p.h);
    if (inter < 0.3 * w.w * w.h) continue;
    const kind = model.wordKind[hitIndexes[i]!];
    if (kind === WORD_GLYPH) glyph = 1;
    else if (kind === WORD_UNDERSCORE) underscore += overlap(w.x, w.x + w.w, p.x, p.x + p.w) / Math.max(p.w, 1e-6);
    else if (kind === WORD_LEADER) leaders += w.str.length;
    else {
      words++;
      textArea += inter;
      chars += w.str.length;
    }
  }
  const v = row.values;
  let i = row.at;
  v[i++] = Math.min(words, 50);
  v[i++] = Math.min(1, textArea / area(p));
  v[i++] = Math.min(chars, 200);
  v[i++] = Math.min(leaders, 100);
  v[i++] = Math.min(1, underscore);
  v[i++] = glyph;
  row.at = i;
}

/** The phrase nearest on the box's left, on the line through its middle (or its bottom line): its index in `model.phrases`, -1 when none. */
function left(model: PageModel, p: Proposal): number {
  let best: Phrase | null = null;
  let found = -1;
  const mid = p.y + p.h / 2;
  const low = p.y + p.h - Math.min(p.h, 14) / 2;
  const { hits, hitIndexes } = model.phraseGrid;
  for (let i = 0, n = model.phraseGrid.scan(p.x - 250, p.y - 2, p.x + 2, p.y + p.h + 2); i < n; i++) {
    const ph = hits[i]!;
    if (ph.x + ph.w > p.x + 2) continue;
    const m = ph.y + ph.h / 2;
    if (Math.abs(m - mid) > Math.max(ph.h * 0.6, p.h * 0.5) && Math.abs(m - low) > ph.h * 0.6) continue;
    if (!best || ph.x + ph.w > best.x + best.w) {
      best = ph;
      found = hitIndexes[i]!;
    }
  }
  return found;
}

/** The nearest phrase above the box, overlapping it in x, within a few lines: its index, -1 when none. */
function above(model: PageModel, p: Proposal): number {
  let best: Phrase | null = null;
  let found = -1;
  const { hits, hitIndexes } = model.phraseGrid;
  for (let i = 0, n = model.phraseGrid.scan(p.x - 2, p.y - 60, p.x + p.w, p.y + 2); i < n; i++) {
    const ph = hits[i]!;
    if (ph.y + ph.h > p.y + 2 || overlap(ph.x, ph.x + ph.w, p.x - 2, p.x + p.w) <= 0) continue;
    if (!best || ph.y + ph.h > best.y + best.h) {
      best = ph;
      found = hitIndexes[i]!;
    }
  }
  return found;
}

/** The nearest phrase right of the box on its line: its index, -1 when none. */
function right(model: PageModel, p: Proposal): number {
  let best: Phrase | null = null;
  let found = -1;
  const mid = p.y + p.h / 2;
  const { hits, hitIndexes } = model.phraseGrid;
  for (let i = 0, n = model.phraseGrid.scan(p.x + p.w - 2, p.y, p.x + p.w + 250, p.y + p.h); i < n; i++) {
    const ph = hits[i]!;
    if (ph.x < p.x + p.w - 2 || Math.abs(ph.y + ph.h / 2 - mid) > Math.max(ph.h * 0.6, p.h * 0.5)) continue;
    if (!best || ph.x < best.x) {
      best = ph;
      found = hitIndexes[i]!;
    }
  }
  return found;
}

/** Gap to the nearest text under the box, in font sizes (-1 when none within 5). */
function pushBelowGap(model: PageModel, p: Proposal, local: number, row: RowWriter): void {
  let best = Infinity;
  const { hits, hitIndexes } = model.wordGrid;
  for (let i = 0, n = model.wordGrid.scan(p.x, p.y + p.h - 1, p.x + p.w, p.y + p.h + local * 5); i < n; i++) {
    const w = hits[i]!;
    if (model.wordKind[hitIndexes[i]!] !== WORD_TEXT || w.y < p.y + p.h - 1) continue;
    best = Math.min(best, w.y - (p.y + p.h));
  }
  row.values[row.at++] = Number.isFinite(best) ? best / local : -1;
}

/** Where `PhraseFacts.of` puts, after the text's own features, whether its first word is an option word and whether it ends with a colon. */
const OPTION_AT = 4 + LEXICON.length;
const COLON_AT = OPTION_AT + 1;

/**
 * What the features read of a phrase's text, worked out once a page for each phrase met (by its
 * index in the page model's `phrases`): `pushText`'s values of the text (a colon at its end, its
 * length, its words, whether it is a number, each word list), then, read of a phrase on a box's
 * right, whether its first word is an option word and whether it ends with an ASCII colon.
 */
class PhraseFacts {
  private readonly known: Array<number[] | undefined>;

  constructor(readonly phrases: readonly Phrase[]) {
    this.known = new Array<number[] | undefined>(phrases.length);
  }

  of(index: number): number[] {
    let facts = this.known[index];
    if (!facts) {
      const ph = this.phrases[index]!;
      const str = ph.str.trim();
      facts = [/[:：]$/.test(str) ? 1 : 0, Math.min(str.length, 120), Math.min(ph.words.length, 30), /^[\d\s.,()\-/$€£%a-z]{0,4}$/i.test(str) && /\d/.test(str) ? 1 : 0];
      for (const [, re] of LEXICON) facts.push(re.test(str) ? 1 : 0);
      facts.push(OPTION_WORD.test(ph.words[0]!.str) ? 1 : 0, endsWith(ph.str, ':') ? 1 : 0);
      this.known[index] = facts;
    }
    return facts;
  }
}

function pushText(index: number, p: Proposal, local: number, side: 'left' | 'above', facts: PhraseFacts, row: RowWriter): void {
  const v = row.values;
  let i = row.at;
  if (index < 0) {
    v[i++] = 0;
    v[i++] = -1;
    for (let k = 0; k < 5 + LEXICON.length; k++) v[i++] = 0;
    row.at = i;
    return;
  }
  const ph = facts.phrases[index]!;
  const gap = side === 'left' ? p.x - (ph.x + ph.w) : p.y - (ph.y + ph.h);
  const own = facts.of(index);
  v[i++] = 1;
  v[i++] = clamp(gap / local, -2, 40);
  for (let k = 0; k < 4; k++) v[i++] = own[k]!;
  v[i++] = ph.size / local;
  for (let k = 4; k < OPTION_AT; k++) v[i++] = own[k]!;
  row.at = i;
}

/** The cell features of a box in no cell. */
const NO_CELL = [0, -1, -1, 0, 0, 0, 0, -1, -1];

/** The smallest whole cell holding the box, and where the box sits in it. */
function pushCell(model: PageModel, grid: Grid<Proposal>, cellWords: Map<Proposal, number>, p: Proposal, local: number, row: RowWriter): void {
  let cell: Proposal | null = null;
  for (let i = 0, n = grid.scan(p.x + p.w / 2, p.y + p.h / 2, p.x + p.w / 2, p.y + p.h / 2), hits = grid.hits; i < n; i++) {
    const c = hits[i]!;
    if (c.x > p.x + 1.5 || c.y > p.y + 1.5 || c.x + c.w < p.x + p.w - 1.5 || c.y + c.h < p.y + p.h - 1.5) continue;
    if (!cell || c.w * c.h < cell.w * cell.h) cell = c;
  }
  if (!cell) {
    row.values.set(NO_CELL, row.at);
    row.at += NO_CELL.length;
    return;
  }
  const t = 2;
  let words = cellWords.get(cell);
  if (words === undefined) cellWords.set(cell, (words = model.wordsIn(cell, 0.5).length));
  const v = row.values;
  let i = row.at;
  v[i++] = 1;
  v[i++] = p.w / cell.w;
  v[i++] = p.h / cell.h;
  v[i++] = Math.abs(p.y + p.h - (cell.y + cell.h)) <= t ? 1 : 0;
  v[i++] = Math.abs(p.y - cell.y) <= t ? 1 : 0;
  v[i++] = Math.abs(p.x - cell.x) <= t ? 1 : 0;
  v[i++] = Math.abs(p.x + p.w - (cell.x + cell.w)) <= t ? 1 : 0;
  v[i++] = clamp(cell.h / local, 0, 50);
  v[i++] = Math.min(words, 50);
  row.at = i;
}

/**
 * The proposals around each one, p: those that hold its centre and those whose centre it holds
 * (every box that contains it, is contained in it or overlaps it much is one of them; looking
 * them up by centre keeps the cost per box small whatever the sizes of the boxes). Of those that
 * overlap it: how many, the largest IoU, the IoU with the largest of them (the first met of equal
 * size), how many hold it and how many it holds.
 *
 * As first written, each box looked up the boxes holding its centre (a grid of the boxes, where
 * the boxes covering more than BIG_CELLS cells come first and only MAX_BIG of them are indexed)
 * and then the centres inside it (a grid of the centres). Here only the second lookup is made:
 * "q's centre is in p" found from p's side also says whether p's centre is in q, so each pair is
 * measured once and counted for both boxes, with the same outcome. "The first met" is kept as
 * it was: the rank of q in p's lookups (held centre first: big boxes, then the others, by index;
 * then centres inside, by the centres grid's cell, then index) breaks ties of size.
 */
class Neighbours {
  private readonly count: Int32Array;
  private readonly maxIou: Float64Array;
  private readonly largestArea: Float64Array;
  private readonly largestRank: Float64Array;
  private readonly largestIou: Float64Array;
  private readonly containedIn: Int32Array;
  private readonly contains: Int32Array;
  /** Each proposal's edges (x, y, x + w, y + h) and size (w × h), as the box tests read them. */
  private readonly x1: Float64Array;
  private readonly y1: Float64Array;
  private readonly x2: Float64Array;
  private readonly y2: Float64Array;
  private readonly size: Float64Array;

  constructor(proposals: readonly Proposal[], width: number, height: number) {
    const n = proposals.length;
    this.count = new Int32Array(n);
    this.maxIou = new Float64Array(n);
    this.largestArea = new Float64Array(n).fill(-1);
    this.largestRank = new Float64Array(n);
    this.largestIou = new Float64Array(n);
    this.containedIn = new Int32Array(n);
    this.contains = new Int32Array(n);
    // Numbers in typed arrays: the pairs' loop below reads them many times a box.
    const x1 = (this.x1 = new Float64Array(n));
    const y1 = (this.y1 = new Float64Array(n));
    const x2 = (this.x2 = new Float64Array(n));
    const y2 = (this.y2 = new Float64Array(n));
    const size = (this.size = new Float64Array(n));
    const cx = new Float64Array(n);
    const cy = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const p = proposals[i]!;
      x1[i] = p.x;
      y1[i] = p.y;
      x2[i] = p.x + p.w;
      y2[i] = p.y + p.h;
      size[i] = p.w * p.h;
      cx[i] = p.x + p.w / 2;
      cy[i] = p.y + p.h / 2;
    }
    // The cells of a grid of the centres (an empty grid of the same page and size: its cells and
    // which boxes it would keep apart as big): a centre is in one cell, or in none when not a
    // number. The centres are filed here cell by cell in arrays of their own, and read in the order
    // a scan of that grid meets them (by cell, then index).
    const centres = new Grid<Box>([], 24, width, height);
    const cells = centres.cols * centres.rows;
    const centreCell = new Int32Array(n);
    const start = new Int32Array(cells + 1);
    for (let i = 0; i < n; i++) {
      const c = centres.cellOf(cx[i]!, cy[i]!);
      centreCell[i] = Number.isNaN(c) ? -1 : c;
      if (centreCell[i]! >= 0) start[centreCell[i]! + 1]!++;
    }
    for (let c = 1; c <= cells; c++) start[c]! += start[c - 1]!;
    const order = new Int32Array(start[cells]!);
    const ox = new Float64Array(order.length);
    const oy = new Float64Array(order.length);
    const next = start.slice(0, cells);
    for (let i = 0; i < n; i++) {
      if (centreCell[i]! < 0) continue;
      const k = next[centreCell[i]!]!++;
      order[k] = i;
      ox[k] = cx[i]!;
      oy[k] = cy[i]!;
    }
    // Whether a box would have been found by the lookup of the boxes holding a centre (a grid of
    // the same size as the centres'), and where it came in that lookup.
    const found = new Uint8Array(n);
    const heldRank = new Float64Array(n);
    let bigs = 0;
    proposals.forEach((q, i) => {
      const big = centres.isBig(q);
      found[i] = !big || bigs++ < MAX_BIG ? 1 : 0;
      heldRank[i] = big ? i : n + i;
    });
    const cols = centres.cols;
    for (let pi = 0; pi < n; pi++) {
      const px1 = x1[pi]!;
      const py1 = y1[pi]!;
      const px2 = x2[pi]!;
      const py2 = y2[pi]!;
      // (The grid's scan finds nothing in a box whose far edges are before its near ones, or of a coordinate that is not a number.)
      if (!(px2 >= px1 && py2 >= py1)) continue;
      const pcx = cx[pi]!;
      const pcy = cy[pi]!;
      const from = centres.cellOf(px1, py1);
      const to = centres.cellOf(px2, py2);
      const c1 = from % cols;
      const c2 = to % cols;
      for (let base = from - c1; base <= to - c2; base += cols) {
        for (let k = start[base + c1]!, end = start[base + c2 + 1]!; k < end; k++) {
          // q's centre is in p: q is p's neighbour.
          if (!(ox[k]! >= px1 && ox[k]! <= px2 && oy[k]! >= py1 && oy[k]! <= py2)) continue;
          const qi = order[k]!;
          if (qi === pi) continue;
          const mutual = x1[qi]! <= pcx && x2[qi]! >= pcx && y1[qi]! <= pcy && y2[qi]! >= pcy;
          // p's centre is in q too: q's own lookup finds p; the pair is measured from the lower index.
          if (mutual && qi < pi) continue;
          // IoU, as `iou` measures it (0 when the boxes do not overlap); none, no neighbour.
          const inter = overlap(px1, px2, x1[qi]!, x2[qi]!) * overlap(py1, py2, y1[qi]!, y2[qi]!);
          const v = inter <= 0 ? 0 : inter / (Math.max(1e-6, size[pi]!) + Math.max(1e-6, size[qi]!) - inter);
          if (v <= 0) continue;
          // q's rank among p's neighbours: met holding p's centre, or as a centre inside p.
          this.meet(pi, qi, v, mutual && found[qi] ? heldRank[qi]! : 2 * n + centreCell[qi]! * n + qi);
          // p is q's neighbour when p's centre is in q, or when q's centre is in p and p was found holding it.
          if (mutual) this.meet(qi, pi, v, found[pi] ? heldRank[pi]! : 2 * n + centreCell[pi]! * n + pi);
          else if (found[pi]) this.meet(qi, pi, v, heldRank[pi]!);
        }
      }
    }
  }

  /** Counts q, at IoU `v` with p, as p's neighbour met at `rank` in p's lookups. */
  private meet(pi: number, qi: number, v: number, rank: number): void {
    this.count[pi]!++;
    if (v > this.maxIou[pi]!) this.maxIou[pi] = v;
    const size = this.size[qi]!;
    if (size > this.largestArea[pi]! || (size === this.largestArea[pi] && rank < this.largestRank[pi]!)) {
      this.largestArea[pi] = size;
      this.largestRank[pi] = rank;
      this.largestIou[pi] = v;
    }
    const { x1, y1, x2, y2 } = this;
    if (x1[qi]! <= x1[pi]! + 1 && y1[qi]! <= y1[pi]! + 1 && x2[qi]! >= x2[pi]! - 1 && y2[qi]! >= y2[pi]! - 1) this.containedIn[pi]!++;
    else if (x1[pi]! <= x1[qi]! + 1 && y1[pi]! <= y1[qi]! + 1 && x2[pi]! >= x2[qi]! - 1 && y2[pi]! >= y2[qi]! - 1) this.contains[pi]!++;
  }

  push(index: number, row: RowWriter): void {
    const v = row.values;
    let i = row.at;
    v[i++] = Math.min(this.count[index]!, 100);
    v[i++] = this.maxIou[index]!;
    v[i++] = this.largestArea[index]! >= 0 ? this.largestIou[index]! : 0;
    v[i++] = Math.min(this.containedIn[index]!, 50);
    v[i++] = Math.min(this.contains[index]!, 50);
    row.at = i;
  }
}
