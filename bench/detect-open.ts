/**
 * The detection as it opens a file (`openForDetection`, src/detect/open.ts: its own port between
 * pdf.js's two sides, and fonts loaded into a document that drops them) against the same detection
 * opening the file with pdf.js's `getDocument` and `DETECTION_PDF_OPTIONS` alone (pdf.js's own port,
 * which copies every message, and glyphs drawn as paths), on the 64 pages of ../shared/corpus with
 * their widgets stripped. Both run `detectFields` with the committed model; only the opening
 * differs. Each form is detected both ways one after the other, the order alternating from form to
 * form and round to round. Prints the ratio of the two per round (below 1: `openForDetection` is
 * faster), after one round of warm-up.
 *
 *   node --import tsx bench/detect-open.ts     # BENCH_ROUNDS, 10 by default
 */
import { DETECTION_PDF_OPTIONS, openForDetection, type DetectionLoading } from '../src/detect/open.js';
import { detectFields } from '../src/detect/pipeline.js';
import { openWithPdfjs, strippedCorpus, type StrippedForm } from './corpus.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const corpus = await strippedCorpus();

const byGetDocument = (data: Uint8Array) => openWithPdfjs(data, DETECTION_PDF_OPTIONS);

async function time(form: StrippedForm, open: (data: Uint8Array) => DetectionLoading): Promise<number> {
  const started = performance.now();
  const task = open(form.bytes.slice());
  try {
    await detectFields(await task.promise);
  } finally {
    await task.destroy();
  }
  return performance.now() - started;
}

const ratios: number[] = [];
const own: number[] = [];
const theirs: number[] = [];
for (let round = 0; round <= ROUNDS; round++) {
  let a = 0;
  let b = 0;
  for (const [i, form] of corpus.entries()) {
    if ((i + round) % 2) {
      b += await time(form, byGetDocument);
      a += await time(form, openForDetection);
    } else {
      a += await time(form, openForDetection);
      b += await time(form, byGetDocument);
    }
  }
  if (round === 0) continue;
  ratios.push(a / b);
  own.push(a);
  theirs.push(b);
}
const pages = corpus.reduce((n, f) => n + f.pages, 0);
console.log(`The detection of ${pages} pages of ../shared/corpus, ${ROUNDS} rounds: opened by openForDetection median ${median(own).toFixed(0)} ms, by getDocument with DETECTION_PDF_OPTIONS ${median(theirs).toFixed(0)} ms.`);
console.log(`openForDetection over getDocument, per round: ${ratios.map((r) => r.toFixed(3)).join(', ')}; **median ${median(ratios).toFixed(3)}**.`);
