/**
 * The detection over its own port (`openForDetection`, src/detect/open.ts) against the same
 * detection over pdf.js's own "fake worker" port (`getDocument` with `DETECTION_PDF_OPTIONS`), on
 * the 64 pages of ../shared/corpus with their widgets stripped. Both run `detectFields` with the
 * committed model; only the opening differs. Each form is detected both ways one after the other,
 * the order alternating from form to form and round to round. Prints the ratio of the two per round
 * (own port over pdf.js's: below 1 is faster), after one round of warm-up.
 *
 *   node --import tsx bench/detect-port.ts     # BENCH_ROUNDS, 10 by default
 */
import { pdfjs } from '../src/files/pdfjs.js';
import { DETECTION_PDF_OPTIONS, openForDetection, type DetectionLoading } from '../src/detect/open.js';
import { detectFields } from '../src/detect/pipeline.js';
import { strippedCorpus, type StrippedForm } from './corpus.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const corpus = await strippedCorpus();

function overPdfjsPort(data: Uint8Array): DetectionLoading {
  const task = pdfjs.getDocument({ data, ...DETECTION_PDF_OPTIONS });
  return { promise: task.promise, destroy: () => task.destroy() };
}

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
      b += await time(form, overPdfjsPort);
      a += await time(form, openForDetection);
    } else {
      a += await time(form, openForDetection);
      b += await time(form, overPdfjsPort);
    }
  }
  if (round === 0) continue;
  ratios.push(a / b);
  own.push(a);
  theirs.push(b);
}
const pages = corpus.reduce((n, f) => n + f.pages, 0);
console.log(`The detection of ${pages} pages of ../shared/corpus, ${ROUNDS} rounds: over its own port median ${median(own).toFixed(0)} ms, over pdf.js's port ${median(theirs).toFixed(0)} ms.`);
console.log(`Own port over pdf.js's, per round: ${ratios.map((r) => r.toFixed(3)).join(', ')}; **median ${median(ratios).toFixed(3)}**.`);
