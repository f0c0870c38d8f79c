/**
 * Layout detection, cross-validated by repository (issue 15): every form of ../shared/corpus and
 * ../shared/corpus-train (the data set of scripts/detect/dataset.ts: widgets and /AcroForm
 * stripped, each page read by `readPage` as a parse job reads it) is detected by the run-time
 * path (`detectLayout`: proposals, features, trees, calibration, suppression, threshold) with the
 * model of its fold: trained by `npm run train:detect` without any form of the form's
 * repository. The committed final model, which saw every repository, is never scored here.
 *
 * Prints, scored as ../shared/corpus/README.md says: precision, recall and F1 at IoU ≥ 0.5 and
 * ≥ 0.3, overall and per class; type accuracy over matched pairs; the same per kind, language
 * and producer family; a row per file; the calibration table (share of boxes right per
 * confidence band). Then speed on ../shared/corpus: the whole detection of a parse job
 * (`detectFields`, the committed model, each file opened as the detection process opens it) against
 * pdf.js alone reading the same pages' text and operator lists with pdf.js's defaults (and, for
 * reference, with images not decoded, as the detection reads them, and then also with its streams
 * inflated on this thread, as the detection process inflates them: src/detect/inflate.ts), each
 * form read every way in turn (the order turning and reversing), medians of BENCH_ROUNDS rounds.
 * The detection runs with `InflateOnThisThread` as the global `DecompressionStream`, as in its
 * process (src/detect/thread.ts); pdf.js alone with Node's, unless said.
 *
 *   npm run train:detect   # once, and after changing candidates, features or the data set
 *   npm run bench:detect
 *   BENCH_PART=speed npm run bench:detect   # the speed comparison only (needs no fold models nor data set)
 *   BENCH_PART=speed BENCH_BASE=/path/to/other/worktree npm run bench:detect   # and that worktree's detection, in the same rounds
 */
import fs from 'node:fs';
import path from 'node:path';
import { pdfjs } from '../src/files/pdfjs.js';
import { loadModel, detectLayout, type LayoutModel } from '../src/detect/model.js';
import { inflateOnThisThread } from '../src/detect/inflate.js';
import { DETECTION_PDF_OPTIONS, openForDetection, type DetectionLoading } from '../src/detect/open.js';
import { detectFields } from '../src/detect/pipeline.js';
import type { DetectedField } from '../src/detect/types.js';
import { CACHE, loadDataset, type DataForm } from '../scripts/detect/dataset.js';
import { add, CLASSES, emptyCounts, f1, openWithPdfjs, precision, recall, score, strippedCorpus, typeAccuracy, type Cls, type Counts, type StrippedForm, type TruthWidget } from './corpus.js';
import { median, PDFJS_ALONE_OPTIONS } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** `speed`: only the speed comparison; `figures`: only the cross-validated figures; else both. */
const PART = process.env.BENCH_PART ?? 'all';
if (!['all', 'speed', 'figures'].includes(PART)) throw new Error(`BENCH_PART must be speed, figures or all, not ${PART}`);
const THRESHOLDS = [0.5, 0.3] as const;
const FOLDS = path.join(CACHE, 'folds');

/** pdf.js opening a file with these options, as pdf.js alone is timed. */
const open = (bytes: Uint8Array, options: object) => pdfjs.getDocument({ data: bytes.slice(), ...options }).promise;

/** The detection opens a file as its process does (src/detect/open.ts). */
async function detect(form: StrippedForm, detector: typeof detectFields = detectFields, opener: (data: Uint8Array) => DetectionLoading = openForDetection): Promise<DetectedField[]> {
  const task = opener(form.bytes.slice());
  try {
    const doc = await task.promise;
    return (await detector(doc)).fields;
  } finally {
    await task.destroy();
  }
}

/** pdf.js alone: open the file and read every page's text and operator list, nothing else. */
async function pdfjsAlone(form: StrippedForm, options: object = PDFJS_ALONE_OPTIONS): Promise<number> {
  const doc = await open(form.bytes, options);
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

interface FoldsFile {
  k: number;
  repositories: Record<string, number>;
}

function foldModels(): { foldOf: (repo: string) => number; models: LayoutModel[] } {
  const index = path.join(FOLDS, 'folds.json');
  if (!fs.existsSync(index)) {
    console.error(`No fold models in ${FOLDS}: run \`npm run train:detect\` first (it builds the data set, exports it and trains the cross-validation folds).`);
    process.exit(1);
  }
  const folds = JSON.parse(fs.readFileSync(index, 'utf8')) as FoldsFile;
  const models = Array.from({ length: folds.k }, (_, k) => loadModel(path.join(FOLDS, `fold-${k}.json`)));
  return {
    models,
    foldOf: (repo) => {
      const k = folds.repositories[repo];
      if (k === undefined) throw new Error(`repository ${repo} is in no fold: the data set changed since training; run npm run train:detect`);
      return k;
    },
  };
}

/** A data-set form's truth as the scoring wants it. */
function truthOf(form: DataForm): Array<TruthWidget & { cls: Cls }> {
  return form.pages.flatMap((p) => p.truth.map((t, i) => ({ name: `${p.pageNumber}-${i}`, type: t.type, pageNumber: p.pageNumber, rect: t.rect, hidden: false, cls: t.cls })));
}

/** The cross-validated figures: every form of the data set detected by the model of its fold. */
function figures(): void {
  const { foldOf, models } = foldModels();
  // The synthetic training pages (scripts/detect/synthetic.ts) are in no fold and never scored.
  const forms = loadDataset((file) => !file.startsWith('synth--'));
  const synthetic = loadDataset((file) => file.startsWith('synth--')).length;
  const lines: string[] = [];
  const results = forms.map((form) => {
    const model = models[foldOf(form.repo)]!;
    const detected = form.pages.flatMap((p) => detectLayout(p.graphics, p.pageNumber, model));
    return { form, detected, truth: truthOf(form) };
  });
  const pages = forms.reduce((n, f) => n + f.pages.length, 0);
  const repos = new Set(forms.map((f) => f.repo)).size;
  lines.push(
    `Data set: ${forms.length} forms (${forms.filter((f) => f.set === 'corpus').length} of corpus, ${forms.filter((f) => f.set === 'train').length} of corpus-train) from ${repos} repositories, ${pages} pages, ${results.reduce((n, r) => n + r.truth.length, 0)} truth boxes; each form detected by the model of its fold (${models.length} folds of whole repositories), never by one trained on its repository${synthetic ? ` (every model also trained on ${synthetic} synthetic forms of scripts/detect/synthetic.ts, scored nowhere)` : ''}.`,
    '',
  );

  const perFile = new Map<string, Record<number, Counts>>();
  for (const threshold of THRESHOLDS) {
    const all = emptyCounts();
    const perClass = { text: emptyCounts(), checkbox: emptyCounts(), signature: emptyCounts() };
    for (const r of results) {
      const s = score(r.detected, r.truth, threshold);
      add(all, s.all);
      for (const cls of CLASSES) add(perClass[cls], s.perClass[cls]);
      const key = `${r.form.set}/${r.form.name}`;
      perFile.set(key, { ...perFile.get(key), [threshold]: s.all });
    }
    lines.push(`### IoU ≥ ${threshold}`, '', '| boxes | truth | detected | matched | precision | recall | F1 |', '|---|---|---|---|---|---|---|');
    lines.push(row('all', all));
    for (const cls of CLASSES) lines.push(row(cls, perClass[cls]));
    lines.push('', `Type accuracy over matched pairs: **${pct(typeAccuracy(all))}** (${all.typeRight} of ${all.matched}).`, '');
  }

  // Groups: a gain on the large groups must not hide a loss on the small ones.
  for (const [title, keyOf] of [
    ['kind', (f: DataForm) => f.kind],
    ['language', (f: DataForm) => f.language],
    ['producer family', (f: DataForm) => f.producerFamily],
    ['set', (f: DataForm) => f.set],
  ] as const) {
    const groups = new Map<string, { forms: number; c: Counts; types: Counts }>();
    for (const r of results) {
      const key = keyOf(r.form);
      const g = groups.get(key) ?? { forms: 0, c: emptyCounts(), types: emptyCounts() };
      g.forms++;
      add(g.c, score(r.detected, r.truth, 0.5).all);
      groups.set(key, g);
    }
    lines.push(`### Per ${title} (IoU ≥ 0.5)`, '', `| ${title} | forms | truth | detected | matched | precision | recall | F1 | type accuracy |`, '|---|---|---|---|---|---|---|---|---|');
    for (const [key, g] of [...groups].sort((a, b) => b[1].c.truth - a[1].c.truth || a[0].localeCompare(b[0]))) {
      lines.push(`| ${key} | ${g.forms} | ${g.c.truth} | ${g.c.detected} | ${g.c.matched} | ${pct(precision(g.c))} | ${pct(recall(g.c))} | ${pct(f1(g.c))} | ${pct(typeAccuracy(g.c))} |`);
    }
    lines.push('');
  }

  // Calibration: of the boxes given a confidence in each band, how many match a truth box (IoU ≥ 0.5).
  const bands = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01];
  const inBand = bands.slice(1).map(() => ({ n: 0, right: 0, sum: 0 }));
  for (const r of results) {
    const matched = new Set(score(r.detected, r.truth, 0.5).matches.map((m) => m.detected));
    r.detected.forEach((d, i) => {
      const b = bands.findIndex((lo, k) => k < bands.length - 1 && d.confidence >= lo && d.confidence < bands[k + 1]!);
      inBand[b]!.n++;
      inBand[b]!.sum += d.confidence;
      if (matched.has(i)) inBand[b]!.right++;
    });
  }
  lines.push('### Confidence calibration (IoU ≥ 0.5)', '', '| confidence | boxes | mean confidence | share right | gap |', '|---|---|---|---|---|');
  let worst = 0;
  inBand.forEach((b, k) => {
    if (!b.n) return;
    const gap = b.right / b.n - b.sum / b.n;
    if (b.n >= 50) worst = Math.max(worst, Math.abs(gap));
    lines.push(`| ${bands[k]!.toFixed(1)}–${Math.min(1, bands[k + 1]!).toFixed(1)} | ${b.n} | ${pct(b.sum / b.n)} | ${pct(b.right / b.n)} | ${gap >= 0 ? '+' : ''}${pct(gap)}${b.n >= 50 && Math.abs(gap) > 0.1 ? ' (over 0.1)' : ''} |`);
  });
  lines.push('', `Largest gap in a band of 50 boxes or more: ${pct(worst)} (goal ≤ 0.1).`, '');

  lines.push('### Per file', '', '| file | repository | truth | detected | P @0.5 | R @0.5 | F1 @0.5 | P @0.3 | R @0.3 |', '|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const e = perFile.get(`${r.form.set}/${r.form.name}`)!;
    const a = e[0.5]!;
    const b = e[0.3]!;
    lines.push(`| ${r.form.set}/${r.form.name} | ${r.form.repo} | ${a.truth} | ${a.detected} | ${pct(precision(a))} | ${pct(recall(a))} | ${pct(f1(a))} | ${pct(precision(b))} | ${pct(recall(b))} |`);
  }
  console.log(lines.join('\n'));
}

if (PART !== 'speed') figures();


// Speed on ../shared/corpus, alternating, whole corpus per round.
if (ROUNDS > 0 && PART !== 'figures') {
  const corpus = await strippedCorpus();
  const leftovers = corpus.filter((f) => f.widgetsLeft > 0);
  if (leftovers.length) throw new Error(`widgets left after stripping: ${leftovers.map((f) => f.name).join(', ')}`);
  const corpusPages = corpus.reduce((n, f) => n + f.pages, 0);
  // BENCH_BASE: another worktree's detection (e.g. main's) timed in the same rounds, for a before/after on a busy machine.
  const baseDir = process.env.BENCH_BASE;
  const push = Array.prototype.push;
  const baseDetectFields = baseDir ? ((await import(path.resolve(baseDir, 'src/detect/pipeline.ts'))) as { detectFields: typeof detectFields }).detectFields : null;
  // A worktree with node_modules of its own loads a second pdf.js, whose core-js would put its slower push back for every timing of the run.
  if (Array.prototype.push !== push) throw new Error(`${baseDir} loaded pdf.js again (its own node_modules?), which replaced Array.prototype.push: link this checkout's node_modules there instead`);
  // The other worktree's files are opened as its own detection opens them: by `openForDetection`, with pdf.js and `DETECTION_PDF_OPTIONS`
  // before it, with pdf.js's defaults before src/detect/open.ts.
  const baseOpen = path.resolve(baseDir ?? '.', 'src/detect/open.ts');
  const baseModule = baseDir && fs.existsSync(baseOpen) ? ((await import(baseOpen)) as { DETECTION_PDF_OPTIONS: object; openForDetection?: typeof openForDetection }) : null;
  const baseOptions = baseModule?.DETECTION_PDF_OPTIONS ?? PDFJS_ALONE_OPTIONS;
  const baseOpener = baseModule?.openForDetection ?? ((data: Uint8Array) => openWithPdfjs(data, baseOptions));
  // Streams inflated as in each one's process: the detection's on its thread (src/detect/thread.ts), the base's by its own
  // src/detect/inflate.ts when it has one, pdf.js alone by Node's DecompressionStream (on the thread pool) but in one reference way.
  const baseInflate = baseDir && fs.existsSync(path.resolve(baseDir, 'src/detect/inflate.ts')) ? ((await import(path.resolve(baseDir, 'src/detect/inflate.ts'))) as { inflateOnThisThread: typeof inflateOnThisThread }).inflateOnThisThread : null;
  const ours = () => inflateOnThisThread(true);
  const node = () => inflateOnThisThread(false);
  const base = () => (baseInflate ? baseInflate(true) : inflateOnThisThread(false));
  const detectMs: number[] = [];
  const baseMs: number[] = [];
  const aloneMs: number[] = [];
  const aloneNoImagesMs: number[] = [];
  const aloneAsDetectionMs: number[] = [];
  // Each form is read every way one after the other, so that the ways share the machine's moments of noise (a round takes seconds; a
  // form, tens of milliseconds). The order turns from form to form and round to round, and every other time it runs backwards, so that
  // no way always follows the same other one (and inherits its garbage to collect).
  type Way = [times: number[], read: (form: StrippedForm) => Promise<unknown>, inflater: () => void];
  const ways: Way[] = [
    [aloneMs, (form) => pdfjsAlone(form), node],
    // The same with the detection's options (images left undecoded): the ratio if pdf.js's own reading were held to that too.
    [aloneNoImagesMs, (form) => pdfjsAlone(form, DETECTION_PDF_OPTIONS), node],
    // And with its streams inflated on this thread too: pdf.js alone given everything the detection's process gives pdf.js but its port.
    [aloneAsDetectionMs, (form) => pdfjsAlone(form, DETECTION_PDF_OPTIONS), ours],
    [detectMs, (form) => detect(form), ours],
    ...(baseDetectFields ? [[baseMs, (form) => detect(form, baseDetectFields, baseOpener), base] satisfies Way] : []),
  ];
  for (let round = 0; round < ROUNDS + 1; round++) {
    const sums = ways.map(() => 0);
    for (const [i, form] of corpus.entries()) {
      const shift = i + round;
      for (let k = 0; k < ways.length; k++) {
        const w = ((shift % 2 ? ways.length - 1 - k : k) + shift) % ways.length;
        ways[w]![2]();
        const t = performance.now();
        await ways[w]![1](form);
        sums[w]! += performance.now() - t;
      }
    }
    inflateOnThisThread(false);
    // The first round warms every way up and is not counted.
    if (round > 0) ways.forEach(([times], w) => times.push(sums[w]!));
  }
  const ratio = median(detectMs.map((d, i) => d / aloneMs[i]!));
  const lines = [
    '',
    '### Speed',
    '',
    `Detection of all ${corpusPages} pages of ../shared/corpus (stripped): median ${median(detectMs).toFixed(0)} ms (${(corpusPages / (median(detectMs) / 1000)).toFixed(1)} pages/s); pdf.js alone reading the same pages' text and operator lists: ${median(aloneMs).toFixed(0)} ms. **Ratio ${ratio.toFixed(2)} ×** (median of ${ROUNDS} rounds, per-round ratios ${detectMs.map((d, i) => (d / aloneMs[i]!).toFixed(2)).join(', ')}).`,
    '',
    `pdf.js alone with images not decoded (\`maxImageSize: 0\`, as the detection reads a file): ${median(aloneNoImagesMs).toFixed(0)} ms; the detection against it: ratio ${median(detectMs.map((d, i) => d / aloneNoImagesMs[i]!)).toFixed(2)} ×.`,
    '',
    `pdf.js alone with images not decoded and its streams inflated on this thread (\`InflateOnThisThread\`, as the detection's process inflates them): ${median(aloneAsDetectionMs).toFixed(0)} ms; the detection against it: ratio ${median(detectMs.map((d, i) => d / aloneAsDetectionMs[i]!)).toFixed(2)} ×.`,
  ];
  if (baseDir) {
    lines.push(
      '',
      `The detection of ${baseDir} in the same rounds (streams inflated ${baseInflate ? 'on this thread, by its inflate.ts' : "by Node's DecompressionStream"}): median ${median(baseMs).toFixed(0)} ms, **ratio ${median(baseMs.map((d, i) => d / aloneMs[i]!)).toFixed(2)} ×** (per-round ratios ${baseMs.map((d, i) => (d / aloneMs[i]!).toFixed(2)).join(', ')}).`,
    );
  }
  console.log(lines.join('\n'));
}
