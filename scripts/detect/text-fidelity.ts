/**
 * How close `readText` (src/detect/page-text.ts: the text read from the operator list) comes to
 * pdf.js's `getTextContent`, on every form of ../shared/corpus and ../shared/corpus-train as they
 * are (the text does not depend on the widgets, which the operator list leaves out): non-space
 * characters per form, runs against items, and for each run whose text `getTextContent` also
 * has as an item, whether the nearest such item starts within 0.5 pt and is as wide within 1 pt.
 * Lists the forms whose character counts differ by more than 20 or 5 %.
 *
 *   node --import tsx scripts/detect/text-fidelity.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { pdfjs } from '../../src/files/pdfjs.js';
import { pageFonts, readText } from '../../src/detect/page-text.js';
import { SHARED } from './dataset.js';

interface Item {
  str: string;
  transform: number[];
  width: number;
}

const nonSpace = (s: string) => s.replace(/\s/g, '').length;
const files = ['corpus', 'corpus-train'].flatMap((set) => {
  const dir = path.join(SHARED, set);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Array<{ file: string }>;
  return manifest.map((entry) => path.join(dir, entry.file));
});
const totals = { forms: 0, pages: 0, items: 0, runs: 0, itemChars: 0, runChars: 0, paired: 0, placed: 0 };
const differing: string[] = [];
for (const file of files) {
  const doc = await pdfjs.getDocument({ data: new Uint8Array(fs.readFileSync(file)), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;
  let itemChars = 0;
  let runChars = 0;
  for (let p = 1; p <= doc.numPages; p++) {
    const page = await doc.getPage(p);
    const viewport = page.getViewport({ scale: 1 });
    const items = ((await page.getTextContent()).items as Item[]).filter((i) => typeof i.str === 'string' && i.str.trim());
    const operators = await page.getOperatorList({ annotationMode: pdfjs.AnnotationMode.DISABLE });
    const runs = readText(viewport, operators, pageFonts(page));
    totals.pages++;
    totals.items += items.length;
    totals.runs += runs.length;
    for (const i of items) itemChars += nonSpace(i.str);
    for (const r of runs) runChars += nonSpace(r.str);
    const byText = new Map<string, Item[]>();
    for (const i of items) byText.set(i.str.trim(), [...(byText.get(i.str.trim()) ?? []), i]);
    for (const r of runs) {
      const same = byText.get(r.str.trim());
      if (!same) continue;
      const distance = (i: Item) => Math.hypot(i.transform[4]! - r.transform[4]!, i.transform[5]! - r.transform[5]!);
      const nearest = same.reduce((a, b) => (distance(b) < distance(a) ? b : a));
      totals.paired++;
      if (distance(nearest) <= 0.5 && Math.abs(nearest.width - r.width) <= 1) totals.placed++;
    }
    page.cleanup();
  }
  await doc.destroy();
  totals.forms++;
  totals.itemChars += itemChars;
  totals.runChars += runChars;
  if (Math.abs(itemChars - runChars) > Math.max(20, 0.05 * itemChars)) differing.push(`${path.basename(file)}: getTextContent ${itemChars}, readText ${runChars}`);
}
console.log(`${totals.forms} forms, ${totals.pages} pages`);
console.log(`non-space characters: getTextContent ${totals.itemChars}, readText ${totals.runChars}`);
console.log(`items ${totals.items}, runs ${totals.runs}`);
console.log(`runs whose text is also an item: ${totals.paired}; of them at the item's place (0.5 pt) and width (1 pt): ${totals.placed}`);
console.log(`forms whose characters differ by more than 20 or 5 %: ${differing.length}`);
for (const line of differing) console.log(`  ${line}`);
