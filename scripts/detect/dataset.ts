/**
 * The detection data set: every form of ../shared/corpus and ../shared/corpus-train with its
 * widgets and /AcroForm stripped (as ../shared/corpus/README.md says), each page read the way the
 * layout detector reads it (`readPage`: rules, boxes, words, in points of the displayed page), with
 * the page's truth boxes and the form's repository (the unit of cross-validation); and the
 * synthetic training pages of synthetic.ts (set `synth`, training only).
 *
 * Written once to `.cache/detect/pages/<set>--<name>.json` (git-ignored; nothing of ../shared goes
 * into the repository) and reused: a file already there is not read again unless `--force`, or
 * unless the page reader changed since (its sources and pdf.js's version, stamped in
 * `.cache/detect/pages/reader.txt`): then every form is read again.
 *
 *   node --import tsx scripts/detect/dataset.ts [--force] [--only <substring>]
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { version as pdfjsVersion } from '../../src/files/pdfjs.js';
import type { PageGraphics } from '../../src/detect/layout-page.js';
import type { Rect } from '../../src/detect/types.js';
import { stripWidgets } from '../../bench/corpus.js';
import { readForm } from './read-form.js';
import { SYNTHETIC_FORMS, syntheticForms, syntheticName } from './synthetic.js';

export const SHARED = path.resolve(import.meta.dirname, '../../../shared');
export const CACHE = path.resolve(import.meta.dirname, '../../.cache/detect');
export const PAGES_DIR = path.join(CACHE, 'pages');

/** Scoring classes of ../shared/corpus/README.md. */
export type Cls = 'text' | 'checkbox' | 'signature';
const CLASS_OF: Record<string, Cls | undefined> = { text: 'text', choice: 'text', checkbox: 'checkbox', radio: 'checkbox', signature: 'signature' };

export interface TruthBox {
  /** Fractions of the displayed page, origin top-left. */
  rect: Rect;
  cls: Cls;
  /** The widget's own type (text, choice, checkbox, radio, signature). */
  type: string;
}

export interface DataPage {
  pageNumber: number;
  graphics: PageGraphics;
  truth: TruthBox[];
}

export interface DataForm {
  /** `corpus`, `train`, or `synth` (synthetic.ts: trained on, never scored). */
  set: 'corpus' | 'train' | 'synth';
  name: string;
  /** The repository the form comes from: forms of one repository are never split across folds. */
  repo: string;
  kind: string;
  language: string;
  producerFamily: string;
  pages: DataPage[];
  /** Synthetic forms only: a hash of synthetic.ts, so that pages drawn by older code are drawn again. */
  generator?: string;
}

interface ManifestEntry {
  file: string;
  truth: string;
  encrypted: boolean | string;
  sourceRepo: string;
  kind?: string;
  language?: string;
  producerFamily?: string;
}

interface TruthFile {
  pages: Array<{ pageNumber: number }>;
  widgets: Array<{ type: string; pageNumber: number; rect: Rect; hidden: boolean }>;
}

export function formFile(set: string, name: string): string {
  return path.join(PAGES_DIR, `${set}--${name}.json`);
}

/** Every form of the data set that the cache holds, in a stable order. */
export function loadDataset(filter?: (file: string) => boolean): DataForm[] {
  if (!fs.existsSync(PAGES_DIR)) throw new Error(`no data set at ${PAGES_DIR}: run node --import tsx scripts/detect/dataset.ts first`);
  return fs
    .readdirSync(PAGES_DIR)
    .filter((f) => f.endsWith('.json') && (!filter || filter(f)))
    .sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(PAGES_DIR, f), 'utf8')) as DataForm);
}

/** The code that turns a PDF page into what the detector reads: a change to it makes every cached page stale. */
const READER_SOURCES = ['../../src/detect/layout-page.ts', '../../src/detect/page-text.ts', '../../src/detect/open.ts', '../../src/detect/inflate.ts', '../../src/files/pdfjs.ts', './read-form.ts'].map((f) => path.join(import.meta.dirname, f));

function readerStamp(): string {
  const hash = createHash('sha256').update(`pdfjs-dist ${pdfjsVersion}\n`);
  for (const file of READER_SOURCES) hash.update(fs.readFileSync(file));
  return hash.digest('hex').slice(0, 16);
}

async function build(force: boolean, only?: string): Promise<void> {
  fs.mkdirSync(PAGES_DIR, { recursive: true });
  const stampFile = path.join(PAGES_DIR, 'reader.txt');
  const stamp = readerStamp();
  if (!force && fs.readdirSync(PAGES_DIR).some((f) => f.endsWith('.json'))) {
    const before = fs.existsSync(stampFile) ? fs.readFileSync(stampFile, 'utf8') : '';
    if (before !== stamp) {
      console.log('the page reader changed since the data set was read: every form is read again');
      force = true;
    }
  }
  const sets: Array<[DataForm['set'], string]> = [
    ['corpus', path.join(SHARED, 'corpus')],
    ['train', path.join(SHARED, 'corpus-train')],
  ];
  let done = 0;
  let failed = 0;
  for (const [set, dir] of sets) {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as ManifestEntry[];
    for (const entry of manifest) {
      const name = path.basename(entry.file, '.pdf');
      if (only && !name.includes(only)) continue;
      const out = formFile(set, name);
      if (!force && fs.existsSync(out)) continue;
      const started = performance.now();
      try {
        const truthFile = JSON.parse(fs.readFileSync(path.join(dir, entry.truth), 'utf8')) as TruthFile;
        const { bytes, widgetsLeft } = await stripWidgets(new Uint8Array(fs.readFileSync(path.join(dir, entry.file))), entry.encrypted !== false);
        if (widgetsLeft) throw new Error(`${widgetsLeft} widgets left after stripping`);
        const graphics = await readForm(bytes);
        const pages: DataPage[] = graphics.map((g, i) => ({
          pageNumber: i + 1,
          graphics: g,
          truth: truthFile.widgets.flatMap((w) => {
            const cls = CLASS_OF[w.type];
            return w.pageNumber === i + 1 && !w.hidden && cls ? [{ rect: w.rect, cls, type: w.type }] : [];
          }),
        }));
        const form: DataForm = {
          set,
          name,
          repo: entry.sourceRepo,
          kind: entry.kind ?? 'unknown',
          language: entry.language ?? 'unknown',
          producerFamily: entry.producerFamily ?? 'unknown',
          pages,
        };
        fs.writeFileSync(out + '.tmp', JSON.stringify(form));
        fs.renameSync(out + '.tmp', out);
        done++;
        console.log(`${set}/${name}: ${pages.length} pages, ${Math.round(performance.now() - started)} ms`);
      } catch (error) {
        failed++;
        console.error(`${set}/${name}: skipped: ${(error as Error).message}`);
      }
    }
  }
  // The synthetic training pages: drawn again when missing, or drawn by another version of
  // synthetic.ts; files of forms it no longer draws are removed.
  const generator = createHash('sha256').update(fs.readFileSync(path.join(import.meta.dirname, 'synthetic.ts'))).digest('hex').slice(0, 16);
  const synthetic = Array.from({ length: SYNTHETIC_FORMS }, (_, i) => formFile('synth', syntheticName(i)));
  const stale = (file: string) => !fs.existsSync(file) || (JSON.parse(fs.readFileSync(file, 'utf8')) as DataForm).generator !== generator;
  if (!only && (force || synthetic.some(stale))) {
    for (const form of await syntheticForms()) {
      const out = formFile(form.set, form.name);
      fs.writeFileSync(out + '.tmp', JSON.stringify({ ...form, generator }));
      fs.renameSync(out + '.tmp', out);
    }
    console.log(`synthetic training pages: ${SYNTHETIC_FORMS} forms drawn`);
  }
  for (const file of fs.readdirSync(PAGES_DIR)) {
    if (file.startsWith('synth--') && !synthetic.includes(path.join(PAGES_DIR, file))) fs.rmSync(path.join(PAGES_DIR, file));
  }
  // Only a whole data set read by this reader is stamped (`--only` reads a part of it).
  if (!only) fs.writeFileSync(stampFile, stamp);
  console.log(`data set: ${done} forms read, ${failed} skipped, in ${PAGES_DIR}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
  await build(args.includes('--force'), only);
}
