/**
 * Layout detection on the corpus, as ../shared/corpus/README.md defines it: every form with its
 * widgets and /AcroForm stripped, detected by the pipeline a parse job runs (only the layout
 * detector can find anything on a stripped page), and scored against the truth widgets.
 *
 * Prints, at IoU ≥ 0.5 and ≥ 0.3: precision, recall and F1 overall and per class, type accuracy
 * over matched pairs, and a row per file; the confidence calibration table (share of boxes right
 * per confidence band); and speed: the whole detection against pdf.js alone reading the same
 * pages' text and operator lists, side by side, alternating, medians of BENCH_ROUNDS rounds.
 *
 *   npm run bench:detect
 */
import * as pdfjs from 'pdfjs-dist/legacy/build/pdf.mjs';
import { readPage, type TextContentItem } from '../src/detect/layout-page.js';
import { detectFields } from '../src/detect/pipeline.js';
import type { DetectedField } from '../src/detect/types.js';
import { add, CLASSES, emptyCounts, f1, precision, recall, score, strippedCorpus, typeAccuracy, type Counts, type StrippedForm } from './corpus.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const THRESHOLDS = [0.5, 0.3] as const;

const open = (bytes: Uint8Array) => pdfjs.getDocument({ data: bytes.slice(), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;

async function detect(form: StrippedForm): Promise<DetectedField[]> {
  const doc = await open(form.bytes);
  try {
    return (await detectFields(doc)).fields;
  } finally {
    await doc.destroy();
  }
}

/** pdf.js alone: open the file and read every page's text and operator list, nothing else. */
async function pdfjsAlone(form: StrippedForm): Promise<number> {
  const doc = await open(form.bytes);
  let n = 0;
  for (let p = 1; p <= doc.numPages; p++) {
    const page = await doc.getPage(p);
    n += (await page.getTextContent()).items.length;
    n += (await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE })).fnArray.length;
    page.cleanup();
  }
  await doc.destroy();
  return n;
}

const pct = (v: number) => v.toFixed(3);
const row = (name: string, c: Counts) => `| ${name} | ${c.truth} | ${c.detected} | ${c.matched} | ${pct(precision(c))} | ${pct(recall(c))} | ${pct(f1(c))} |`;

const forms = await strippedCorpus();
const leftovers = forms.filter((f) => f.widgetsLeft > 0);
if (leftovers.length) throw new Error(`widgets left after stripping: ${leftovers.map((f) => f.name).join(', ')}`);
const pages = forms.reduce((n, f) => n + f.pages, 0);

// Accuracy.
const results = new Map<string, DetectedField[]>();
for (const form of forms) results.set(form.name, await detect(form));
const lines: string[] = [];
lines.push(`Corpus: ${forms.length} forms, ${pages} pages, ${forms.reduce((n, f) => n + f.truth.length, 0)} truth boxes (widgets stripped; none left).`, '');
const perFile = new Map<string, Record<number, Counts>>();
for (const threshold of THRESHOLDS) {
  const all = emptyCounts();
  const perClass = { text: emptyCounts(), checkbox: emptyCounts(), signature: emptyCounts() };
  const textAndCheck = emptyCounts();
  for (const form of forms) {
    const s = score(results.get(form.name)!, form.truth, threshold);
    add(all, s.all);
    for (const cls of CLASSES) add(perClass[cls], s.perClass[cls]);
    const entry = perFile.get(form.name) ?? {};
    entry[threshold] = s.all;
    perFile.set(form.name, entry);
    // The goal is over text and check box boxes: detected boxes of those classes, truth
    // boxes of those classes, pairs between them.
    const detected = results.get(form.name)!.filter((d) => d.type !== 'digital_signature' && d.type !== 'initials');
    const truth = form.truth.filter((t) => t.cls !== 'signature');
    add(textAndCheck, score(detected, truth, threshold).all);
  }
  lines.push(`### IoU ≥ ${threshold}`, '', '| boxes | truth | detected | matched | precision | recall | F1 |', '|---|---|---|---|---|---|---|');
  lines.push(row('all', all), row('text + checkbox (the goal)', textAndCheck));
  for (const cls of CLASSES) lines.push(row(cls, perClass[cls]));
  lines.push('', `Type accuracy over matched pairs: **${pct(typeAccuracy(all))}** (${all.typeRight} of ${all.matched}); text + checkbox: ${pct(typeAccuracy(textAndCheck))}.`, '');
}
lines.push('### Per file', '', '| file | truth | detected | P @0.5 | R @0.5 | F1 @0.5 | P @0.3 | R @0.3 |', '|---|---|---|---|---|---|---|---|');
for (const form of forms) {
  const e = perFile.get(form.name)!;
  const a = e[0.5]!;
  const b = e[0.3]!;
  lines.push(`| ${form.name} | ${a.truth} | ${a.detected} | ${pct(precision(a))} | ${pct(recall(a))} | ${pct(f1(a))} | ${pct(precision(b))} | ${pct(recall(b))} |`);
}

// Calibration: of the boxes given a confidence in each band, how many match a truth box (IoU ≥ 0.5).
const bands = [0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01];
const inBand = bands.slice(1).map(() => ({ n: 0, right: 0, sum: 0 }));
for (const form of forms) {
  const detected = results.get(form.name)!;
  const matched = new Set(score(detected, form.truth, 0.5).matches.map((m) => m.detected));
  detected.forEach((d, i) => {
    const b = bands.findIndex((lo, k) => k < bands.length - 1 && d.confidence >= lo && d.confidence < bands[k + 1]!);
    inBand[b]!.n++;
    inBand[b]!.sum += d.confidence;
    if (matched.has(i)) inBand[b]!.right++;
  });
}
lines.push('', '### Confidence calibration (IoU ≥ 0.5)', '', '| confidence | boxes | mean confidence | share right |', '|---|---|---|---|');
inBand.forEach((b, k) => {
  if (b.n) lines.push(`| ${bands[k]!.toFixed(1)}–${Math.min(1, bands[k + 1]!).toFixed(1)} | ${b.n} | ${pct(b.sum / b.n)} | ${pct(b.right / b.n)} |`);
});

// How many truth boxes have anything printed where they sit (a rule, a box, underscores or a
// check box glyph within 3 pt): a widget whose only mark was its own appearance cannot be found
// on the printed page by any layout detector.
let marked = 0;
for (const form of forms) {
  const doc = await open(form.bytes);
  const graphics = [];
  for (let p = 1; p <= doc.numPages; p++) {
    const page = await doc.getPage(p);
    const text = await page.getTextContent();
    const ops = await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
    graphics.push(readPage(page.getViewport({ scale: 1 }), ops, text.items.filter((i) => 'str' in i) as TextContentItem[]));
  }
  await doc.destroy();
  for (const t of form.truth) {
    const g = graphics[t.pageNumber - 1]!;
    const x1 = t.rect.x * g.width - 3;
    const y1 = t.rect.y * g.height - 3;
    const x2 = (t.rect.x + t.rect.width) * g.width + 3;
    const y2 = (t.rect.y + t.rect.height) * g.height + 3;
    const hit =
      g.horizontal.some((h) => h.at >= y1 && h.at <= y2 && h.b > x1 && h.a < x2) ||
      g.vertical.some((v) => v.at >= x1 && v.at <= x2 && v.b > y1 && v.a < y2) ||
      g.shapes.some((s) => s.x < x2 && s.x + s.w > x1 && s.y < y2 && s.y + s.h > y1 && s.w < (x2 - x1) * 4) ||
      g.words.some((w) => /^_{3,}$|^[^\p{L}\p{N}\p{P}\s]$/u.test(w.str) && w.x < x2 && w.x + w.w > x1 && w.y < y2 && w.y + w.h > y1);
    if (hit) marked++;
  }
}
const truthCount = forms.reduce((n, f) => n + f.truth.length, 0);
lines.push('', `Truth boxes with a printed mark where they sit (a rule, a box, underscores, a glyph within 3 pt): ${marked} of ${truthCount} (${pct(marked / truthCount)}); the others were drawn only by their widget, so no layout detector can see them on the printed page.`);

// Speed, alternating, whole corpus per round.
const detectMs: number[] = [];
const aloneMs: number[] = [];
for (let round = 0; round < ROUNDS + 1; round++) {
  let t = performance.now();
  for (const form of forms) await pdfjsAlone(form);
  const alone = performance.now() - t;
  t = performance.now();
  for (const form of forms) await detect(form);
  const detection = performance.now() - t;
  // The first round warms both up and is not counted.
  if (round > 0) {
    aloneMs.push(alone);
    detectMs.push(detection);
  }
}
const ratio = median(detectMs.map((d, i) => d / aloneMs[i]!));
lines.push(
  '',
  '### Speed',
  '',
  `Layout detection of all ${pages} pages: median ${median(detectMs).toFixed(0)} ms (${(pages / (median(detectMs) / 1000)).toFixed(1)} pages/s); pdf.js alone reading the same pages' text and operator lists: ${median(aloneMs).toFixed(0)} ms. **Ratio ${ratio.toFixed(2)} ×** (median of ${ROUNDS} rounds, per-round ratios ${detectMs.map((d, i) => (d / aloneMs[i]!).toFixed(2)).join(', ')}).`,
);
console.log(lines.join('\n'));
