/**
 * Where the time of a layout detection goes, stage by stage in the order `detectFields`
 * (src/detect/pipeline.ts) takes them, on the 64 pages of ../shared/corpus with their widgets
 * stripped: opening the file, the page, its widget annotations, its text, its operator list (these
 * two are what `bench:detect` times as "pdf.js alone"), the page read (`readPage`) and
 * `detectLayout`. Wall time per page, means over BENCH_ROUNDS rounds after one of warm-up.
 *
 *   node --import tsx bench/detect-pipeline.ts
 */
import * as pdfjs from 'pdfjs-dist/legacy/build/pdf.mjs';
import { readPage, type TextContentItem } from '../src/detect/layout-page.js';
import { detectLayout } from '../src/detect/model.js';
import { fontNames } from '../src/detect/pipeline.js';
import { strippedCorpus } from './corpus.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// As bench/detect.ts and src/detect/thread.ts open a file.
const open = (bytes: Uint8Array) => pdfjs.getDocument({ data: bytes.slice(), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;

const corpus = await strippedCorpus();
const stages = ['open', 'page', 'annotations', 'text', 'operator list', 'page read', 'detectLayout'] as const;
const total: Record<(typeof stages)[number], number> = { open: 0, page: 0, annotations: 0, text: 0, 'operator list': 0, 'page read': 0, detectLayout: 0 };
let pages = 0;
for (let round = 0; round <= ROUNDS; round++) {
  for (const form of corpus) {
    let t = performance.now();
    // The first round warms up and is not counted.
    const done = (stage: (typeof stages)[number]) => {
      const now = performance.now();
      if (round > 0) total[stage] += now - t;
      t = now;
    };
    const doc = await open(form.bytes);
    done('open');
    for (let p = 1; p <= doc.numPages; p++) {
      const page = await doc.getPage(p);
      const viewport = page.getViewport({ scale: 1 });
      done('page');
      await page.getAnnotations({ intent: 'display' });
      done('annotations');
      const content = await page.getTextContent();
      done('text');
      const operators = await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
      done('operator list');
      const items = content.items.filter((item) => 'str' in item) as unknown as TextContentItem[];
      const graphics = readPage(viewport, operators, items, fontNames(page));
      done('page read');
      detectLayout(graphics, p);
      done('detectLayout');
      page.cleanup();
      if (round > 0) pages++;
    }
    await doc.destroy();
  }
}
const ms = (stage: (typeof stages)[number]) => total[stage] / pages;
console.log(`${pages / ROUNDS} pages of ../shared/corpus (widgets stripped), wall ms per page, mean of ${ROUNDS} rounds:`);
console.log(`| ${stages.join(' | ')} |`);
console.log(`|${stages.map(() => '---').join('|')}|`);
console.log(`| ${stages.map((s) => ms(s).toFixed(1)).join(' | ')} |`);
const alone = ms('text') + ms('operator list');
const added = ms('annotations') + ms('page read') + ms('detectLayout');
console.log(`\npdf.js alone (text and operator list): ${alone.toFixed(1)} ms; the detection adds ${added.toFixed(1)} ms (annotations, page read, detectLayout): ${((alone + added) / alone).toFixed(2)} × on these stages.`);
