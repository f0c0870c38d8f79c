/**
 * Where the time of `detectLayout` goes, per page of ../shared/corpus as the data set cache holds
 * it (`.cache/detect/pages/corpus--*.json`, read by `readPage`): the page read for them and the
 * proposals (candidates.ts `PageModel`, `proposeWith`), their features (features.ts
 * `featuresWith`), the trees (the committed model's field margins of every proposal:
 * `fieldMarginsOf` where the code has it, which adds the second field model and the neighbours'
 * scores it reads; else `margins`, with the model's early cuts where it has them; else `margin`
 * row by row),
 * and the whole `detectLayout`. CPU time of this process, medians of BENCH_ROUNDS rounds over all
 * pages.
 *
 *   node --import tsx bench/detect-stages.ts [--code <worktree>]...
 *
 * With `--code` (repeatable), the modules of that worktree are timed instead, alternating
 * worktrees round by round in one process (to compare a branch with main on a busy machine).
 */
import path from 'node:path';
import { loadDataset } from '../scripts/detect/dataset.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const args = process.argv.slice(2);
const codes: string[] = [];
for (let i = 0; i < args.length; i++) if (args[i] === '--code') codes.push(path.resolve(args[++i]!));
if (!codes.length) codes.push(path.resolve(import.meta.dirname, '..'));

interface Code {
  dir: string;
  PageModel: new (page: unknown) => unknown;
  proposeWith: (model: unknown) => unknown[];
  featuresWith: (model: unknown, proposals: unknown[]) => ArrayLike<ArrayLike<number>>;
  detectLayout: (page: unknown, pageNumber: number) => unknown[];
  defaultModel: () => { field: unknown; features: string[]; cut?: unknown; cuts?: unknown };
  margin: (set: unknown, row: ArrayLike<number>) => number;
  margins?: (set: unknown, rows: Float32Array, count: number, width: number, cut?: unknown) => Float64Array; // an EarlyCut, or its list (the code since the model has several cuts)
  fieldMarginsOf?: (model: unknown, page: unknown, proposals: unknown[], matrix: Float32Array) => Float64Array; // the code since the second field model
}

const load = async (dir: string): Promise<Code> => {
  const candidates = await import(path.join(dir, 'src/detect/candidates.ts'));
  const features = await import(path.join(dir, 'src/detect/features.ts'));
  const model = await import(path.join(dir, 'src/detect/model.ts'));
  return { dir, PageModel: candidates.PageModel, proposeWith: candidates.proposeWith, featuresWith: features.featuresWith, detectLayout: model.detectLayout, defaultModel: model.defaultModel, margin: model.margin, margins: model.margins, fieldMarginsOf: model.fieldMarginsOf };
};

const forms = loadDataset((f) => f.startsWith('corpus--'));
const pages = forms.flatMap((f) => f.pages);
const loaded = await Promise.all(codes.map(load));
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

type Stage = 'proposals' | 'features' | 'trees' | 'detectLayout';
const times = new Map<string, Record<Stage, number[]>>(loaded.map((c) => [c.dir, { proposals: [], features: [], trees: [], detectLayout: [] }]));
for (let round = 0; round <= ROUNDS; round++) {
  for (const code of loaded) {
    const t = times.get(code.dir)!;
    const model = code.defaultModel();
    let proposals = 0;
    let features = 0;
    let trees = 0;
    for (const page of pages) {
      const graphics = page.graphics;
      let c = cpu();
      const read = new code.PageModel(graphics);
      const ps = code.proposeWith(read);
      proposals += cpu() - c;
      c = cpu();
      const rows = ps.length ? code.featuresWith(read, ps) : [];
      features += cpu() - c;
      const N = model.features.length;
      const matrix = new Float32Array(rows.length * N);
      for (let i = 0; i < rows.length; i++) matrix.set(rows[i]!, i * N);
      c = cpu();
      // With the model's early cuts where it has them (one `cut` before, a list `cuts` since; code before any cut ignores the argument).
      if (code.fieldMarginsOf) code.fieldMarginsOf(model, graphics, ps, matrix);
      else if (code.margins) code.margins(model.field, matrix, rows.length, N, model.cuts ?? model.cut);
      else for (let i = 0; i < rows.length; i++) code.margin(model.field, matrix.subarray(i * N, (i + 1) * N));
      trees += cpu() - c;
    }
    let c = cpu();
    for (const page of pages) code.detectLayout(page.graphics, page.pageNumber);
    const whole = cpu() - c;
    // The first round warms up and is not counted.
    if (round === 0) continue;
    t.proposals.push(proposals / pages.length);
    t.features.push(features / pages.length);
    t.trees.push(trees / pages.length);
    t.detectLayout.push(whole / pages.length);
  }
}
console.log(`${pages.length} pages of ../shared/corpus (data set cache), CPU ms per page, median of ${ROUNDS} rounds:`);
console.log('| code | page read and proposals | features | trees (field margins of every proposal) | detectLayout |');
console.log('|---|---|---|---|---|');
for (const [dir, t] of times) console.log(`| ${dir} | ${median(t.proposals).toFixed(1)} | ${median(t.features).toFixed(1)} | ${median(t.trees).toFixed(1)} | ${median(t.detectLayout).toFixed(1)} |`);
