/**
 * The neighbours' scores (src/detect/neighbours.ts) of the export's proposals, for train.py: the
 * same code detection runs, on the first model's margins that train.py gives it.
 *
 *   node --import tsx scripts/detect/neighbours.ts <floor> <margins.f64> <out.f32> [<margins.f64> <out.f32> …]
 *
 * Each margins file holds one float64 per row of the export (.cache/detect/export/rows.f64), in
 * its order (NaN: no margin, as under the floor). Each output holds NEIGHBOUR_NAMES.length float32
 * per row: a row's neighbours' scores when its margin is at least the floor, NaN otherwise. It prints
 * NEIGHBOUR_NAMES as JSON.
 */
import fs from 'node:fs';
import path from 'node:path';
import { NEIGHBOUR_NAMES, neighbourFeatures } from '../../src/detect/neighbours.js';

const EXPORT_DIR = path.join(process.cwd(), '.cache', 'detect', 'export');
const header = JSON.parse(fs.readFileSync(path.join(EXPORT_DIR, 'header.json'), 'utf8')) as { rowColumns: string[] };
const cols = header.rowColumns;
const raw = fs.readFileSync(path.join(EXPORT_DIR, 'rows.f64'));
const rows = new Float64Array(raw.buffer, raw.byteOffset, raw.byteLength / 8);
const width = cols.length;
const count = rows.length / width;
const col = (name: string) => {
  const c = cols.indexOf(name);
  if (c < 0) throw new Error(`export: no row column ${name}`);
  return c;
};
const [cForm, cPage, cKind, cX, cY, cW, cH] = ['form', 'page', 'kind', 'x', 'y', 'w', 'h'].map(col) as [number, number, number, number, number, number, number];
const column = (c: number) => {
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) out[i] = rows[i * width + c]!;
  return out;
};
const [form, page, kind, x, y, w, h] = [cForm, cPage, cKind, cX, cY, cW, cH].map(column) as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];

const args = process.argv.slice(2);
const floor = Number(args.shift());
if (!Number.isFinite(floor) || args.length === 0 || args.length % 2) {
  console.error('usage: neighbours.ts <floor> <margins.f64> <out.f32> [<margins.f64> <out.f32> …]');
  process.exit(2);
}
const started = Date.now();
for (let a = 0; a < args.length; a += 2) {
  const bytes = fs.readFileSync(args[a]!);
  const margin = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  if (margin.length !== count) throw new Error(`${args[a]}: ${margin.length} margins for ${count} rows`);
  const out = new Float32Array(count * NEIGHBOUR_NAMES.length).fill(NaN);
  // The export's rows are page after page: each page's rows are consecutive.
  for (let start = 0; start < count; ) {
    let end = start + 1;
    while (end < count && form[end] === form[start] && page[end] === page[start]) end++;
    const n = end - start;
    const m = new Float64Array(n);
    for (let i = 0; i < n; i++) m[i] = Number.isNaN(margin[start + i]!) ? -Infinity : margin[start + i]!;
    const which: number[] = [];
    for (let i = 0; i < n; i++) if (m[i]! >= floor) which.push(i);
    const features = neighbourFeatures(
      { x: x.subarray(start, end), y: y.subarray(start, end), w: w.subarray(start, end), h: h.subarray(start, end), kind: kind.subarray(start, end), margin: m, count: n },
      floor,
      which,
    );
    which.forEach((i, r) => out.set(features.subarray(r * NEIGHBOUR_NAMES.length, (r + 1) * NEIGHBOUR_NAMES.length), (start + i) * NEIGHBOUR_NAMES.length));
    start = end;
  }
  const tmp = `${args[a + 1]}.tmp`;
  fs.writeFileSync(tmp, new Uint8Array(out.buffer));
  fs.renameSync(tmp, args[a + 1]!);
}
console.error(`neighbours: ${args.length / 2} sets of ${count} rows, ${Date.now() - started} ms`);
// The names, for train.py to write into the model.
console.log(JSON.stringify(NEIGHBOUR_NAMES));
