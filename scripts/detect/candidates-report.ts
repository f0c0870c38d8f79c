/**
 * Candidate recall of the proposer (src/detect/candidates.ts) over the cached data set
 * (scripts/detect/dataset.ts): the share of truth boxes with some proposal at IoU ≥ 0.5 (and
 * 0.3), overall, per class, per kind / language / producer family of form, which proposal kinds
 * give the matches, proposals per page, time per page of proposals + features, and the forms
 * with the worst recall.
 *
 *   node --import tsx scripts/detect/candidates-report.ts [--only <substring>] [--worst N] [--misses <form>]
 */
import { featuresWith } from '../../src/detect/features.js';
import { PageModel, proposeWith, PROPOSAL_KINDS, type Proposal, type ProposalKind } from '../../src/detect/candidates.js';
import { FEATURE_NAMES } from '../../src/detect/features.js';
import type { Box } from '../../src/detect/layout-page.js';
import { loadDataset, type DataForm, type TruthBox } from './dataset.js';

const args = process.argv.slice(2);
const opt = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = opt('--only');
const worstN = Number(opt('--worst') ?? 25);
const missesOf = opt('--misses');

function iou(a: Box, b: Box): number {
  const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
  if (w <= 0 || h <= 0) return 0;
  return (w * h) / (a.w * a.h + b.w * b.h - w * h);
}

interface Tally {
  truth: number;
  hit5: number;
  hit3: number;
}
const tally = (): Tally => ({ truth: 0, hit5: 0, hit3: 0 });
const groups = new Map<string, Map<string, Tally>>();
function count(group: string, key: string, hit5: boolean, hit3: boolean): void {
  let g = groups.get(group);
  if (!g) groups.set(group, (g = new Map()));
  let t = g.get(key);
  if (!t) g.set(key, (t = tally()));
  t.truth++;
  if (hit5) t.hit5++;
  if (hit3) t.hit3++;
}

const byKind = new Map<ProposalKind, { proposals: number; bestFor: number; anyFor: number; onlyFor: number }>(PROPOSAL_KINDS.map((k) => [k, { proposals: 0, bestFor: 0, anyFor: 0, onlyFor: 0 }]));
const perPage: number[] = [];
const msPerPage: number[] = [];
const cpuPerPage: number[] = [];
const perForm: Array<{ form: DataForm; truth: number; hit5: number }> = [];
let nonFinite = 0;
/** Truth boxes less than 2 pt wide or high (no proposal can match them), and those matched. */
let degenerate = 0;
let degenerateHit = 0;
/** Missed truth boxes with no rule or box drawn near them (what the page reader gives has nothing there). */
let bareMisses = 0;

// Real forms only: the synthetic training pages (synthetic.ts) are not part of any figure.
const forms = loadDataset((f) => !f.startsWith('synth--') && (!only || f.includes(only)));
for (const form of forms) {
  let truthN = 0;
  let hitN = 0;
  for (const page of form.pages) {
    const g = page.graphics;
    const started = performance.now();
    const cpu = process.cpuUsage();
    const model = new PageModel(g);
    const proposals = proposeWith(model);
    const rows = featuresWith(model, proposals);
    msPerPage.push(performance.now() - started);
    const used = process.cpuUsage(cpu);
    cpuPerPage.push((used.user + used.system) / 1000);
    for (const r of rows) if (r.length !== FEATURE_NAMES.length || r.some((v) => !Number.isFinite(v))) nonFinite++;
    perPage.push(proposals.length);
    for (const p of proposals) byKind.get(p.kind)!.proposals++;
    for (const t of page.truth) {
      const box = { x: t.rect.x * g.width, y: t.rect.y * g.height, w: t.rect.width * g.width, h: t.rect.height * g.height };
      let best = 0;
      let bestP: Proposal | null = null;
      const kinds = new Set<ProposalKind>();
      for (const p of proposals) {
        const v = iou(box, p);
        if (v >= 0.5) kinds.add(p.kind);
        if (v > best) {
          best = v;
          bestP = p;
        }
      }
      const hit5 = best >= 0.5;
      const hit3 = best >= 0.3;
      if (hit5 && bestP) byKind.get(bestP.kind)!.bestFor++;
      for (const k of kinds) byKind.get(k)!.anyFor++;
      if (kinds.size === 1) byKind.get([...kinds][0]!)!.onlyFor++;
      truthN++;
      if (hit5) hitN++;
      if (box.w < 2 || box.h < 2) {
        degenerate++;
        if (hit5) degenerateHit++;
      } else if (!hit5 && !drawnNear(model, g, box)) bareMisses++;
      count('all', 'all', hit5, hit3);
      count('class', t.cls, hit5, hit3);
      count('set', form.set, hit5, hit3);
      count('kind', form.kind, hit5, hit3);
      count('language', form.language, hit5, hit3);
      count('producer', form.producerFamily, hit5, hit3);
      if (missesOf && form.name.includes(missesOf) && !hit5) printMiss(form, page.pageNumber, t, box, bestP, best);
    }
  }
  perForm.push({ form, truth: truthN, hit5: hitN });
}

/** Whether a rule or a box (not one much bigger than it) is drawn within 6 pt of a truth box. */
function drawnNear(model: PageModel, g: DataForm['pages'][number]['graphics'], b: Box): boolean {
  const r = 6;
  if (model.hGrid.query(b.x - r, b.y - r, b.x + b.w + r, b.y + b.h + r).length) return true;
  if (model.vGrid.query(b.x - r, b.y - r, b.x + b.w + r, b.y + b.h + r).length) return true;
  return g.shapes.some((s) => s.x < b.x + b.w + r && s.x + s.w > b.x - r && s.y < b.y + b.h + r && s.y + s.h > b.y - r && !(s.w > b.w * 4 && s.h > b.h * 4));
}

function printMiss(form: DataForm, pageNumber: number, t: TruthBox, box: Box, p: Proposal | null, v: number): void {
  const r = (b: Box) => [b.x, b.y, b.w, b.h].map((n) => n.toFixed(1)).join(',');
  console.log(`miss ${form.name} p${pageNumber} ${t.cls} [${r(box)}] best ${v.toFixed(2)} ${p ? `${p.kind} [${r(p)}] '${p.label}'` : ''}`);
}

const pct = (n: number, d: number) => (d ? (n / d).toFixed(3) : '-');
const q = (xs: number[], f: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(f * s.length))]! : 0;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

console.log(`forms ${forms.length}, pages ${perPage.length}, features ${FEATURE_NAMES.length}${nonFinite ? `, ${nonFinite} rows NOT finite/right length` : ''}`);
for (const [group, map] of groups) {
  console.log(`\n== ${group}: recall@0.5 recall@0.3 (truth boxes)`);
  for (const [key, t] of [...map].sort((a, b) => b[1].truth - a[1].truth)) console.log(`  ${key.padEnd(28)} ${pct(t.hit5, t.truth)}  ${pct(t.hit3, t.truth)}  (${t.truth})`);
}
const all = groups.get('all')!.get('all')!;
console.log(`\ntruth boxes under 2 pt wide or high: ${degenerate}; recall@0.5 without them: ${pct(all.hit5 - degenerateHit, all.truth - degenerate)}`);
console.log(`missed truth boxes with no rule or box drawn within 6 pt: ${bareMisses} of ${all.truth - all.hit5}`);
console.log('\n== proposal kinds: proposals, truth boxes (IoU ≥ 0.5) it matches best, matches at all, is the only kind to match');
for (const [k, v] of byKind) console.log(`  ${k.padEnd(22)} ${String(v.proposals).padStart(8)} ${String(v.bestFor).padStart(7)} ${String(v.anyFor).padStart(7)} ${String(v.onlyFor).padStart(7)}`);
console.log(`\nproposals per page: mean ${mean(perPage).toFixed(0)}, p95 ${q(perPage, 0.95)}, max ${Math.max(...perPage)}`);
console.log(`ms per page (proposals + features), wall: mean ${mean(msPerPage).toFixed(2)}, p95 ${q(msPerPage, 0.95).toFixed(2)}, max ${Math.max(...msPerPage).toFixed(1)}`);
// CPU time (all threads of the process, the garbage collector's too): steadier than the wall
// clock on a shared machine.
console.log(`ms per page (proposals + features), CPU: mean ${mean(cpuPerPage).toFixed(2)}, p95 ${q(cpuPerPage, 0.95).toFixed(2)}, max ${Math.max(...cpuPerPage).toFixed(1)}`);
console.log(`\n== worst forms (recall@0.5, truth boxes)`);
for (const f of perForm.filter((f) => f.truth >= 5).sort((a, b) => a.hit5 / a.truth - b.hit5 / b.truth).slice(0, worstN))
  console.log(`  ${pct(f.hit5, f.truth)} ${String(f.truth).padStart(4)}  ${f.form.set}--${f.form.name}  (${f.form.kind}, ${f.form.language}, ${f.form.producerFamily})`);
