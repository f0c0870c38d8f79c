/**
 * Proves that a change to the run-time path kept its outputs: on every page of the data set cache
 * (`.cache/detect/pages`, dataset.ts), the proposals (`proposalsOf`: boxes, kinds, classes, labels,
 * in order) and their feature rows as the model reads them (float32, compared bit for bit) and the
 * fields of `detectLayout` (the committed model) must be the same with this worktree's code as
 * with the code of `--base` (another worktree, e.g. one checked out at main).
 *
 *   node --import tsx scripts/detect/same-output.ts --base /tmp/main-worktree [--only <substring>] [--whole]
 *
 * With `--whole`, the whole detection as the service runs it is compared too (`openForDetection`
 * and `detectFields`: pdf.js's reading, the page loop, the exact sources, the merge): its fields
 * and its stats but the time, or its error, for every form of ../shared/corpus and
 * ../shared/corpus-train as it is (widgets and all) and with its widgets stripped. Each code runs
 * with the streams inflated as its detection process inflates them: on its thread when the code
 * has src/detect/inflate.ts (`inflateOnThisThread`), else by Node's `DecompressionStream`.
 *
 * Prints the first differences (page, proposal, feature name) and exits 1 when any; else prints
 * how many pages, proposals, feature values and fields were compared.
 */
import fs from 'node:fs';
import path from 'node:path';
import { stripWidgets } from '../../bench/corpus.js';
import { loadDataset, SHARED } from './dataset.js';
import type { PageGraphics } from '../../src/detect/layout-page.js';

const args = process.argv.slice(2);
const option = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const baseDir = option('--base');
if (!baseDir) throw new Error('usage: same-output.ts --base <worktree> [--only <substring>]');
const only = option('--only');

interface Code {
  proposalsOf: (page: PageGraphics) => { proposals: Array<Record<string, unknown>>; features: ArrayLike<ArrayLike<number>> };
  detectLayout: (page: PageGraphics, pageNumber: number) => unknown[];
  FEATURE_NAMES: readonly string[];
}
const load = async (dir: string): Promise<Code> => {
  const model = await import(path.resolve(dir, 'src/detect/model.ts'));
  const features = await import(path.resolve(dir, 'src/detect/features.ts'));
  return { proposalsOf: model.proposalsOf, detectLayout: model.detectLayout, FEATURE_NAMES: features.FEATURE_NAMES };
};
const base = await load(baseDir);
const mine = await load(path.resolve(import.meta.dirname, '../..'));
if (JSON.stringify(base.FEATURE_NAMES) !== JSON.stringify(mine.FEATURE_NAMES)) throw new Error('the feature names differ');
const names = mine.FEATURE_NAMES;

const forms = loadDataset((f) => !only || f.includes(only));
const differences: string[] = [];
const differ = (what: string) => {
  if (differences.length < 30) console.log(what);
  differences.push(what);
};
const proposalKey = (p: Record<string, unknown>) => JSON.stringify([p.x, p.y, p.w, p.h, p.kind, p.cls, p.label]);
const a32 = new Float32Array(1);
const b32 = new Float32Array(1);
const aBits = new Uint32Array(a32.buffer);
const bBits = new Uint32Array(b32.buffer);
let pages = 0;
let proposals = 0;
let values = 0;
let fields = 0;
for (const form of forms) {
  for (const page of form.pages) {
    const where = `${form.set}/${form.name} p${page.pageNumber}`;
    pages++;
    const a = base.proposalsOf(page.graphics);
    const b = mine.proposalsOf(page.graphics);
    if (a.proposals.length !== b.proposals.length) differ(`${where}: ${a.proposals.length} proposals on main, ${b.proposals.length} here`);
    const n = Math.min(a.proposals.length, b.proposals.length);
    for (let i = 0; i < n; i++) {
      if (proposalKey(a.proposals[i]!) !== proposalKey(b.proposals[i]!)) {
        differ(`${where}: proposal ${i}: ${proposalKey(a.proposals[i]!)} on main, ${proposalKey(b.proposals[i]!)} here`);
        continue;
      }
      const ra = a.features[i]!;
      const rb = b.features[i]!;
      if (ra.length !== names.length || rb.length !== names.length) differ(`${where}: proposal ${i}: rows of ${ra.length} and ${rb.length} values`);
      for (let f = 0; f < names.length; f++) {
        a32[0] = ra[f]!;
        b32[0] = rb[f]!;
        if (aBits[0] !== bBits[0]) differ(`${where}: proposal ${i} (${String(b.proposals[i]!.kind)}): ${names[f]} ${a32[0]} on main, ${b32[0]} here`);
      }
      values += names.length;
    }
    proposals += n;
    const fa = JSON.stringify(base.detectLayout(page.graphics, page.pageNumber));
    const fb = JSON.stringify(mine.detectLayout(page.graphics, page.pageNumber));
    if (fa !== fb) differ(`${where}: the fields differ:\n  main ${fa.slice(0, 400)}\n  here ${fb.slice(0, 400)}`);
    fields += (JSON.parse(fb) as unknown[]).length;
  }
}

/** The whole detection of `bytes` by `code`: its result without the time, or its error. */
async function detectWhole(code: WholeCode, bytes: Uint8Array): Promise<string> {
  const restore = code.inflateOnThisThread?.();
  try {
    const task = code.openForDetection(bytes.slice());
    try {
      const { fields, stats } = await code.detectFields((await task.promise) as never);
      return JSON.stringify({ fields, stats: { ...stats, durationMs: undefined } });
    } catch (error) {
      return `error: ${(error as Error).message}`;
    } finally {
      await task.destroy();
    }
  } finally {
    restore?.();
  }
}
interface WholeCode {
  openForDetection: (data: Uint8Array) => { promise: Promise<unknown>; destroy(): Promise<void> };
  detectFields: (doc: never) => Promise<{ fields: unknown[]; stats: Record<string, unknown> }>;
  inflateOnThisThread?: (onThisThread?: boolean) => () => void;
}
let wholeRuns = 0;
let wholeFields = 0;
if (args.includes('--whole')) {
  const loadWhole = async (dir: string): Promise<WholeCode> => {
    const inflate = path.resolve(dir, 'src/detect/inflate.ts');
    return {
      ...(await import(path.resolve(dir, 'src/detect/open.ts'))),
      ...(await import(path.resolve(dir, 'src/detect/pipeline.ts'))),
      ...(fs.existsSync(inflate) ? await import(inflate) : {}),
    };
  };
  const codes = [await loadWhole(baseDir), await loadWhole(path.resolve(import.meta.dirname, '../..'))];
  for (const set of ['corpus', 'corpus-train']) {
    const dir = path.join(SHARED, set);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Array<{ file: string; encrypted: boolean | string }>;
    for (const entry of manifest) {
      const name = path.basename(entry.file, '.pdf');
      if (only && !name.includes(only)) continue;
      const original = new Uint8Array(fs.readFileSync(path.join(dir, entry.file)));
      const variants: Array<[string, Uint8Array]> = [['as it is', original]];
      try {
        variants.push(['stripped', (await stripWidgets(original, entry.encrypted !== false)).bytes]);
      } catch (error) {
        console.log(`${set}/${name}: not stripped (${(error as Error).message}); compared as it is only`);
      }
      for (const [variant, bytes] of variants) {
        const [a, b] = [await detectWhole(codes[0]!, bytes), await detectWhole(codes[1]!, bytes)];
        if (a !== b) differ(`${set}/${name} (${variant}): the detections differ:\n  base ${a.slice(0, 400)}\n  here ${b.slice(0, 400)}`);
        wholeRuns++;
        if (b.startsWith('{')) wholeFields += (JSON.parse(b) as { fields: unknown[] }).fields.length;
      }
    }
  }
}

if (differences.length) {
  console.log(`${differences.length} differences on ${pages} pages${wholeRuns ? ` and ${wholeRuns} whole detections` : ''}`);
  process.exit(1);
}
console.log(`Same outputs on ${pages} pages of ${forms.length} forms: ${proposals} proposals, ${values} feature values (float32, bit for bit), ${fields} fields of detectLayout.`);
if (wholeRuns) console.log(`Same whole detections (openForDetection, detectFields) of ${wholeRuns} files, forms as they are and stripped: ${wholeFields} fields.`);
