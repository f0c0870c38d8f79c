/**
 * The training data of the learned layout detector: every page of the data set (dataset.ts)
 * through the run-time path's first half (model.ts `proposalsOf`: proposals and their features),
 * each proposal labelled by the truth: a field when its IoU with a truth box is at least 0.5, with
 * the best IoU and that truth box's class. Written to `.cache/detect/export/` (git-ignored) for
 * scripts/detect/train.py:
 *
 * - `header.json`: feature names, the columns of the two tables, the forms (set, name, repository,
 *   kind, language, producer) that rows point to, and the candidate recall;
 * - `features.f32`: one row of float32 features per proposal (little-endian);
 * - `rows.f64`: per proposal, float64: form, page, kind, cls, box (fractions of the page), label,
 *   best IoU, the class of that truth box (-1 when none overlaps), its index;
 * - `truth.f64`: per truth box: form, page, class, box.
 *
 *   node --import tsx scripts/detect/export.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { PROPOSAL_KINDS } from '../../src/detect/candidates.js';
import { FEATURE_NAMES } from '../../src/detect/features.js';
import { CLASSES, proposalsOf } from '../../src/detect/model.js';
import { iou } from '../../src/detect/geometry.js';
import { CACHE, loadDataset } from './dataset.js';

export const EXPORT_DIR = path.join(CACHE, 'export');
const ROW_COLUMNS = ['form', 'page', 'kind', 'cls', 'x', 'y', 'w', 'h', 'label', 'bestIou', 'truthCls', 'truthIndex'] as const;
const TRUTH_COLUMNS = ['form', 'page', 'cls', 'x', 'y', 'w', 'h'] as const;
const MATCH_IOU = 0.5;

/** Appends numbers to a growing typed buffer. */
class Column<T extends Float32Array | Float64Array> {
  private buffer: T;
  length = 0;
  constructor(private readonly make: (n: number) => T) {
    this.buffer = make(1 << 16);
  }
  push(values: ArrayLike<number>): void {
    if (this.length + values.length > this.buffer.length) {
      const bigger = this.make(Math.max(this.buffer.length * 2, this.length + values.length));
      bigger.set(this.buffer.subarray(0, this.length));
      this.buffer = bigger;
    }
    this.buffer.set(values, this.length);
    this.length += values.length;
  }
  bytes(): Buffer {
    const view = this.buffer.subarray(0, this.length);
    return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
  }
}

function writeAtomic(file: string, data: string | Buffer): void {
  fs.writeFileSync(file + '.tmp', data);
  fs.renameSync(file + '.tmp', file);
}

export function exportTraining(): void {
  const started = performance.now();
  const forms = loadDataset();
  const features = new Column((n) => new Float32Array(n));
  const rows = new Column((n) => new Float64Array(n));
  const truthRows = new Column((n) => new Float64Array(n));
  let proposals = 0;
  let positives = 0;
  let truthCount = 0;
  let truthAll = 0;
  let found = 0;
  forms.forEach((form, f) => {
    for (const page of form.pages) {
      const g = page.graphics;
      const truth = page.truth.map((t) => ({ ...t, cls: CLASSES.indexOf(t.cls) }));
      for (const t of truth) truthRows.push([f, page.pageNumber, t.cls, t.rect.x, t.rect.y, t.rect.width, t.rect.height]);
      // Truth count and candidate recall are figures of the real forms, not of synthetic pages.
      const real = form.set !== 'synth';
      if (real) truthCount += truth.length;
      truthAll += truth.length;
      const { proposals: props, features: rowsOf } = proposalsOf(g);
      const reached = new Set<number>();
      props.forEach((p, i) => {
        const rect = { x: p.x / g.width, y: p.y / g.height, width: p.w / g.width, height: p.h / g.height };
        let best = 0;
        let bestIndex = -1;
        truth.forEach((t, k) => {
          const v = iou(rect, t.rect);
          if (v > best) {
            best = v;
            bestIndex = k;
          }
        });
        const label = best >= MATCH_IOU ? 1 : 0;
        if (label) reached.add(bestIndex);
        positives += label;
        const values = rowsOf[i]!;
        if (values.length !== FEATURE_NAMES.length || values.some((v) => !Number.isFinite(v))) {
          throw new Error(`${form.set}/${form.name} page ${page.pageNumber}: proposal ${i} has ${values.length} features or a non-finite one`);
        }
        features.push(values);
        rows.push([
          f,
          page.pageNumber,
          PROPOSAL_KINDS.indexOf(p.kind),
          CLASSES.indexOf(p.cls),
          rect.x,
          rect.y,
          rect.width,
          rect.height,
          label,
          best,
          bestIndex >= 0 ? truth[bestIndex]!.cls : -1,
          bestIndex,
        ]);
      });
      proposals += props.length;
      // Candidate recall: truth boxes some proposal reaches at IoU ≥ 0.5 (not only its best one's).
      for (let k = 0; k < truth.length; k++) {
        if (reached.has(k)) continue;
        const t = truth[k]!;
        if (props.some((p) => iou({ x: p.x / g.width, y: p.y / g.height, width: p.w / g.width, height: p.h / g.height }, t.rect) >= MATCH_IOU)) reached.add(k);
      }
      if (real) found += reached.size;
    }
  });
  fs.mkdirSync(EXPORT_DIR, { recursive: true });
  writeAtomic(path.join(EXPORT_DIR, 'features.f32'), features.bytes());
  writeAtomic(path.join(EXPORT_DIR, 'rows.f64'), rows.bytes());
  writeAtomic(path.join(EXPORT_DIR, 'truth.f64'), truthRows.bytes());
  const header = {
    features: FEATURE_NAMES,
    kinds: PROPOSAL_KINDS,
    classes: CLASSES,
    rowColumns: ROW_COLUMNS,
    truthColumns: TRUTH_COLUMNS,
    forms: forms.map((f) => ({ set: f.set, name: f.name, repo: f.repo, kind: f.kind, language: f.language, producerFamily: f.producerFamily, pages: f.pages.length })),
    proposals,
    positives,
    truth: truthAll,
    truthOfRealForms: truthCount,
    candidateRecall: truthCount ? found / truthCount : 0,
  };
  writeAtomic(path.join(EXPORT_DIR, 'header.json'), JSON.stringify(header));
  console.log(
    `export: ${forms.length} forms, ${proposals} proposals (${positives} at IoU ≥ 0.5 with a truth box), ${truthCount} truth boxes of real forms, candidate recall ${(found / Math.max(1, truthCount)).toFixed(3)}, ${Math.round((performance.now() - started) / 1000)} s → ${EXPORT_DIR}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) exportTraining();
