/**
 * Where the time of `detectLayout` goes, per page of ../shared/corpus as the data set cache holds
 * it (`.cache/detect/pages/corpus--*.json`, read by `readPage`): proposals (candidates.ts),
 * features (features.ts), trees (the committed model's field margins), and the whole
 * `detectLayout`. CPU time of this process, medians of BENCH_ROUNDS rounds over all pages.
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
  proposeCandidates: (page: unknown) => unknown[];
  proposalFeatures: (page: unknown, proposals: unknown[]) => ArrayLike<unknown>;
  proposalsOf: (page: unknown) => { proposals: unknown[]; features: ArrayLike<unknown> };
  detectLayout: (page: unknown, pageNumber: number) => unknown[];
  defaultModel: () => { field: unknown; features: string[] };
  margin: (set: unknown, row: ArrayLike<number>) => number;
}

const load = async (dir: string): Promise<Code> => {
  const candidates = await import(path.join(dir, 'src/detect/candidates.ts'));
  const features = await import(path.join(dir, 'src/detect/features.ts'));
  const model = await import(path.join(dir, 'src/detect/model.ts'));
  return { dir, proposeCandidates: candidates.proposeCandidates, proposalFeatures: features.proposalFeatures, proposalsOf: model.proposalsOf, detectLayout: model.detectLayout, defaultModel: model.defaultModel, margin: model.margin };
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
      const ps = code.proposeCandidates(graphics);
      proposals += cpu() - c;
      c = cpu();
      const rows = ps.length ? code.proposalFeatures(graphics, ps) : [];
      features += cpu() - c;
      c = cpu();
      const row = new Float32Array(model.features.length);
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i] as ArrayLike<number>;
        for (let f = 0; f < row.length; f++) row[f] = r[f]!;
        code.margin(model.field, row);
      }
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
console.log('| code | proposals | features | trees (all field trees, every proposal) | detectLayout |');
console.log('|---|---|---|---|---|');
for (const [dir, t] of times) console.log(`| ${dir} | ${median(t.proposals).toFixed(1)} | ${median(t.features).toFixed(1)} | ${median(t.trees).toFixed(1)} | ${median(t.detectLayout).toFixed(1)} |`);
