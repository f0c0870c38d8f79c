/**
 * The learned layout detector's run-time half (src/detect/model.ts): the committed model loads and
 * finds the obvious fields of generated pages (and none on running text); the tree evaluator,
 * the calibration and the suppression do what their contracts say, checked on hand-made inputs.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { FEATURE_NAMES } from '../../src/detect/features.js';
import { calibrate, classMarginsOf, classOf, defaultModel, detectLayout, fuse, margin, margins, modelPath, parseModel, suppress, treeValue, type FieldClass, type LayoutModel, type Tree } from '../../src/detect/model.js';
import { iou } from '../../src/detect/geometry.js';
import { NEIGHBOUR_NAMES } from '../../src/detect/neighbours.js';
import { detect, drawPdf, points, show } from '../helpers/layout-pdf.js';
import { graphicsOf } from '../helpers/page-graphics.js';

const committed = () => JSON.parse(fs.readFileSync(modelPath(), 'utf8')) as Record<string, unknown>;

describe('the committed layout model', () => {
  it('loads: its features are FEATURE_NAMES, its trees and calibration are well formed', () => {
    const model = defaultModel();
    assert.deepEqual(model.features, [...FEATURE_NAMES]);
    assert.ok(model.field.trees.length > 0 && model.class.trees.length > 0);
    assert.ok(model.threshold > 0 && model.threshold < 1);
  });

  // Two field models of 200 trees since the second (neighbours.ts): 2.02 MB when it came.
  it('is small enough to commit (under 2.5 MB)', () => {
    assert.ok(fs.statSync(modelPath()).size < 2_500_000);
  });

  it('is refused when its feature names are not those of features.ts', () => {
    const json = committed();
    const features = [...(json.features as string[])];
    [features[0], features[1]] = [features[1]!, features[0]!];
    assert.throws(() => parseModel({ ...json, features }), /feature names/);
    assert.throws(() => parseModel({ ...json, features: features.slice(1) }), /feature names/);
  });
});

/** Fill-in lines of a small generated form: label, its baseline (PDF y), the rule's x1 and x2, where the label starts. */
const LINES: Array<[string, number, number, number, number]> = [
  ['Full name:', 660, 130, 540, 72],
  ['Address:', 630, 120, 540, 72],
  ['City:', 600, 102, 330, 72],
  ['ZIP code:', 600, 400, 540, 350],
  ['Phone:', 570, 110, 300, 72],
  ['Email:', 570, 350, 540, 315],
  ['Date of birth:', 540, 145, 300, 72],
];

/** A one-page membership form: a heading, instructions, labelled fill-in lines and a Yes/No question with drawn boxes. */
const membershipForm = () =>
  drawPdf([
    {
      draw: (d) => {
        d.text('Membership application', 72, 740, 16);
        d.text('Please fill in this form in capital letters and return it to the club secretary.', 72, 715, 10);
        d.text('All fields are required unless marked optional.', 72, 702, 10);
        for (const [label, y, x1, x2, lx] of LINES) {
          d.text(label, lx, y, 10);
          d.rule(x1, x2, y - 2, 0.75);
        }
        d.text('Are you a resident of this state?', 72, 505, 10);
        d.box(250, 504, 9, 9);
        d.text('Yes', 263, 505, 10);
        d.box(300, 504, 9, 9);
        d.text('No', 313, 505, 10);
      },
    },
  ]);

describe('the committed model on generated pages', () => {
  it('labelled fill-in lines: a text field on each rule (IoU ≥ 0.5 with the line\'s writing band, as the corpus scores), confidently', async () => {
    const result = await detect(await membershipForm());
    const text = result.fields.filter((f) => f.type !== 'checkbox');
    assert.equal(text.length, LINES.length, show(text));
    for (const [label, y, x1, x2] of LINES) {
      // The band a person writes in: the rule's extent, a line's height (14 pt) over it.
      const bottom = (792 - y + 2) / 792;
      const band = { x: x1 / 612, y: bottom - 14 / 792, width: (x2 - x1) / 612, height: 14 / 792 };
      const field = text.find((f) => iou(f.rect, band) >= 0.5);
      assert.ok(field, `a field on the rule of ${label}: ${show(text)}`);
      // Confidently: more likely right than not. (0.6 until the second field model, which reads
      // that several placements of one rule all score high, and gives "Full name:" 0.553.)
      assert.ok(field.confidence >= 0.5, `${label}: confidence ${field.confidence}`);
      assert.equal(field.label, label);
    }
    // Types from the labels.
    assert.deepEqual(
      ['Phone:', 'Email:', 'Date of birth:'].map((label) => text.find((f) => f.label === label)?.type),
      ['phone', 'email', 'date'],
    );
  });

  it('a drawn check box beside an option word ("Yes"): a check box at the square, confidently; no check box anywhere else', async () => {
    const result = await detect(await membershipForm());
    const boxes = result.fields.filter((f) => f.type === 'checkbox');
    const at = (x: number) => boxes.find((b) => Math.abs(points(b).x1 - x) <= 2 && Math.abs(points(b).y2 - (792 - 504)) <= 2);
    const yes = at(250);
    assert.ok(yes, show(result.fields));
    assert.equal(yes.label, 'Yes');
    // More likely right than not (0.6 until the second field model: 0.593 with it).
    assert.ok(yes.confidence >= 0.5, `confidence ${yes.confidence}: ${show([yes])}`);
    // The second box takes the word after it, not the "Yes" on its left.
    assert.equal(at(300)?.label, 'No', show(boxes));
    for (const box of boxes) assert.ok(box === yes || box === at(300), `a check box where none is drawn: ${show([box])}`);
  });

  it('a page of plain paragraph text: no field', async () => {
    const sentence = 'The applicant declares that the information given in this form is true and complete to the best of their knowledge.';
    const result = await detect(
      await drawPdf([
        {
          draw: (d) => {
            d.text('General conditions', 72, 740, 14);
            for (let i = 0; i < 30; i++) d.text(sentence.slice(0, 70 + (i % 3) * 10), 72, 710 - i * 14, 10);
          },
        },
      ]),
    );
    assert.deepEqual(result.fields, [], show(result.fields));
  });
});

/**
 * A tree by hand: x0 < 1 ? (x1 < 5 ? 0.1 : 0.2) : 0.3. Node 2 is the leaf right of the root, nodes
 * 3 and 4 the leaves under node 1; a missing x0 goes right, a missing x1 left.
 */
const tree: Tree = { f: [0, 1, -1, -1, -1], v: [1, 5, 0.3, 0.1, 0.2], l: [1, 3, -1, -1, -1], r: [2, 4, -1, -1, -1], d: [0, 1, 0, 0, 0] };

/** A seeded generator of numbers in [0, 1): the same numbers every run. */
function seeded(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** `count` rows of `width` features: a fifth of the values -1 ("none"), the others in [0, 5). */
function randomRows(random: () => number, count: number, width: number): Float32Array {
  const rows = new Float32Array(count * width);
  for (let i = 0; i < rows.length; i++) rows[i] = random() < 0.2 ? -1 : random() * 5;
  return rows;
}

describe('the tree evaluator', () => {
  it('walks a hand-written tree: below the threshold goes left, at or above it right', () => {
    assert.equal(treeValue(tree, [0, 0]), 0.1);
    assert.equal(treeValue(tree, [0.999, 4.99]), 0.1);
    assert.equal(treeValue(tree, [0, 5]), 0.2);
    assert.equal(treeValue(tree, [1, 0]), 0.3);
    assert.equal(treeValue(tree, [7, 100]), 0.3);
  });

  it('sends a missing value where the tree says', () => {
    assert.equal(treeValue(tree, [NaN, 0]), 0.3);
    assert.equal(treeValue(tree, [0, NaN]), 0.1);
  });

  it('adds the base margin and every tree; the class model picks the class of the highest sum', () => {
    const other: Tree = { f: [1, -1, -1], v: [2, -1, 1], l: [1, -1, -1], r: [2, -1, -1], d: [0, 0, 0] };
    assert.ok(Math.abs(margin({ baseMargin: -0.5, trees: [tree, other] }, [0, 0]) - (-0.5 + 0.1 - 1)) < 1e-12);
    assert.ok(Math.abs(margin({ baseMargin: 0, trees: [tree, other] }, [3, 9]) - 1.3) < 1e-12);
    const model = { class: { baseMargin: 0.5, trees: [tree, other, tree], treeClass: [0, 1, 2] } } as unknown as LayoutModel;
    assert.equal(classOf(model, [3, 9]), 'checkbox');
    assert.equal(classOf(model, [3, 0]), 'text');
  });

  it('scores many rows at once with the same margins, bit for bit, as the walk row by row (the committed model, trees of uneven depth, missing values)', () => {
    const random = seeded(12345);
    const model = defaultModel();
    const width = model.features.length;
    // Rows near the thresholds the field and class trees split on, so that every branch is taken: 301 rows (not a multiple of the 8 walked together).
    const splits = [...model.field.trees, ...model.class.trees].flatMap((t) => t.f.map((f, n) => [f, t.v[n]!] as const).filter(([f]) => f >= 0));
    const count = 301;
    const rows = new Float32Array(count * width);
    for (let i = 0; i < rows.length; i++) rows[i] = random() < 0.1 ? -1 : random() * 10;
    for (let i = 0; i < count * 20; i++) {
      const [f, v] = splits[Math.floor(random() * splits.length)]!;
      rows[Math.floor(random() * count) * width + f] = random() < 0.5 ? v : v + (random() - 0.5) * 1e-3;
    }
    const bulk = margins(model.field, rows, count, width);
    for (let i = 0; i < count; i++) {
      const row = rows.subarray(i * width, (i + 1) * width);
      assert.equal(bulk[i], margin(model.field, row), `row ${i}`);
      const sums = [0, 1, 2].map((c) => model.class.trees.reduce((sum, t, k) => (model.class.treeClass[k] === c ? sum + treeValue(t, row) : sum), model.class.baseMargin));
      assert.deepEqual([...classMarginsOf(model, rows, i, width)], sums, `row ${i} alone`);
      assert.equal(classOf(model, row), ['text', 'checkbox', 'signature'][sums.indexOf(Math.max(...sums))], `row ${i}`);
    }
    // Hand-made trees of depths 2, 1 and 0, a missing value sent left by one of them, a threshold
    // that is no float32 (1 + 2^-40: a row's 1 is below it): the same as the walk.
    const stump: Tree = { f: [1, -1, -1], v: [2, -1, 1], l: [1, -1, -1], r: [2, -1, -1], d: [0, 0, 0] };
    const fine: Tree = { f: [0, -1, -1], v: [1 + 2 ** -40, -2, 3], l: [1, -1, -1], r: [2, -1, -1], d: [0, 0, 0] };
    const leaf: Tree = { f: [-1], v: [0.25], l: [-1], r: [-1], d: [0] };
    const set = { baseMargin: -0.5, trees: [tree, stump, fine, leaf] };
    // Without a missing value the complete form is walked; with one, the trees node by node.
    for (const small of [Float32Array.from([0, 0, 0, 5, 1, 0, 7, 100, 0.5, 4.99, 3, 9, 2, 2]), Float32Array.from([1, 0, NaN, 0, 0, NaN, 3, 9])]) {
      const smallMargins = margins(set, small, small.length / 2, 2);
      for (let i = 0; i < small.length / 2; i++) assert.equal(smallMargins[i], margin(set, small.subarray(2 * i, 2 * i + 2)), `hand-made row ${i}`);
      // As a class model of 11 trees (8 walked side by side, then 3), one row at a time.
      const classes = { class: { baseMargin: 0.5, trees: [...set.trees, ...set.trees, tree, stump, fine], treeClass: [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1] } } as unknown as LayoutModel;
      for (let i = 0; i < small.length / 2; i++) {
        const row = small.subarray(2 * i, 2 * i + 2);
        const sums = [0, 1, 2].map((c) => classes.class.trees.reduce((sum, t, k) => (classes.class.treeClass[k] === c ? sum + treeValue(t, row) : sum), classes.class.baseMargin));
        assert.deepEqual([...classMarginsOf(classes, small, i, 2)], sums, `hand-made row ${i} alone`);
      }
    }
  });

  it('with an early cut: the rows whose margin after the first trees reaches the cut get the margins they get without it, bit for bit; the others -Infinity', () => {
    const model = defaultModel();
    const width = model.features.length;
    const count = 203;
    const rows = randomRows(seeded(777), count, width);
    const after = 50;
    const first = { baseMargin: model.field.baseMargin, trees: model.field.trees.slice(0, after) };
    const partials = Array.from({ length: count }, (_, i) => margin(first, rows.subarray(i * width, (i + 1) * width)));
    // A cut in the middle of these rows' partial margins, so that some go on and some stop.
    const cutMargin = [...partials].sort((a, b) => a - b)[Math.floor(count / 2)]!;
    const full = margins(model.field, rows, count, width);
    const cut = margins(model.field, rows, count, width, [{ after, margin: cutMargin }]);
    let stopped = 0;
    for (let i = 0; i < count; i++) {
      if (partials[i]! >= cutMargin) assert.equal(cut[i], full[i], `row ${i} goes on`);
      else {
        assert.equal(cut[i], -Infinity, `row ${i} stops`);
        stopped++;
      }
    }
    assert.ok(stopped > 50 && stopped < count - 50, `${stopped} of ${count} rows stopped`);
    // Hand-made trees with missing values (walked node by node): the same rule.
    const stump: Tree = { f: [1, -1, -1], v: [2, -1, 1], l: [1, -1, -1], r: [2, -1, -1], d: [1, 0, 0] };
    const set = { baseMargin: 0, trees: [tree, stump, tree, stump] };
    const small = Float32Array.from([0, 0, NaN, 0, 7, 9, 0, NaN]);
    const whole = margins(set, small, 4, 2);
    const early = margins(set, small, 4, 2, [{ after: 2, margin: 0 }]);
    for (let i = 0; i < 4; i++) {
      const partial = margin({ baseMargin: 0, trees: [tree, stump] }, small.subarray(2 * i, 2 * i + 2));
      assert.equal(early[i], partial >= 0 ? whole[i] : -Infinity, `hand-made row ${i}`);
    }
    assert.ok(early.some((m) => m === -Infinity) && early.some((m) => m > -Infinity));
    assert.throws(() => margins(set, small, 4, 2, [{ after: 1.5, margin: 0 }]), /early cut/);
    assert.throws(() => margins(set, small, 4, 2, [{ after: 2, margin: 0 }, { after: 2, margin: 0 }]), /increasing/);
    assert.deepEqual(margins(set, small, 4, 2, [{ after: 4, margin: 1e9 }]), whole, 'a cut at the last tree is no cut');
  });

  it('with several early cuts: a row goes on past each cut only while its margin there reaches it; the rows that pass them all get their margins bit for bit', () => {
    const model = defaultModel();
    const width = model.features.length;
    const count = 301;
    const rows = randomRows(seeded(4242), count, width);
    const afters = [30, 90, 150];
    const partialsAt = afters.map((after) => Array.from({ length: count }, (_, i) => margin({ baseMargin: model.field.baseMargin, trees: model.field.trees.slice(0, after) }, rows.subarray(i * width, (i + 1) * width))));
    // Each cut at the third quartile of the partial margins there, so that each stops some rows the cuts before let through.
    const cuts = afters.map((after, j) => ({ after, margin: [...partialsAt[j]!].sort((a, b) => a - b)[Math.floor((3 * count) / 4)]! }));
    const full = margins(model.field, rows, count, width);
    const cut = margins(model.field, rows, count, width, cuts);
    const stoppedAt = afters.map(() => 0);
    for (let i = 0; i < count; i++) {
      const at = cuts.findIndex((c, j) => partialsAt[j]![i]! < c.margin);
      if (at < 0) assert.equal(cut[i], full[i], `row ${i} goes through`);
      else {
        assert.equal(cut[i], -Infinity, `row ${i} stops at cut ${at}`);
        stoppedAt[at]!++;
      }
    }
    assert.ok(stoppedAt.every((n) => n > 0), `rows stopped at each cut: ${stoppedAt.join(', ')}`);
    assert.ok(cut.some((m) => m > -Infinity), 'some rows pass every cut');
  });

  it('early cuts at the edges: no rows, every row cut at the first cut, cuts past the last tree, no cuts, missing values through several stages', () => {
    const stump: Tree = { f: [1, -1, -1], v: [2, -1, 1], l: [1, -1, -1], r: [2, -1, -1], d: [1, 0, 0] };
    const set = { baseMargin: 0, trees: [tree, stump, tree, stump, tree, stump] };
    assert.deepEqual(margins(set, new Float32Array(0), 0, 2, [{ after: 2, margin: 0 }]), new Float64Array(0));
    const rows = Float32Array.from([0, 0, NaN, 0, 7, 9, 0, NaN, NaN, NaN, 0.5, 3, 2, 1, 0, 4, NaN, 3]);
    const count = rows.length / 2;
    const whole = margins(set, rows, count, 2);
    assert.deepEqual(margins(set, rows, count, 2, []), whole, 'no cuts');
    assert.deepEqual(margins(set, rows, count, 2, [{ after: 6, margin: 1e9 }, { after: 9, margin: 1e9 }]), whole, 'cuts at or past the last tree');
    assert.deepEqual(margins(set, rows, count, 2, [{ after: 1, margin: 1e9 }, { after: 3, margin: -1e9 }]), new Float64Array(count).fill(-Infinity), 'every row cut at the first cut');
    assert.throws(() => margins(set, rows, count, 2, [{ after: 2, margin: NaN }]), /a number is needed/);
    // Two cuts that each stop some rows, rows with missing values walked node by node at each stage.
    const cuts = [
      { after: 2, margin: -0.8 },
      { after: 4, margin: -0.5 },
    ];
    const partial = (k: number, i: number) => margin({ baseMargin: 0, trees: set.trees.slice(0, k) }, rows.subarray(2 * i, 2 * i + 2));
    const cut = margins(set, rows, count, 2, cuts);
    let stoppedFirst = 0;
    let stoppedSecond = 0;
    for (let i = 0; i < count; i++) {
      if (partial(2, i) < cuts[0]!.margin) {
        assert.equal(cut[i], -Infinity, `row ${i} stops at the first cut`);
        stoppedFirst++;
      } else if (partial(4, i) < cuts[1]!.margin) {
        assert.equal(cut[i], -Infinity, `row ${i} stops at the second cut`);
        stoppedSecond++;
      } else assert.equal(cut[i], whole[i], `row ${i} goes through`);
    }
    assert.ok(stoppedFirst > 0 && stoppedSecond > 0 && cut.some((m) => m > -Infinity), `${stoppedFirst} and ${stoppedSecond} of ${count} rows stopped`);
    assert.ok([1, 3, 4, 8].some((i) => cut[i]! > -Infinity), 'a row with a missing value goes through');
  });

  it('detectLayout uses the cuts: the committed model finds the same fields with and without them; a cut above every margin leaves no field', async () => {
    const page = await graphicsOf(await membershipForm());
    const model = defaultModel();
    const { cuts: _, ...uncut } = model;
    const fields = detectLayout(page, 1, model);
    assert.ok(fields.length >= LINES.length, show(fields));
    assert.deepEqual(fields, detectLayout(page, 1, uncut));
    assert.deepEqual(detectLayout(page, 1, { ...model, cuts: [{ after: 50, margin: 1e9 }] }), []);
    const cuts = model.cuts!;
    assert.deepEqual(detectLayout(page, 1, { ...model, cuts: [...cuts.slice(0, -1), { after: cuts.at(-1)!.after, margin: 1e9 }] }), [], 'the last cut too');
    const middle = Math.floor(cuts.length / 2);
    assert.deepEqual(detectLayout(page, 1, { ...model, cuts: cuts.map((c, i) => (i === middle ? { ...c, margin: 1e9 } : c)) }), [], 'a middle cut too');
  });

  it('the committed model has early cuts after some of its trees; a model with cuts that are not cuts is refused', () => {
    const model = defaultModel();
    const cuts = model.cuts ?? [];
    assert.ok(cuts.length >= 2, `${cuts.length} cuts`);
    cuts.forEach((cut, i) => assert.ok(cut.after >= 1 && cut.after < model.field.trees.length && (i === 0 || cut.after > cuts[i - 1]!.after) && Number.isFinite(cut.margin), JSON.stringify(cut)));
    const json = committed();
    const trees = (json.field as { trees: unknown[] }).trees.length;
    for (const cut of [{ after: 0, margin: -3 }, { after: trees, margin: -3 }, { after: 2.5, margin: -3 }, { after: 50, margin: null }, { after: 50 }, null]) {
      assert.throws(() => parseModel({ ...json, cuts: [cut] }), /cuts needs/, JSON.stringify(cut));
    }
    assert.throws(() => parseModel({ ...json, cuts: [{ after: 60, margin: -3 }, { after: 50, margin: -2 }] }), /cuts needs/, 'not increasing');
    assert.throws(() => parseModel({ ...json, cuts: { after: 50, margin: -3 } }), /cuts needs/, 'not a list');
    assert.throws(() => parseModel({ ...json, cuts: [{ after: 50, margin: -3 }, { after: 50, margin: -2 }] }), /cuts needs/, 'the same tree twice');
    assert.throws(() => parseModel({ ...json, cuts: [{ after: 50, margin: -3 }, { after: trees, margin: -2 }] }), /cuts needs/, 'a later cut at the last tree');
    const { cuts: _, ...without } = json;
    assert.equal(parseModel(without).cuts, undefined);
    // A model of before the list: its one cut.
    assert.deepEqual(parseModel({ ...without, cut: { after: 50, margin: -3 } }).cuts, [{ after: 50, margin: -3 }]);
    assert.throws(() => parseModel({ ...without, cut: { after: 0, margin: -3 } }), /cuts needs/);
    assert.throws(() => parseModel({ ...json, cut: { after: 50, margin: -3 } }), /not both/);
  });

  it('the committed model has a placement model; it comes with its weight, which is finite and not negative', () => {
    const model = defaultModel();
    assert.ok(model.placement && model.placement.trees.length > 0 && model.nms.placementWeight > 0);
    const json = committed();
    const nms = json.nms as Record<string, unknown>;
    const { placement: _, ...withoutTrees } = json;
    assert.throws(() => parseModel(withoutTrees), /come together/);
    const { placementWeight: __, ...nmsWithoutWeight } = nms;
    assert.throws(() => parseModel({ ...json, nms: nmsWithoutWeight }), /come together/);
    for (const placementWeight of [-1, Infinity, '2', null]) assert.throws(() => parseModel({ ...json, nms: { ...nms, placementWeight } }), /placementWeight/);
    const old = parseModel({ ...withoutTrees, nms: nmsWithoutWeight });
    assert.equal(old.placement, undefined);
    assert.equal(old.nms.placementWeight, 0);
  });

  it('the committed model has a second field model on the neighbours\' scores: refused with other names, without a floor, or splitting past its features', () => {
    const model = defaultModel();
    assert.ok(model.second && model.second.field.trees.length > 0 && Number.isFinite(model.second.floor));
    assert.deepEqual(model.second.names, [...NEIGHBOUR_NAMES]);
    const json = committed();
    const second = json.second as { floor: number; scoredFrom: number; names: string[]; field: { baseMargin: number; trees: Tree[] } };
    assert.throws(() => parseModel({ ...json, second: { ...second, names: second.names.slice(1) } }), /NEIGHBOUR_NAMES/);
    assert.throws(() => parseModel({ ...json, second: { ...second, names: [...second.names].reverse() } }), /NEIGHBOUR_NAMES/);
    for (const floor of [undefined, null, Infinity, '-3']) assert.throws(() => parseModel({ ...json, second: { ...second, floor } }), /finite floor/, String(floor));
    for (const scoredFrom of [undefined, NaN, second.floor - 1, '-2']) assert.throws(() => parseModel({ ...json, second: { ...second, scoredFrom } }), /scoredFrom/, String(scoredFrom));
    const past = FEATURE_NAMES.length + NEIGHBOUR_NAMES.length;
    const tree: Tree = { f: [past, -1, -1], v: [0.5, 0, 1], l: [1, -1, -1], r: [2, -1, -1], d: [0, 0, 0] };
    // (A one-tree second model, without the committed model's cuts, which come after more trees.)
    const { cuts: _cuts, ...secondUncut } = second as typeof second & { cuts?: unknown };
    assert.throws(() => parseModel({ ...json, second: { ...secondUncut, field: { baseMargin: 0, trees: [tree] } } }), /splits on feature/);
    assert.ok(parseModel({ ...json, second: { ...secondUncut, field: { baseMargin: 0, trees: [{ ...tree, f: [past - 1, -1, -1] }] } } }).second);
    assert.throws(() => parseModel({ ...json, second: { ...second, field: { baseMargin: 0, trees: [{ ...tree, f: [past - 1, -1, -1] }] } } }), /second.cuts needs/, 'cuts past its trees');
    const { second: _, ...firstOnly } = json;
    assert.equal(parseModel(firstOnly).second, undefined);
    // Its own early cuts, checked as the first model's are.
    assert.ok(model.second.cuts && model.second.cuts.length >= 2, JSON.stringify(model.second.cuts));
    const trees = second.field.trees.length;
    for (const cut of [{ after: 0, margin: -3 }, { after: trees, margin: -3 }, { after: 50, margin: null }, null]) {
      assert.throws(() => parseModel({ ...json, second: { ...second, cuts: [cut] } }), /second.cuts needs/, JSON.stringify(cut));
    }
    assert.equal(parseModel({ ...json, second: secondUncut }).second!.cuts, undefined);
  });

  it('detectLayout uses the second model\'s cuts: the same fields with and without them; a cut above every margin leaves no field', async () => {
    const page = await graphicsOf(await membershipForm());
    const model = defaultModel();
    const { cuts: _, ...uncut } = model.second!;
    const fields = detectLayout(page, 1, model);
    assert.ok(fields.length >= LINES.length, show(fields));
    assert.deepEqual(fields, detectLayout(page, 1, { ...model, second: uncut }));
    assert.deepEqual(detectLayout(page, 1, { ...model, second: { ...uncut, cuts: [{ after: 50, margin: 1e9 }] } }), []);
  });

  it('detectLayout accepts by the second model\'s margin: one that rejects everything finds nothing, one that keeps the first model\'s sure boxes keeps only them', async () => {
    const page = await graphicsOf(await membershipForm());
    const model = defaultModel();
    const second = model.second!;
    const leaf = (value: number): Tree => ({ f: [-1], v: [value], l: [-1], r: [-1], d: [0] });
    assert.deepEqual(detectLayout(page, 1, { ...model, second: { ...second, field: { baseMargin: -10, trees: [leaf(0)] } } }), []);
    // +10 where the first model's own probability (n_self) is at least 0.5, -10 under it.
    const self = FEATURE_NAMES.length + NEIGHBOUR_NAMES.indexOf('n_self');
    const sure = { baseMargin: 0, trees: [{ f: [self, -1, -1], v: [0.5, -10, 10], l: [1, -1, -1], r: [2, -1, -1], d: [0, 0, 0] }] };
    const fields = detectLayout(page, 1, { ...model, second: { ...second, field: sure } });
    assert.ok(fields.length >= LINES.length, show(fields));
    const top = Math.round(calibrate(model, 10) * 1000) / 1000;
    assert.ok(fields.every((f) => f.confidence === top), show(fields));
  });

  it('detectLayout suppresses by field and placement margins: weight 0 is the field order alone; a placement model preferring wide boxes keeps wider ones', async () => {
    const page = await graphicsOf(await membershipForm());
    const model = defaultModel();
    const { placement: _, ...fieldOnly } = model;
    assert.deepEqual(detectLayout(page, 1, { ...model, nms: { ...model.nms, placementWeight: 0 } }), detectLayout(page, 1, { ...fieldOnly, nms: { ...model.nms, placementWeight: 0 } }));
    // Hand-made placement models: a step up (or down) at each doubling of the box's width in font sizes, weighted far above any field margin.
    const w = FEATURE_NAMES.indexOf('w_font');
    const steps = (sign: number) => ({ baseMargin: 0, trees: [0.5, 1, 2, 4, 8, 16, 32, 64].map((t): Tree => ({ f: [w, -1, -1], v: [t, 0, sign], l: [1, -1, -1], r: [2, -1, -1], d: [0, 0, 0] })) });
    const wide = detectLayout(page, 1, { ...model, placement: steps(1), nms: { ...model.nms, placementWeight: 100 } });
    const narrow = detectLayout(page, 1, { ...model, placement: steps(-1), nms: { ...model.nms, placementWeight: 100 } });
    const widths = (fields: typeof wide) => fields.filter((f) => f.type !== 'checkbox').map((f) => f.rect.width);
    const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    assert.ok(total(widths(wide)) > total(widths(narrow)), `${show(wide)}\n${show(narrow)}`);
    // Field by field (by label): never narrower, and some wider.
    const byLabel = (fields: typeof wide) => new Map(fields.filter((f) => f.type !== 'checkbox').map((f) => [f.label, f.rect.width]));
    const [w1, w2] = [byLabel(wide), byLabel(narrow)];
    const both = [...w1.keys()].filter((l) => w2.has(l));
    assert.ok(both.length >= 5 && both.every((l) => w1.get(l)! >= w2.get(l)!) && both.some((l) => w1.get(l)! > w2.get(l)!), `${show(wide)}\n${show(narrow)}`);
  });

  it('the committed model fuses its accepted boxes; fuseIou is refused out of [0, 1], a model without it fuses nothing, and fusion only moves boxes', async () => {
    const model = defaultModel();
    assert.ok(model.nms.fuseIou > 0 && model.nms.fuseIou <= 1);
    const json = committed();
    const nms = json.nms as Record<string, unknown>;
    for (const fuseIou of [-0.1, 1.5, NaN, '0.5', null]) assert.throws(() => parseModel({ ...json, nms: { ...nms, fuseIou } }), /fuseIou/, String(fuseIou));
    // Under suppression's IoU, two accepted boxes (two fields) could be fused with each other.
    assert.throws(() => parseModel({ ...json, nms: { ...nms, fuseIou: (nms.iou as number) / 2 } }), /at least nms.iou/);
    assert.equal(parseModel({ ...json, nms: { ...nms, fuseIou: nms.iou } }).nms.fuseIou, nms.iou);
    const { fuseIou: _, ...unfused } = nms;
    assert.equal(parseModel({ ...json, nms: unfused }).nms.fuseIou, 0);
    // On a generated form: the same fields, labels, types and confidences with and without fusion,
    // each box still over its unfused self by IoU above 0.5, and some boxes moved (the drawn Yes / No
    // squares have placements a little around them that reach the threshold too).
    const page = await graphicsOf(await membershipForm());
    const fused = detectLayout(page, 1, model);
    const plain = detectLayout(page, 1, { ...model, nms: { ...model.nms, fuseIou: 0 } });
    assert.ok(fused.length >= LINES.length, show(fused));
    const strip = (fields: typeof fused) => fields.map(({ rect: _, ...rest }) => rest);
    assert.deepEqual(strip(fused), strip(plain));
    fused.forEach((f, i) => {
      const q = plain[i]!.rect;
      assert.ok(iou(f.rect, q) > 0.5, `${JSON.stringify(f.rect)} against ${JSON.stringify(q)}`);
    });
    assert.ok(
      fused.some((f, i) => JSON.stringify(f.rect) !== JSON.stringify(plain[i]!.rect)),
      show(fused),
    );
  });

  it('refuses a tree whose children do not come after their node (a walk that could loop)', () => {
    const json = committed();
    const field = json.field as { baseMargin: number; trees: Tree[] };
    const looping: Tree = { f: [0, 0, -1], v: [1, 1, 0], l: [1, 0, -1], r: [2, 2, -1], d: [0, 0, 0] };
    assert.throws(() => parseModel({ ...json, field: { ...field, trees: [looping] } }), /children/);
  });
});

describe('calibration and suppression', () => {
  const cal = { calibration: { x: [-2, 0, 2], y: [0.1, 0.5, 0.9] } };

  it('calibration is linear between the table points and flat past its ends', () => {
    assert.equal(calibrate(cal, -10), 0.1);
    assert.equal(calibrate(cal, 10), 0.9);
    assert.ok(Math.abs(calibrate(cal, 1) - 0.7) < 1e-12);
    assert.ok(Math.abs(calibrate(cal, -1.5) - 0.2) < 1e-12);
  });

  const nms = { threshold: 0.5, nms: { iou: 0.3, contain: 0.7, placementWeight: 0, fuseIou: 0 } };
  const box = (x: number, y: number, w: number, h: number, probability: number, cls: FieldClass) => ({ box: { x, y, w, h }, probability, cls: () => cls });

  it('keeps the best of overlapping boxes, and boxes that only touch', () => {
    const kept = suppress([box(0, 0, 100, 20, 0.9, 'text'), box(5, 0, 100, 20, 0.8, 'text'), box(100, 0, 50, 20, 0.7, 'text')], nms);
    assert.deepEqual(
      kept.map((k) => k.box.x),
      [0, 100],
    );
  });

  it('drops a box mostly inside an accepted one of its class, not one of another class', () => {
    const kept = suppress([box(0, 0, 200, 60, 0.9, 'text'), box(10, 10, 40, 12, 0.8, 'text'), box(60, 10, 10, 10, 0.8, 'checkbox')], nms);
    assert.deepEqual(
      kept.map((k) => k.fieldClass),
      ['text', 'checkbox'],
    );
  });

  it('accepts nothing under the threshold, and a box under it suppresses nothing', () => {
    assert.deepEqual(suppress([box(0, 0, 10, 10, 0.49, 'checkbox')], nms), []);
    const kept = suppress([box(0, 0, 100, 20, 0.4, 'text'), box(5, 0, 100, 20, 0.8, 'text')], nms);
    assert.deepEqual(
      kept.map((k) => k.box.x),
      [5],
    );
  });

  it('fuses each accepted box with the boxes overlapping it by the IoU given, weighted by probability; the others leave it alone', () => {
    const at = (x: number, y: number, w: number, h: number, probability: number) => ({ box: { x, y, w, h }, probability });
    // The kept square (0.9), a larger placement around it (IoU 0.64, 0.6) and a neighbour (IoU 0).
    const candidates = [at(10, 10, 8, 8, 0.9), at(9, 9, 10, 10, 0.6), at(40, 10, 8, 8, 0.8)];
    const [fused, alone] = fuse([candidates[0]!, candidates[2]!], candidates, 0.5);
    const mean = (a: number, b: number) => (0.9 * a + 0.6 * b) / 1.5;
    for (const [got, want] of [
      [fused!.x, mean(10, 9)],
      [fused!.y, mean(10, 9)],
      [fused!.x + fused!.w, mean(18, 19)],
      [fused!.y + fused!.h, mean(18, 19)],
    ] as const)
      assert.ok(Math.abs(got - want) < 1e-9, `${got} against ${want}`);
    assert.deepEqual(alone, { x: 40, y: 10, w: 8, h: 8 });
    // At IoU 0.7 the larger placement (0.64) is not fused; at exactly the IoU given (0.5) it is.
    assert.deepEqual(fuse([candidates[0]!], candidates, 0.7), [{ x: 10, y: 10, w: 8, h: 8 }]);
    assert.deepEqual(fuse([at(0, 0, 2, 1, 0.5)], [at(0, 0, 2, 1, 0.5), at(0, 0, 1, 1, 0.5)], 0.5), [{ x: 0, y: 0, w: 1.5, h: 1 }]);
    // Boxes of no area overlap nothing: a box of no area stays as it is, beside another on its line.
    assert.deepEqual(fuse([at(5, 5, 0, 8, 0.9)], [at(5, 5, 0, 8, 0.9), at(5, 6, 0, 8, 0.9), at(4, 5, 2, 8, 0.9)], 0.5), [{ x: 5, y: 5, w: 0, h: 8 }]);
  });

  it('takes the boxes in the order given, not by probability (the order is the rank detectLayout sorts by)', () => {
    const kept = suppress([box(5, 0, 100, 20, 0.6, 'text'), box(0, 0, 100, 20, 0.9, 'text')], nms);
    assert.deepEqual(
      kept.map((k) => [k.box.x, k.probability]),
      [[5, 0.6]],
    );
  });
});
