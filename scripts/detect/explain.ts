/**
 * Why the layout detector finds, or does not find, a field on a page: the page's proposals with
 * their kind, class, box, label and calibrated probability, best first, and the fields
 * `detectLayout` gives. The page is read as the data set reads a form (read-form.ts; widgets are
 * not drawn, so a fillable PDF shows what its printed page alone gives), and scored with the
 * committed model (or `--model`).
 *
 *   node --import tsx scripts/detect/explain.ts <file.pdf> [--page N] [--near x1,y1,x2,y2] [--top K] [--model <file>]
 *
 * Boxes are in points of the displayed page, origin top-left (as the tests' `points`). `--near`
 * keeps the proposals that overlap that box. A proposal "stopped" is one the model's early cuts
 * (or the second model's `scoredFrom`) leave out: it is never a field.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { calibrate, classOf, defaultModel, detectLayout, fieldMarginsOf, loadModel, proposalsOf } from '../../src/detect/model.js';
import { readForm } from './read-form.js';

const USAGE = 'usage: node --import tsx scripts/detect/explain.ts <file.pdf> [--page N] [--near x1,y1,x2,y2] [--top K] [--model <file>]';

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

// Output cut short by a pipe (`| head`) ends the run quietly.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

// Options as the service's own commands read theirs (src/main.ts): an unknown option, a missing
// value or a second file is an error, not ignored.
let parsed;
try {
  parsed = parseArgs({
    args: process.argv.slice(2),
    options: { page: { type: 'string' }, near: { type: 'string' }, top: { type: 'string' }, model: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
} catch (err) {
  fail((err as Error).message);
}
const { values, positionals } = parsed;
if (positionals.length !== 1) fail(positionals.length ? 'one PDF at a time' : 'no PDF given');
const file = positionals[0]!;
if (!fs.existsSync(file)) fail(`no such file: ${file}`);
const wholeNumber = (name: 'page' | 'top', fallback: number) => {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a whole number from 1`);
  return n;
};
const pageNumber = wholeNumber('page', 1);
const top = wholeNumber('top', 30);
const nearRaw = values.near;
const near = nearRaw === undefined ? null : nearRaw.split(',').map(Number);
if (near && (near.length !== 4 || near.some((v) => !Number.isFinite(v)) || near[2]! <= near[0]! || near[3]! <= near[1]!)) fail('--near must be x1,y1,x2,y2 with x1 < x2 and y1 < y2');
const modelFile = values.model;
let model;
try {
  model = modelFile ? loadModel(modelFile) : defaultModel();
} catch (err) {
  fail(`cannot read the model ${modelFile ?? '(committed)'}: ${(err as Error).message}`);
}

let pages;
try {
  pages = await readForm(new Uint8Array(fs.readFileSync(file)));
} catch (err) {
  fail(`cannot read ${file} as a PDF: ${(err as Error).message}`);
}
if (pageNumber > pages.length) fail(`--page ${pageNumber}: the PDF has ${pages.length} page(s)`);
const page = pages[pageNumber - 1]!;

const { proposals, matrix } = proposalsOf(page);
const width = model.features.length;
const margins = fieldMarginsOf(model, page, proposals, matrix);
/** Whether a box (in points) overlaps the `--near` box, or there is none. */
const isNear = (x1: number, y1: number, x2: number, y2: number) => !near || (x1 < near[2]! && x2 > near[0]! && y1 < near[3]! && y2 > near[1]!);
const rows = proposals
  .map((p, i) => ({ p, i, margin: margins[i]! }))
  .filter(({ p }) => isNear(p.x, p.y, p.x + p.w, p.y + p.h))
  .sort((a, b) => b.margin - a.margin || a.i - b.i);

const pt = (v: number) => v.toFixed(1).padStart(6);
console.log(`${file}, page ${pageNumber} of ${pages.length} (${page.width.toFixed(0)} × ${page.height.toFixed(0)} pt): ${proposals.length} proposals${near ? `, ${rows.length} near ${near.join(',')}` : ''}; threshold ${model.threshold}`);
console.log('probability  class       kind                    x1     y1     x2     y2  label');
for (const { p, i, margin } of rows.slice(0, top)) {
  const probability = margin > -Infinity ? calibrate(model, margin) : null;
  const cls = classOf(model, matrix.subarray(i * width, (i + 1) * width));
  const mark = probability !== null && probability >= model.threshold ? '*' : ' ';
  console.log(`${mark}${(probability?.toFixed(3) ?? 'stopped').padStart(10)}  ${cls.padEnd(10)}  ${p.kind.padEnd(20)} ${pt(p.x)} ${pt(p.y)} ${pt(p.x + p.w)} ${pt(p.y + p.h)}  ${JSON.stringify(p.label)}`);
}
if (rows.length > top) console.log(`… ${rows.length - top} more (--top)`);

const fields = detectLayout(page, pageNumber, model).map((f) => {
  const [x1, y1] = [f.rect.x * page.width, f.rect.y * page.height];
  return { f, x1, y1, x2: x1 + f.rect.width * page.width, y2: y1 + f.rect.height * page.height };
});
const shown = fields.filter(({ x1, y1, x2, y2 }) => isNear(x1, y1, x2, y2));
console.log(`\nfields (* above: reaches the threshold; suppression and fusion then give these): ${shown.length}${near ? ` near, of ${fields.length}` : ''}`);
for (const { f, x1, y1, x2, y2 } of shown) {
  console.log(`${f.confidence.toFixed(3).padStart(11)}  ${f.type.padEnd(10)}  ${' '.repeat(20)} ${pt(x1)} ${pt(y1)} ${pt(x2)} ${pt(y2)}  ${JSON.stringify(f.label)}`);
}
