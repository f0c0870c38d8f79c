/**
 * The learned layout detector at run time: a page's proposals (candidates.ts) and their features
 * (features.ts) scored by gradient-boosted trees trained offline (scripts/detect/train.py), the
 * score turned into a calibrated probability, and the boxes at or above the model's acceptance
 * threshold kept as fields, overlapping ones resolved by non-maximum suppression (the field score,
 * plus how well the box fits the field it is placed on when the model has a placement model).
 *
 * The model is a JSON file (src/detect/model/layout-model.json, committed): its trees are read and
 * walked here in plain TypeScript, with no native or Python dependency at run time. A model whose
 * feature names are not features.ts's FEATURE_NAMES, in order, is refused: it was trained on
 * other features and its scores would mean nothing.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FieldType } from '../domain/fields.js';
import { checkBoxLabelOf, iouBox, PageModel, PROPOSAL_KINDS, proposeWith, type Proposal } from './candidates.js';
import { NEIGHBOUR_NAMES, neighbourFeatures } from './neighbours.js';
import { FEATURE_NAMES, featureMatrix, featureRows } from './features.js';
import { lineHeightOf, toField, typeFor } from './layout.js';
import type { Box, PageGraphics } from './layout-page.js';
import type { DetectedField } from './types.js';

/** One regression tree, its nodes in arrays (XGBoost's layout); node 0 is the root. */
export interface Tree {
  /** The feature a node splits on; -1 for a leaf. */
  f: number[];
  /** A split's threshold (go left when the value is below it), or a leaf's value. */
  v: number[];
  /** Left and right children (greater than the node's own index). */
  l: number[];
  r: number[];
  /** 1 where a missing (NaN) value goes left. */
  d: number[];
}

export interface TreeSet {
  /** Added to the sum of the leaves (the prior, as a margin). */
  baseMargin: number;
  trees: Tree[];
}

export const CLASSES = ['text', 'checkbox', 'signature'] as const;
export type FieldClass = (typeof CLASSES)[number];

export interface LayoutModel {
  features: string[];
  /** Is a proposal a field: a log-odds margin. */
  field: TreeSet;
  /** Which class a field is: one margin per class, tree `i` adding to class `treeClass[i]`. */
  class: TreeSet & { treeClass: number[] };
  /** Margin to probability: a non-decreasing table, linear between its points, flat past its ends. */
  calibration: { x: number[]; y: number[] };
  /** Boxes whose calibrated probability is at least this are fields. */
  threshold: number;
  /**
   * A box is suppressed by an accepted one when their IoU is at least `iou`, or when at least
   * `contain` of it lies inside an accepted box of its class. Boxes are taken best first: by their
   * field margin plus `placementWeight` times their placement margin (0 without a placement model).
   * When `fuseIou` is more than 0, each accepted box is then moved to the mean of the boxes at or
   * above the threshold that overlap it by IoU ≥ `fuseIou` (`fuse`); 0 (models written before it)
   * leaves the accepted boxes where they are. It is never under `iou`, so that no two accepted
   * boxes (two fields) are fused with each other.
   */
  nms: { iou: number; contain: number; placementWeight: number; fuseIou: number };
  /**
   * How well a box fits the field it is placed on (a log-odds margin of its IoU with it), when the
   * model has one: of two overlapping boxes that both reach the threshold, it decides which is
   * taken first. It changes which boxes are fields, never whether a box reaches the threshold.
   */
  placement?: TreeSet;
  /**
   * The early cuts (`margins`), when the model has them: a proposal whose margin after the first
   * `after` field trees is under `margin` is walked no further and is no field. train.py sets each
   * under the partial margin of every box that reached the threshold, out of fold and on the
   * model's own training rows.
   */
  cuts?: EarlyCut[];
  /**
   * The second field model, when the model has one (neighbours.ts): the proposals whose margin from
   * `field` is at least `scoredFrom` are scored again, on their features followed by their
   * neighbours' scores (`names`, neighbours.ts's NEIGHBOUR_NAMES: how `field` scored the proposals
   * around them, those under `floor` or stopped by its cuts counting as probability 0), and that margin is the one
   * calibrated, thresholded and ranked. The others are no fields. train.py fits the first model's
   * early cuts (`cuts`) to stop no proposal that reaches `scoredFrom`, and the second model's own
   * (`second.cuts`) to stop no box that reaches the threshold.
   */
  second?: { floor: number; scoredFrom: number; names: string[]; field: TreeSet; cuts?: EarlyCut[] };
}

export interface EarlyCut {
  after: number;
  margin: number;
}

const fail = (what: string): never => {
  throw new Error(`layout model: ${what}`);
};

const isNumbers = (a: unknown, integer = false): a is number[] => Array.isArray(a) && a.every((n) => typeof n === 'number' && Number.isFinite(n) && (!integer || Number.isInteger(n)));

function parseTree(value: unknown, features: number, where: string): Tree {
  const t = value as Partial<Tree> | null;
  if (!t || typeof t !== 'object' || !isNumbers(t.f, true) || !isNumbers(t.v) || !isNumbers(t.l, true) || !isNumbers(t.r, true) || !isNumbers(t.d, true)) return fail(`${where}: a tree needs arrays f, v, l, r, d of numbers`);
  const n = t.f.length;
  if (n === 0 || [t.v, t.l, t.r, t.d].some((a) => a.length !== n)) return fail(`${where}: a tree's arrays must be non-empty and of one length`);
  for (let i = 0; i < n; i++) {
    if (t.f[i]! < 0) continue;
    if (t.f[i]! >= features) fail(`${where}: node ${i} splits on feature ${t.f[i]} of ${features}`);
    // Children after their parent: every walk ends.
    if (!(t.l[i]! > i && t.l[i]! < n && t.r[i]! > i && t.r[i]! < n)) fail(`${where}: node ${i} has children out of order or range`);
  }
  // XGBoost compares in single precision: so does this evaluator.
  return { f: t.f, v: t.v.map((v, i) => (t.f![i]! >= 0 ? Math.fround(v) : v)), l: t.l, r: t.r, d: t.d };
}

function parseTreeSet(value: unknown, features: number, where: string): TreeSet {
  const s = value as Partial<TreeSet> | null;
  if (!s || typeof s !== 'object' || typeof s.baseMargin !== 'number' || !Number.isFinite(s.baseMargin) || !Array.isArray(s.trees)) return fail(`${where}: needs baseMargin and trees`);
  return { baseMargin: s.baseMargin, trees: s.trees.map((t, i) => parseTree(t, features, `${where} tree ${i}`)) };
}

/** Checks a model's JSON and builds it; throws with what is wrong. */
export function parseModel(json: unknown, featureNames: readonly string[] = FEATURE_NAMES): LayoutModel {
  const m = json as Record<string, unknown> | null;
  if (!m || typeof m !== 'object') return fail('not an object');
  const names = m.features;
  if (!Array.isArray(names) || names.length !== featureNames.length || names.some((n, i) => n !== featureNames[i])) {
    return fail('its feature names are not those of features.ts (FEATURE_NAMES): retrain it with npm run train:detect');
  }
  const field = parseTreeSet(m.field, names.length, 'field');
  const cls = m.class as { treeClass?: unknown } | undefined;
  const classSet = parseTreeSet(cls, names.length, 'class');
  const treeClass = cls?.treeClass;
  if (!isNumbers(treeClass, true) || treeClass.length !== classSet.trees.length || treeClass.some((c) => c < 0 || c >= CLASSES.length)) return fail('class: treeClass must give a class for every tree');
  if (JSON.stringify(m.classes) !== JSON.stringify(CLASSES)) return fail(`classes must be ${CLASSES.join(', ')}`);
  const cal = m.calibration as { x?: unknown; y?: unknown } | undefined;
  if (!cal || !isNumbers(cal.x) || !isNumbers(cal.y) || cal.x.length !== cal.y.length || cal.x.length === 0) return fail('calibration needs tables x and y of one length');
  for (let i = 1; i < cal.x.length; i++) if (!(cal.x[i]! > cal.x[i - 1]!) || cal.y[i]! < cal.y[i - 1]!) fail('calibration must be increasing');
  if (cal.y.some((y) => y < 0 || y > 1)) fail('calibration probabilities must be in 0..1');
  const threshold = m.threshold;
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold <= 1)) return fail('threshold must be in (0, 1]');
  const nms = m.nms as { iou?: unknown; contain?: unknown; placementWeight?: unknown; fuseIou?: unknown } | undefined;
  if (!nms || typeof nms.iou !== 'number' || typeof nms.contain !== 'number' || !(nms.iou > 0 && nms.iou <= 1) || !(nms.contain > 0 && nms.contain <= 1)) return fail('nms needs iou and contain in (0, 1]');
  // A placement model and its weight come together.
  const placementWeight = nms.placementWeight === undefined ? 0 : nms.placementWeight;
  if (typeof placementWeight !== 'number' || !(Number.isFinite(placementWeight) && placementWeight >= 0)) return fail('nms.placementWeight must be a finite number, 0 or more');
  if ((m.placement === undefined) !== (nms.placementWeight === undefined)) return fail('placement (trees) and nms.placementWeight come together');
  const fuseIou = nms.fuseIou === undefined ? 0 : nms.fuseIou;
  if (typeof fuseIou !== 'number' || !(fuseIou >= 0 && fuseIou <= 1)) return fail('nms.fuseIou must be a number in [0, 1]');
  if (fuseIou > 0 && fuseIou < nms.iou) return fail('nms.fuseIou must be 0 (no fusion) or at least nms.iou');
  const parsed: LayoutModel = { features: names as string[], field, class: { ...classSet, treeClass }, calibration: { x: cal.x, y: cal.y }, threshold, nms: { iou: nms.iou, contain: nms.contain, placementWeight, fuseIou } };
  if (m.placement !== undefined) parsed.placement = parseTreeSet(m.placement, names.length, 'placement');
  // Models before the fifth session of 2026-11-28 had one cut (`cut`): read as a list of one.
  if (m.cut !== undefined && m.cuts !== undefined) return fail('a model has its early cuts as cuts (a list) or, as older models did, one cut; not both');
  const listed = m.cuts !== undefined ? m.cuts : m.cut !== undefined ? [m.cut] : undefined;
  if (listed !== undefined) parsed.cuts = parseCuts(listed, field, 'cuts');
  if (m.second !== undefined) {
    const c = m.second as { floor?: unknown; scoredFrom?: unknown; names?: unknown; field?: unknown; cuts?: unknown } | null;
    if (!c || typeof c !== 'object' || typeof c.floor !== 'number' || !Number.isFinite(c.floor)) return fail('second needs a finite floor');
    if (typeof c.scoredFrom !== 'number' || !Number.isFinite(c.scoredFrom) || c.scoredFrom < c.floor) return fail('second needs a finite scoredFrom, at least its floor');
    if (!Array.isArray(c.names) || c.names.length !== NEIGHBOUR_NAMES.length || c.names.some((n, i) => n !== NEIGHBOUR_NAMES[i])) {
      return fail('its second model\'s names are not those of neighbours.ts (NEIGHBOUR_NAMES): retrain it with npm run train:detect');
    }
    const secondField = parseTreeSet(c.field, names.length + NEIGHBOUR_NAMES.length, 'second field');
    parsed.second = { floor: c.floor, scoredFrom: c.scoredFrom, names: c.names as string[], field: secondField };
    if (c.cuts !== undefined) parsed.second.cuts = parseCuts(c.cuts, secondField, 'second.cuts');
  }
  return parsed;
}

/** A list of early cuts of the tree set `field` (`where`: where it is in the model, for the message). */
function parseCuts(listed: unknown, field: TreeSet, where: string): EarlyCut[] {
  const cuts = listed as Array<Partial<EarlyCut> | null>;
  const bad = (cut: Partial<EarlyCut> | null, i: number) =>
    !cut || typeof cut !== 'object' || !Number.isInteger(cut.after) || !(cut.after! >= 1 && cut.after! < field.trees.length) || (i > 0 && !(cut.after! > cuts[i - 1]!.after!)) || typeof cut.margin !== 'number' || !Number.isFinite(cut.margin);
  if (!Array.isArray(cuts) || cuts.some(bad)) {
    return fail(`${where} needs a list of early cuts, each with after (a whole number of trees, at least 1, fewer than the field trees and more than the cut before) and a finite margin`);
  }
  return cuts.map((cut) => ({ after: cut!.after!, margin: cut!.margin! }));
}

/** The sum of one tree's leaf for a feature row (in single precision, as XGBoost reads it). */
export function treeValue(tree: Tree, row: ArrayLike<number>): number {
  let n = 0;
  for (;;) {
    const f = tree.f[n]!;
    if (f < 0) return tree.v[n]!;
    const x = row[f]!;
    n = Number.isNaN(x) ? (tree.d[n] ? tree.l[n]! : tree.r[n]!) : x < tree.v[n]! ? tree.l[n]! : tree.r[n]!;
  }
}

/** A tree set's margin for a row. */
export function margin(set: TreeSet, row: ArrayLike<number>): number {
  let sum = set.baseMargin;
  for (const tree of set.trees) sum += treeValue(tree, row);
  return sum;
}

/**
 * A tree set laid out for scoring many rows at once: every tree padded to a complete binary tree
 * of the set's depth (an early leaf becomes splits whose two sides both lead to its value), its
 * nodes in heap order (the children of node n are 2n + 1 and 2n + 2) in flat typed arrays. A walk
 * is then `depth` steps with no test for a leaf, and a step's choice is arithmetic rather than a
 * branch, so that the walks of several rows interleave without mispredicted branches.
 */
interface CompleteTrees {
  depth: number;
  /**
   * Per tree, `2^depth - 1` split nodes: the feature (an index into a row) and the threshold. A
   * model's thresholds are single-precision numbers (`parseTree`) and are held as such, in half
   * the memory the walks read; a set with another threshold (made by hand) keeps them in double.
   */
  feature: Int32Array;
  threshold: Float32Array | Float64Array;
  /** Per tree, `2^depth` leaf values (as the model gives them, in double precision). */
  leaf: Float64Array;
  /** Some split sends a missing value left (`d`): rows with a NaN take the plain walk. */
  missingLeft: boolean;
}

/** Deeper trees are walked node by node: their complete form would take 2^depth nodes a tree. */
const MAX_COMPLETE_DEPTH = 10;
const completeForms = new WeakMap<TreeSet, CompleteTrees | null>();

function depthOf(tree: Tree, n = 0): number {
  return tree.f[n]! < 0 ? 0 : 1 + Math.max(depthOf(tree, tree.l[n]!), depthOf(tree, tree.r[n]!));
}

/** The complete form of a tree set (made once per set), or null when its trees are too deep. */
function completeTrees(set: TreeSet): CompleteTrees | null {
  let done = completeForms.get(set);
  if (done !== undefined) return done;
  const depth = Math.max(1, ...set.trees.map((t) => depthOf(t)));
  done = null;
  if (depth <= MAX_COMPLETE_DEPTH) {
    const inner = (1 << depth) - 1;
    const leaves = 1 << depth;
    const feature = new Int32Array(set.trees.length * inner);
    const float32Thresholds = set.trees.every((t) => t.f.every((f, n) => f < 0 || Math.fround(t.v[n]!) === t.v[n]));
    const threshold = float32Thresholds ? new Float32Array(set.trees.length * inner) : new Float64Array(set.trees.length * inner);
    const leaf = new Float64Array(set.trees.length * leaves);
    let missingLeft = false;
    set.trees.forEach((tree, k) => {
      // `node` of the tree at heap position `at`, `level` steps down.
      const place = (node: number, at: number, level: number): void => {
        if (level === depth) {
          leaf[k * leaves + at - inner] = tree.v[node]!;
          return;
        }
        const split = tree.f[node]! >= 0;
        // A leaf above the bottom: a split on feature 0 at 0 whose two sides are the same leaf.
        feature[k * inner + at] = split ? tree.f[node]! : 0;
        threshold[k * inner + at] = split ? tree.v[node]! : 0;
        if (split && tree.d[node]) missingLeft = true;
        place(split ? tree.l[node]! : node, 2 * at + 1, level + 1);
        place(split ? tree.r[node]! : node, 2 * at + 2, level + 1);
      };
      place(0, 0, 0);
    });
    done = { depth, feature, threshold, leaf, missingLeft };
  }
  completeForms.set(set, done);
  return done;
}

/** Walks side by side in one loop (8 independent ones): of 8 rows through a tree (`sumLeaves`), or of one row through 8 trees (`classMarginsOf`). */
const LANES = 8;
/** Rows scored together by every tree in turn (64 rows of about 100 float32 features: 26 kB). */
const BLOCK = 64;

/**
 * The margins of `count` rows of `width` float32 features laid end to end in `rows`: the same
 * numbers as `margin` row by row (the base, then each tree's leaf added in the trees' order), and
 * about 4 times faster on many rows: each tree is walked for all the rows in turn, 8 rows at a
 * time, in its complete form.
 *
 * With `cuts` (the model's early cuts, by increasing `after`), the first `cuts[0].after` trees
 * are walked for every row, the trees up to the next cut only for the rows whose margin so far is
 * at least `cuts[0].margin`, and so on; a row cut gets -Infinity (which `detectLayout` never
 * accepts). The other rows' margins are the same numbers as without cuts. A cut at or after the
 * last tree is no cut; each `after` must be a whole number of at least 1, more than the one before.
 */
export function margins(set: TreeSet, rows: Float32Array, count: number, width: number, cuts: readonly EarlyCut[] = []): Float64Array {
  let from = 0;
  for (const cut of cuts) {
    if (!(Number.isInteger(cut.after) && cut.after > from)) throw new Error(`layout model: an early cut after ${cut.after} trees (cuts need whole numbers of trees, at least 1, increasing)`);
    if (typeof cut.margin !== 'number' || Number.isNaN(cut.margin)) throw new Error(`layout model: an early cut at margin ${cut.margin} (a number is needed)`);
    from = cut.after;
  }
  const stages = cuts.filter((c) => c.after < set.trees.length);
  if (!stages.length) return sumLeaves(set, rows, count, width);
  const out = new Float64Array(count).fill(set.baseMargin);
  // The rows still going (their numbers: they stay where they are in `rows`) and their sums so far.
  let going = new Int32Array(count);
  for (let i = 0; i < count; i++) going[i] = i;
  let sums: Float64Array = out;
  from = 0;
  for (const cut of stages) {
    sums = sumLeaves(set, rows, going.length, width, from, cut.after, sums, going);
    from = cut.after;
    // The rows under the cut stop here; the others, together, go on through the next trees (each
    // sum carried on in the trees' order).
    let kept = 0;
    for (let k = 0; k < going.length; k++) if (sums[k]! >= cut.margin) kept++;
    const next = new Int32Array(kept);
    const nextSums = new Float64Array(kept);
    let j = 0;
    for (let k = 0; k < going.length; k++) {
      if (sums[k]! >= cut.margin) {
        next[j] = going[k]!;
        nextSums[j] = sums[k]!;
        j++;
      } else out[going[k]!] = -Infinity;
    }
    going = next;
    sums = nextSums;
    if (!kept) return out;
  }
  sums = sumLeaves(set, rows, going.length, width, from, set.trees.length, sums, going);
  for (let k = 0; k < going.length; k++) out[going[k]!] = sums[k]!;
  return out;
}

/**
 * The class margins of row `index` of `rows`, into `out` (`CLASSES.length` sums): the same numbers
 * as `classOf` adds (the base, then each tree's leaf added to its class's sum, the trees in
 * order). The row walks LANES trees side by side in their complete form (the walks are
 * independent), and their leaves are added in the trees' order.
 */
export function classMarginsOf(model: Pick<LayoutModel, 'class'>, rows: Float32Array, index: number, width: number, out: Float64Array = new Float64Array(CLASSES.length)): Float64Array {
  const set = model.class;
  const group = set.treeClass;
  out.fill(set.baseMargin, 0, CLASSES.length);
  const o = index * width;
  const trees = completeTrees(set);
  if (!trees || (trees.missingLeft && rows.subarray(o, o + width).some(Number.isNaN))) {
    const row = rows.subarray(o, o + width);
    for (let k = 0; k < set.trees.length; k++) out[group[k]!]! += treeValue(set.trees[k]!, row);
    return out;
  }
  const { depth, feature, threshold, leaf } = trees;
  const inner = (1 << depth) - 1;
  const count = set.trees.length;
  const bulk = count - (count % LANES);
  let k = 0;
  for (; k < bulk; k += LANES) {
    const f0 = k * inner, f1 = f0 + inner, f2 = f1 + inner, f3 = f2 + inner, f4 = f3 + inner, f5 = f4 + inner, f6 = f5 + inner, f7 = f6 + inner; // prettier-ignore
    let n0 = 0, n1 = 0, n2 = 0, n3 = 0, n4 = 0, n5 = 0, n6 = 0, n7 = 0; // prettier-ignore
    for (let level = 0; level < depth; level++) {
      n0 = 2 * n0 + 2 - +(rows[o + feature[f0 + n0]!]! < threshold[f0 + n0]!);
      n1 = 2 * n1 + 2 - +(rows[o + feature[f1 + n1]!]! < threshold[f1 + n1]!);
      n2 = 2 * n2 + 2 - +(rows[o + feature[f2 + n2]!]! < threshold[f2 + n2]!);
      n3 = 2 * n3 + 2 - +(rows[o + feature[f3 + n3]!]! < threshold[f3 + n3]!);
      n4 = 2 * n4 + 2 - +(rows[o + feature[f4 + n4]!]! < threshold[f4 + n4]!);
      n5 = 2 * n5 + 2 - +(rows[o + feature[f5 + n5]!]! < threshold[f5 + n5]!);
      n6 = 2 * n6 + 2 - +(rows[o + feature[f6 + n6]!]! < threshold[f6 + n6]!);
      n7 = 2 * n7 + 2 - +(rows[o + feature[f7 + n7]!]! < threshold[f7 + n7]!);
    }
    // Tree k's leaf n is leaf[k * (inner + 1) + n - inner].
    const l0 = k * (inner + 1) - inner;
    const step = inner + 1;
    out[group[k]!]! += leaf[l0 + n0]!;
    out[group[k + 1]!]! += leaf[l0 + step + n1]!;
    out[group[k + 2]!]! += leaf[l0 + 2 * step + n2]!;
    out[group[k + 3]!]! += leaf[l0 + 3 * step + n3]!;
    out[group[k + 4]!]! += leaf[l0 + 4 * step + n4]!;
    out[group[k + 5]!]! += leaf[l0 + 5 * step + n5]!;
    out[group[k + 6]!]! += leaf[l0 + 6 * step + n6]!;
    out[group[k + 7]!]! += leaf[l0 + 7 * step + n7]!;
  }
  for (; k < count; k++) {
    const f0 = k * inner;
    let n = 0;
    for (let level = 0; level < depth; level++) n = 2 * n + 2 - +(rows[o + feature[f0 + n]!]! < threshold[f0 + n]!);
    out[group[k]!]! += leaf[k * (inner + 1) - inner + n]!;
  }
  return out;
}

/**
 * Per row, the base plus each tree's leaf, the trees in order. Only trees `from` to `to`
 * (excluded) when given, added to `initial` (the sums so far) when given. The rows are the first
 * `count` of `rows`, or with `which`, rows `which[0]`, `which[1]` … of it (the sums in that order).
 */
function sumLeaves(set: TreeSet, rows: Float32Array, count: number, width: number, from = 0, to = set.trees.length, initial?: Float64Array, which?: Int32Array): Float64Array {
  const out = initial ?? new Float64Array(count).fill(set.baseMargin);
  const trees = completeTrees(set);
  // Where each row starts in `rows`.
  const at = new Int32Array(count);
  for (let i = 0; i < count; i++) at[i] = (which ? which[i]! : i) * width;
  // A NaN goes right in the complete form's steps: where a split wants it left, walk node by node.
  if (!trees || (trees.missingLeft && at.some((o) => rows.subarray(o, o + width).some(Number.isNaN)))) {
    for (let i = 0; i < count; i++) {
      const row = rows.subarray(at[i]!, at[i]! + width);
      for (let k = from; k < to; k++) out[i]! += treeValue(set.trees[k]!, row);
    }
    return out;
  }
  const { depth, feature, threshold, leaf } = trees;
  const inner = (1 << depth) - 1;
  // Rows a block at a time (BLOCK rows stay in the fastest cache while every tree walks them).
  for (let start = 0; start < count; start += BLOCK) {
    const end = Math.min(count, start + BLOCK);
    const bulk = end - ((end - start) % LANES);
    for (let k = from; k < to; k++) {
      const f0 = k * inner;
      // Leaves are numbered on from the split nodes: node n's leaf is leaf[l0 + n].
      const l0 = k * (inner + 1) - inner;
      let i = start;
      for (; i < bulk; i += LANES) {
        const o0 = at[i]!, o1 = at[i + 1]!, o2 = at[i + 2]!, o3 = at[i + 3]!, o4 = at[i + 4]!, o5 = at[i + 5]!, o6 = at[i + 6]!, o7 = at[i + 7]!; // prettier-ignore
        let n0 = 0, n1 = 0, n2 = 0, n3 = 0, n4 = 0, n5 = 0, n6 = 0, n7 = 0; // prettier-ignore
        for (let level = 0; level < depth; level++) {
          // Left (2n + 1) when the value is below the threshold, else right (2n + 2).
          n0 = 2 * n0 + 2 - +(rows[o0 + feature[f0 + n0]!]! < threshold[f0 + n0]!);
          n1 = 2 * n1 + 2 - +(rows[o1 + feature[f0 + n1]!]! < threshold[f0 + n1]!);
          n2 = 2 * n2 + 2 - +(rows[o2 + feature[f0 + n2]!]! < threshold[f0 + n2]!);
          n3 = 2 * n3 + 2 - +(rows[o3 + feature[f0 + n3]!]! < threshold[f0 + n3]!);
          n4 = 2 * n4 + 2 - +(rows[o4 + feature[f0 + n4]!]! < threshold[f0 + n4]!);
          n5 = 2 * n5 + 2 - +(rows[o5 + feature[f0 + n5]!]! < threshold[f0 + n5]!);
          n6 = 2 * n6 + 2 - +(rows[o6 + feature[f0 + n6]!]! < threshold[f0 + n6]!);
          n7 = 2 * n7 + 2 - +(rows[o7 + feature[f0 + n7]!]! < threshold[f0 + n7]!);
        }
        out[i] = out[i]! + leaf[l0 + n0]!;
        out[i + 1] = out[i + 1]! + leaf[l0 + n1]!;
        out[i + 2] = out[i + 2]! + leaf[l0 + n2]!;
        out[i + 3] = out[i + 3]! + leaf[l0 + n3]!;
        out[i + 4] = out[i + 4]! + leaf[l0 + n4]!;
        out[i + 5] = out[i + 5]! + leaf[l0 + n5]!;
        out[i + 6] = out[i + 6]! + leaf[l0 + n6]!;
        out[i + 7] = out[i + 7]! + leaf[l0 + n7]!;
      }
      for (; i < end; i++) {
        const o = at[i]!;
        let n = 0;
        for (let level = 0; level < depth; level++) n = 2 * n + 2 - +(rows[o + feature[f0 + n]!]! < threshold[f0 + n]!);
        out[i] = out[i]! + leaf[l0 + n]!;
      }
    }
  }
  return out;
}

/** The class of the highest of a row's class margins (the first of equal ones). */
function bestClass(sums: ArrayLike<number>): FieldClass {
  let best = 0;
  for (let c = 1; c < CLASSES.length; c++) if (sums[c]! > sums[best]!) best = c;
  return CLASSES[best]!;
}

/** The class model's answer for a row: the class with the highest margin. */
export function classOf(model: LayoutModel, row: ArrayLike<number>): FieldClass {
  const sums = CLASSES.map(() => model.class.baseMargin);
  model.class.trees.forEach((tree, i) => (sums[model.class.treeClass[i]!]! += treeValue(tree, row)));
  return bestClass(sums);
}

/** A margin as a calibrated probability (linear between the table's points, flat past its ends). */
export function calibrate(model: Pick<LayoutModel, 'calibration'>, m: number): number {
  const { x, y } = model.calibration;
  if (m <= x[0]!) return y[0]!;
  if (m >= x[x.length - 1]!) return y[y.length - 1]!;
  let lo = 0;
  let hi = x.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (x[mid]! <= m) lo = mid;
    else hi = mid;
  }
  const t = (m - x[lo]!) / (x[hi]! - x[lo]!);
  return y[lo]! + t * (y[hi]! - y[lo]!);
}

const overlap = (a1: number, a2: number, b1: number, b2: number) => Math.max(0, Math.min(a2, b2) - Math.max(a1, b1));

/**
 * Greedy non-maximum suppression in the order given (best first): a box is accepted unless an
 * accepted box overlaps it by IoU ≥ `nms.iou`, or an accepted box of its class holds `nms.contain`
 * of it; boxes under the threshold are never accepted and suppress nothing.
 */
export function suppress<T extends { box: { x: number; y: number; w: number; h: number }; probability: number; cls: () => FieldClass }>(
  scored: readonly T[],
  model: Pick<LayoutModel, 'threshold' | 'nms'>,
): Array<T & { fieldClass: FieldClass }> {
  const accepted: Array<T & { fieldClass: FieldClass }> = [];
  // The accepted boxes' edges and areas, in the order accepted (read by every later box).
  const x1 = new Float64Array(scored.length);
  const y1 = new Float64Array(scored.length);
  const x2 = new Float64Array(scored.length);
  const y2 = new Float64Array(scored.length);
  const areas = new Float64Array(scored.length);
  const { iou, contain } = model.nms;
  for (const s of scored) {
    if (s.probability < model.threshold) continue;
    const a = s.box;
    const ax2 = a.x + a.w;
    const ay2 = a.y + a.h;
    const areaA = Math.max(1e-9, a.w * a.h);
    let cls: FieldClass | null = null;
    let clash = false;
    for (let k = 0; k < accepted.length; k++) {
      const inter = overlap(a.x, ax2, x1[k]!, x2[k]!) * overlap(a.y, ay2, y1[k]!, y2[k]!);
      if (inter <= 0) continue;
      if (inter / (areaA + areas[k]! - inter) >= iou) {
        clash = true;
        break;
      }
      if (inter < contain * areaA) continue;
      cls ??= s.cls();
      if (accepted[k]!.fieldClass === cls) {
        clash = true;
        break;
      }
    }
    if (clash) continue;
    const n = accepted.length;
    const b = s.box;
    x1[n] = b.x;
    y1[n] = b.y;
    x2[n] = b.x + b.w;
    y2[n] = b.y + b.h;
    areas[n] = b.w * b.h;
    accepted.push({ ...s, fieldClass: cls ?? s.cls() });
  }
  return accepted;
}

/**
 * Weighted box fusion (Solovyev et al., 2019, "Weighted boxes fusion"), after suppression: each
 * accepted box becomes the mean of the `candidates` that overlap it by IoU ≥ `fuseIou` (itself
 * among them, and every box at or above the threshold, suppressed or not, that overlaps it so
 * much), each edge weighted by the candidate's probability. The
 * boxes near one field that reach the threshold are its likely placements (the drawn square or a
 * little around it, a cell or its bottom band), and the form's author chose one of them; their mean
 * overlaps the author's choice more often than the one suppression ranked first
 * (bench/README.md, "Accepted boxes fused with their overlapping placements"). Fusion moves boxes,
 * never adds or drops one, and leaves their probabilities as they are. `candidates`: the boxes at
 * or above the threshold, the accepted ones among them. (scripts/detect/train.py's `fuse` is the
 * same rule.)
 */
export function fuse(accepted: ReadonlyArray<{ box: Box }>, candidates: ReadonlyArray<{ box: Box; probability: number }>, fuseIou: number): Box[] {
  return accepted.map(({ box: a }) => {
    let sum = 0, x1 = 0, y1 = 0, x2 = 0, y2 = 0, n = 0; // prettier-ignore
    for (const { box: b, probability: p } of candidates) {
      // (iouBox is 0 for boxes that do not overlap, or of no area: never fused, whatever fuseIou.)
      const v = iouBox(a, b);
      if (v <= 0 || v < fuseIou) continue;
      n++;
      sum += p;
      x1 += p * b.x;
      y1 += p * b.y;
      x2 += p * (b.x + b.w);
      y2 += p * (b.y + b.h);
    }
    // A box alone (the candidates hold it too) stays exactly where it is.
    if (n < 2 || !(sum > 0)) return { x: a.x, y: a.y, w: a.w, h: a.h };
    const x = x1 / sum;
    const y = y1 / sum;
    return { x, y, w: x2 / sum - x, h: y2 / sum - y };
  });
}

/** The field type of an accepted box: its class, and for text the finer type its label says. */
function fieldType(cls: FieldClass, p: Proposal, lineHeight: number): FieldType {
  if (cls === 'checkbox') return 'checkbox';
  const type = typeFor(p.label, p, lineHeight);
  if (cls === 'signature') return type === 'initials' ? 'initials' : 'digital_signature';
  return type === 'digital_signature' || type === 'initials' ? 'short_text' : type;
}

/**
 * A page's proposals and their feature rows (the model's input; the export writes the same): the
 * rows are float32 views of `matrix`, where they lie end to end. The page is read once
 * (`PageModel`) for both.
 */
export function proposalsOf(page: PageGraphics): { proposals: Proposal[]; features: Float32Array[]; matrix: Float32Array; read: PageModel } {
  const { proposals, matrix, read } = proposalMatrix(page);
  return { proposals, features: featureRows(matrix, proposals.length), matrix, read };
}

/** `proposalsOf` without a view per row: what detection reads. */
function proposalMatrix(page: PageGraphics): { proposals: Proposal[]; matrix: Float32Array; read: PageModel } {
  const read = new PageModel(page);
  const proposals = proposeWith(read);
  return { proposals, matrix: featureMatrix(read, proposals), read };
}

/** A proposal kind's number, as the export gives it to train.py (its place in PROPOSAL_KINDS). */
const KIND_INDEX = new Map(PROPOSAL_KINDS.map((k, i) => [k, i]));

/**
 * The second model's margins (`LayoutModel.second`): of the proposals whose first margin reaches
 * its `scoredFrom`, scored on their features and their neighbours' scores; -Infinity for the others
 * and for those its early cuts stop.
 */
function secondMargins(second: NonNullable<LayoutModel['second']>, page: PageGraphics, proposals: readonly Proposal[], matrix: Float32Array, width: number, first: Float64Array): Float64Array {
  const n = proposals.length;
  const which: number[] = [];
  for (let i = 0; i < n; i++) if (first[i]! >= second.scoredFrom) which.push(i);
  const out = new Float64Array(n).fill(-Infinity);
  if (!which.length) return out;
  // Boxes in fractions of the page, as the export gives them to train.py.
  const x = new Float64Array(n), y = new Float64Array(n), w = new Float64Array(n), h = new Float64Array(n); // prettier-ignore
  const kind = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const p = proposals[i]!;
    x[i] = p.x / page.width;
    y[i] = p.y / page.height;
    w[i] = p.w / page.width;
    h[i] = p.h / page.height;
    kind[i] = KIND_INDEX.get(p.kind)!;
  }
  const around = neighbourFeatures({ x, y, w, h, kind, margin: first, count: n }, second.floor, which);
  const wide = width + NEIGHBOUR_NAMES.length;
  const rows = new Float32Array(which.length * wide);
  which.forEach((i, k) => {
    rows.set(matrix.subarray(i * width, (i + 1) * width), k * wide);
    rows.set(around.subarray(k * NEIGHBOUR_NAMES.length, (k + 1) * NEIGHBOUR_NAMES.length), k * wide + width);
  });
  const scored = margins(second.field, rows, which.length, wide, second.cuts);
  which.forEach((i, k) => (out[i] = scored[k]!));
  return out;
}

/**
 * The field margins of a page's proposals (their feature rows end to end in `matrix`): the first
 * field model's with its early cuts, and where the model has a second one, the second's
 * (-Infinity for a proposal stopped early or under the second's `scoredFrom`).
 */
export function fieldMarginsOf(model: LayoutModel, page: PageGraphics, proposals: readonly Proposal[], matrix: Float32Array): Float64Array {
  const width = model.features.length;
  const first = margins(model.field, matrix, proposals.length, width, model.cuts);
  return model.second ? secondMargins(model.second, page, proposals, matrix, width, first) : first;
}

/** The layout fields of one page: proposals scored, calibrated, suppressed and thresholded. */
export function detectLayout(page: PageGraphics, pageNumber: number, model: LayoutModel = defaultModel()): DetectedField[] {
  const { proposals, matrix, read } = proposalMatrix(page);
  const width = model.features.length;
  const rowOf = (i: number) => matrix.subarray(i * width, (i + 1) * width);
  const fieldMargins = fieldMarginsOf(model, page, proposals, matrix);
  // Only the boxes at or above the threshold can be accepted. The calibration never decreases, so
  // they are the first boxes in the order of their margins: nothing else is sorted or classed.
  const likely: number[] = [];
  const probabilities = new Float64Array(proposals.length);
  for (let i = 0; i < proposals.length; i++) {
    probabilities[i] = calibrate(model, fieldMargins[i]!);
    // (A row stopped by the early cut, at -Infinity, is never one.)
    if (probabilities[i]! >= model.threshold && fieldMargins[i]! > -Infinity) likely.push(i);
  }
  // How well each fits the field it is placed on: the order of suppression.
  let placed: Float64Array | null = null;
  if (model.placement && model.nms.placementWeight > 0) {
    const likelyRows = new Float32Array(likely.length * width);
    likely.forEach((i, k) => likelyRows.set(rowOf(i), k * width));
    placed = margins(model.placement, likelyRows, likely.length, width);
  }
  // A box's class is scored only when suppression asks for it, one row at a time: for each box it
  // accepts and each box mostly inside an accepted one (on ../shared/corpus, 62 of the 236 boxes a
  // page that reach the threshold, against all 236 scored together before).
  const classSums = new Float64Array(CLASSES.length);
  const scored = likely.map((i, k) => {
    const rank = fieldMargins[i]! + (placed ? model.nms.placementWeight * placed[k]! : 0);
    const cls = () => bestClass(classMarginsOf(model, matrix, i, width, classSums));
    return { proposal: proposals[i]!, rank, probability: probabilities[i]!, index: i, box: proposals[i]!, cls };
  });
  // Best first; equal ranks in proposal order, so that a page always gives the same fields.
  scored.sort((a, b) => b.rank - a.rank || a.index - b.index);
  const accepted = suppress(scored, model);
  // Where each accepted box goes: moved to the mean of its placements, when the model says so.
  const boxes: Box[] = model.nms.fuseIou > 0 ? fuse(accepted, scored, model.nms.fuseIou) : accepted.map((a) => a.proposal);
  const lineHeight = lineHeightOf(page);
  const fields: DetectedField[] = [];
  for (const [k, a] of accepted.entries()) {
    const p = a.proposal;
    // The label and the type are the proposal's own (read from where it was proposed).
    const label = a.fieldClass === 'checkbox' ? (checkBoxLabelOf(read, p) ?? p.label) : p.label;
    const { x, y, w, h } = boxes[k]!;
    const field = toField({ x, y, w, h, label, type: fieldType(a.fieldClass, p, lineHeight) }, pageNumber, page, Math.round(a.probability * 1000) / 1000);
    if (field) fields.push(field);
  }
  return fields;
}

/**
 * Where the committed model is: beside this module when run from source, and the same file in
 * the source tree when run from the build (dist/src/detect/model.js), which does not copy it.
 */
export function modelPath(): string {
  const fromSource = import.meta.url.endsWith('.ts');
  return fileURLToPath(new URL(fromSource ? './model/layout-model.json' : '../../../src/detect/model/layout-model.json', import.meta.url));
}

/** Reads and checks a model file. */
export function loadModel(file: string): LayoutModel {
  return parseModel(JSON.parse(fs.readFileSync(file, 'utf8')));
}

let committed: LayoutModel | null = null;

/** The committed model, read once per thread. */
export function defaultModel(): LayoutModel {
  committed ??= loadModel(modelPath());
  return committed;
}
