/**
 * Where the time of a layout detection goes, stage by stage in the order `detectFields`
 * (src/detect/pipeline.ts) takes them, on the 64 pages of ../shared/corpus with their widgets
 * stripped: opening the file, the page, its widget annotations, its operator list, its text read
 * from that list (`readText`), the page read (`readPage`) and `detectLayout`. In the same rounds,
 * each file is opened once more and read as `bench:detect` times "pdf.js alone": every page's
 * text with `getTextContent` and its operator list (the text first, as there; whichever comes first
 * loads the page's fonts). The detection's streams are inflated as its process inflates them (on
 * this thread: src/detect/inflate.ts), pdf.js alone's by Node's `DecompressionStream`, as
 * `bench:detect` times them. Wall time per page, means over BENCH_ROUNDS rounds after one of warm-up.
 *
 *   node --import tsx bench/detect-pipeline.ts
 */
import { pdfjs } from '../src/files/pdfjs.js';
import { readPage } from '../src/detect/layout-page.js';
import { inflateOnThisThread } from '../src/detect/inflate.js';
import { detectLayout } from '../src/detect/model.js';
import { openForDetection } from '../src/detect/open.js';
import { pageFonts, readText } from '../src/detect/page-text.js';
import { strippedCorpus } from './corpus.js';
import { PDFJS_ALONE_OPTIONS } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// The detection opens a file as src/detect/thread.ts does (openForDetection, below); pdf.js alone opens it as bench/detect.ts times it
// (pdf.js's defaults), with this.
const open = (bytes: Uint8Array, options: object) => pdfjs.getDocument({ data: bytes.slice(), ...options }).promise;

const corpus = await strippedCorpus();
const stages = ['open', 'page', 'annotations', 'operator list', 'text', 'page read', 'detectLayout'] as const;
type Stage = (typeof stages)[number];
const aloneStages = ['open ', 'page ', 'getTextContent', 'operator list '] as const;
type AloneStage = (typeof aloneStages)[number];
const total = Object.fromEntries([...stages, ...aloneStages].map((s) => [s, 0])) as Record<Stage | AloneStage, number>;
let pages = 0;
for (let round = 0; round <= ROUNDS; round++) {
  for (const form of corpus) {
    let t = performance.now();
    // The first round warms up and is not counted.
    const done = (stage: Stage | AloneStage) => {
      const now = performance.now();
      if (round > 0) total[stage] += now - t;
      t = now;
    };
    inflateOnThisThread(true);
    const task = openForDetection(form.bytes.slice());
    const doc = await task.promise;
    done('open');
    for (let p = 1; p <= doc.numPages; p++) {
      const page = await doc.getPage(p);
      const viewport = page.getViewport({ scale: 1 });
      done('page');
      await page.getAnnotations({ intent: 'display' });
      done('annotations');
      const operators = await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
      done('operator list');
      const runs = readText(viewport, operators, pageFonts(page));
      done('text');
      const graphics = readPage(viewport, operators, runs);
      done('page read');
      detectLayout(graphics, p);
      done('detectLayout');
      page.cleanup();
      if (round > 0) pages++;
    }
    await task.destroy();
    inflateOnThisThread(false);
    t = performance.now();
    const again = await open(form.bytes, PDFJS_ALONE_OPTIONS);
    done('open ');
    for (let p = 1; p <= again.numPages; p++) {
      const page = await again.getPage(p);
      done('page ');
      await page.getTextContent();
      done('getTextContent');
      await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
      done('operator list ');
      page.cleanup();
    }
    await again.destroy();
  }
}
const ms = (stage: Stage | AloneStage) => total[stage] / pages;
const sum = (list: ReadonlyArray<Stage | AloneStage>) => list.reduce((s, x) => s + ms(x), 0);
console.log(`${pages / ROUNDS} pages of ../shared/corpus (widgets stripped), wall ms per page, mean of ${ROUNDS} rounds:`);
console.log(`\nThe detection (\`detectFields\`'s stages):\n`);
console.log(`| ${stages.join(' | ')} | sum |`);
console.log(`|${stages.map(() => '---').join('|')}|---|`);
console.log(`| ${stages.map((s) => ms(s).toFixed(1)).join(' | ')} | ${sum(stages).toFixed(1)} |`);
console.log(`\npdf.js alone (as \`bench:detect\` times it):\n`);
console.log(`| ${aloneStages.map((s) => s.trim()).join(' | ')} | sum |`);
console.log(`|${aloneStages.map(() => '---').join('|')}|---|`);
console.log(`| ${aloneStages.map((s) => ms(s).toFixed(1)).join(' | ')} | ${sum(aloneStages).toFixed(1)} |`);
const pdfjsAlone = ms('getTextContent') + ms('operator list ');
const detection = sum(stages) - ms('open') - ms('page');
console.log(
  `\nPer page, without opening the file and the page: the detection ${detection.toFixed(1)} ms, pdf.js alone ${pdfjsAlone.toFixed(1)} ms: **${(detection / pdfjsAlone).toFixed(2)} ×**.`,
);
