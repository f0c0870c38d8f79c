/**
 * Parse jobs, two measurements with their baselines in the same run:
 *
 * 1. Detection (the exact detectors, as a job runs them: in a process of its own) over a
 *    200-page PDF with form widgets, text and text tags, against pdf.js alone reading the text and
 *    the annotations of every page of the same file in this thread. Alternating, medians.
 * 2. 100 parse jobs queued at once on a real `formsign serve` (SQLite, the embedded worker) while a
 *    client keeps asking for a document: latency of those requests while the jobs run, against the
 *    same requests to the same server with no job running.
 *
 *   npm run build && npm run bench:parse
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { pdfjs } from '../src/files/pdfjs.js';
import { createStore } from '../src/store/db.js';
import { createKey } from '../src/store/keys.js';
import { migrate } from '../src/store/migrations.js';
import { CORPUS } from '../test/helpers/files.js';
import { freePort, median, PDFJS_ALONE_OPTIONS, percentile, SERVER_FLAGS, waitUp } from './lib.js';

const ROOT = path.resolve(import.meta.dirname, '..');
// The built runner, as `formsign serve` and `formsign worker` run it (from source, the process would
// first load the TypeScript loader).
const { detectInProcess } = (await import(path.join(ROOT, 'dist/src/detect/runner.js'))) as typeof import('../src/detect/runner.js');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const JOBS = Number(process.env.BENCH_JOBS ?? 100);

/** 200 pages, each with 40 lines of text, 10 text fields, 5 check boxes and one text tag. */
async function makeLongForm(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const form = doc.getForm();
  for (let p = 0; p < 200; p++) {
    const page = doc.addPage([612, 792]);
    for (let line = 0; line < 40; line++) page.drawText(`Clause ${p + 1}.${line + 1}: the parties agree to the terms printed on this line.`, { x: 50, y: 770 - line * 15, size: 8, font });
    for (let f = 0; f < 10; f++) form.createTextField(`p${p}.text${f}`).addToPage(page, { x: 320, y: 760 - f * 30, width: 200, height: 18 });
    for (let c = 0; c < 5; c++) form.createCheckBox(`p${p}.check${c}`).addToPage(page, { x: 540, y: 760 - c * 30, width: 12, height: 12 });
    page.drawText(`{{Initials page ${p + 1};type=initials;role=signer}}`, { x: 50, y: 30, size: 9, font });
  }
  return doc.save();
}

/** pdf.js alone: open the file and read every page's annotations and text, nothing else. */
async function pdfjsAlone(bytes: Uint8Array): Promise<number> {
  const doc = await pdfjs.getDocument({ data: bytes.slice(), ...PDFJS_ALONE_OPTIONS }).promise;
  let items = 0;
  for (let n = 1; n <= doc.numPages; n++) {
    const page = await doc.getPage(n);
    items += (await page.getAnnotations({ intent: 'display' })).length;
    items += (await page.getTextContent()).items.length;
    page.cleanup();
  }
  await doc.destroy();
  return items;
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t = performance.now();
  const value = await work();
  return { ms: performance.now() - t, value };
}

console.log(`parse jobs, Node ${process.version}, ${os.cpus().length} cores`);
{
  const bytes = await makeLongForm();
  const alone: number[] = [];
  const detection: number[] = [];
  let fields = 0;
  await pdfjsAlone(bytes); // warm-up
  await detectInProcess(bytes.slice());
  for (let i = 0; i < ROUNDS; i++) {
    alone.push((await timed(() => pdfjsAlone(bytes))).ms);
    const run = await timed(() => detectInProcess(bytes.slice()));
    detection.push(run.ms);
    fields = run.value.fields.length;
  }
  const ratio = median(detection) / median(alone);
  console.log(`  200-page PDF (${(bytes.length / 1e6).toFixed(1)} MB, ${fields} fields found), medians of ${ROUNDS}:`);
  console.log(`    pdf.js alone, text and annotations of every page   ${median(alone).toFixed(0).padStart(6)} ms   (baseline)`);
  console.log(`    detection in a process (acroform + text_tag)       ${median(detection).toFixed(0).padStart(6)} ms   ${ratio.toFixed(2)} × the baseline`);
  console.log(`    goal ≤ 2 ×: ${ratio <= 2 ? 'met' : 'NOT met'}`);
}

if (JOBS > 0) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-bench-parse-'));
  const store = createStore({ databaseUrl: null, sqlitePath: path.join(dataDir, 'formsign.sqlite') });
  await migrate(store);
  const { key } = await createKey(store.db, { workspace: 'bench', name: 'bench', grants: ['documents:read', 'documents:write', 'documents:parse_ai'], expiresAt: null });
  await store.close();
  const port = await freePort();
  const env = { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: String(port), RATE_LIMIT_PER_MINUTE: '1000000000', SOFFICE_PATH: 'off', LOG_LEVEL: 'warn' };
  const child = spawn(process.execPath, [...SERVER_FLAGS, path.join(ROOT, 'dist/src/main.js'), 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}/api/v1`;
  const headers = { authorization: `Bearer ${key}` };
  try {
    await waitUp(`http://127.0.0.1:${port}/healthz`);
    // Documents: the corpus forms in turn (1 to 6 pages each, real widgets).
    const files = fs.readdirSync(`${CORPUS}/forms`).sort().map((f) => `${CORPUS}/forms/${f}`);
    const docs: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const form = new FormData();
      form.append('file', await fs.openAsBlob(files[i % files.length]!), 'form.pdf');
      const res = await fetch(`${base}/documents`, { method: 'POST', body: form, headers });
      if (res.status !== 201) throw new Error(`upload answered ${res.status}`);
      docs.push(((await res.json()) as { data: { id: string } }).data.id);
    }
    const probe = `${base}/documents/${docs[0]}`;
    /** Latencies of GET probe, 4 at a time, until `stop()` says so. */
    async function probeWhile(stop: () => boolean | Promise<boolean>, minimum = 0): Promise<number[]> {
      const latencies: number[] = [];
      const client = async () => {
        while (latencies.length < minimum || !(await stop())) {
          const t = performance.now();
          const res = await fetch(probe, { headers });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`probe answered ${res.status}`);
          latencies.push(performance.now() - t);
        }
      };
      await Promise.all([client(), client(), client(), client()]);
      return latencies;
    }
    const quiet = await probeWhile(() => true, 2000);

    const started = performance.now();
    const jobs = await Promise.all(
      docs.map(async (doc) => {
        const res = await fetch(`${base}/documents/${doc}/parse-jobs`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ applyMode: 'preview' }) });
        if (res.status !== 202) throw new Error(`start answered ${res.status}`);
        return { doc, id: ((await res.json()) as { data: { id: string } }).data.id };
      }),
    );
    const queued = performance.now() - started;
    let remaining = jobs.slice();
    let failed = 0;
    let lastCheck = 0;
    const busy = await probeWhile(async () => {
      if (performance.now() - lastCheck < 250) return false;
      lastCheck = performance.now();
      const still = [];
      for (const job of remaining) {
        const res = await fetch(`${base}/documents/${job.doc}/parse-jobs/${job.id}`, { headers });
        const status = ((await res.json()) as { data: { status: string } }).data.status;
        if (status === 'failed') failed++;
        if (status !== 'completed' && status !== 'failed') still.push(job);
      }
      remaining = still;
      return remaining.length === 0;
    });
    const total = performance.now() - started;
    console.log(`  ${JOBS} parse jobs queued at once on SQLite (embedded worker), corpus forms; GET /documents/{id}, 4 clients:`);
    console.log(`    queueing the ${JOBS} jobs took ${queued.toFixed(0)} ms; all finished after ${(total / 1000).toFixed(1)} s (${failed} failed)`);
    console.log(`    no job running (baseline): p50 ${percentile(quiet, 50).toFixed(1)} ms, p99 ${percentile(quiet, 99).toFixed(1)} ms (${quiet.length} requests)`);
    console.log(`    while the jobs run:        p50 ${percentile(busy, 50).toFixed(1)} ms, p99 ${percentile(busy, 99).toFixed(1)} ms (${busy.length} requests)`);
    console.log(`    goal p99 ≤ 250 ms while the jobs run: ${percentile(busy, 99) <= 250 ? 'met' : 'NOT met'}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
