/**
 * Upload of a 50 MB PDF over a real socket: formsign (`POST /api/v1/documents`: stream to a
 * temporary file while hashing, type check, PDF analysis in a worker thread, blob commit, row)
 * against a bare @fastify/multipart route that streams the same file to disk, same run,
 * alternating. Also: formsign's peak RSS during one upload, and the latency of other requests
 * while 4 uploads of 50 MB run at once.
 *
 *   npm run build && npm run bench:upload
 *   BENCH_ROUNDS=3 npm run bench:upload
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { createStore } from '../src/store/db.js';
import { createForm } from '../src/store/forms.js';
import { createKey } from '../src/store/keys.js';
import { migrate } from '../src/store/migrations.js';
import { freePort, median, percentile, SERVER_FLAGS, waitUp } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROOT = path.resolve(import.meta.dirname, '..');
const SIZE_TARGET = 50 * 1000 * 1000; // "a 50 MB PDF", under the 50 MiB limit

/** A real 4-page PDF carrying a ~50 MB embedded file, so that its size is real PDF bytes. */
async function makeBigPdf(file: string): Promise<number> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 0; i < 4; i++) doc.addPage([612, 792]).drawText(`Contract page ${i + 1}`, { x: 72, y: 700, size: 18, font });
  const payload = crypto.randomBytes(SIZE_TARGET - 20_000);
  await doc.attach(payload, 'appendix.bin', { mimeType: 'application/octet-stream' });
  const bytes = await doc.save({ useObjectStreams: false });
  fs.writeFileSync(file, bytes);
  return bytes.length;
}

interface Server {
  child: ChildProcess;
  port: number;
}

async function start(kind: 'baseline' | 'formsign', dataDir: string): Promise<Server> {
  const port = await freePort();
  const env = { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: String(port), RATE_LIMIT_PER_MINUTE: '1000000000', SOFFICE_PATH: 'off' };
  const child =
    kind === 'baseline'
      ? spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/baseline-upload-server.ts')], { env, stdio: 'ignore' })
      : spawn(process.execPath, [...SERVER_FLAGS, path.join(ROOT, 'dist/src/main.js'), 'serve'], { env, stdio: 'ignore' });
  await waitUp(`http://127.0.0.1:${port}/healthz`);
  return { child, port };
}

async function stop(server: Server): Promise<void> {
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));
}

async function upload(url: string, file: string, key: string | null): Promise<number> {
  const form = new FormData();
  form.append('file', await fs.openAsBlob(file), 'contract.pdf');
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', body: form, headers: key ? { authorization: `Bearer ${key}` } : {} });
  await res.arrayBuffer();
  if (res.status !== 201 && res.status !== 200) throw new Error(`upload answered ${res.status}`);
  return performance.now() - started;
}

/** Peak resident memory of a process (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
}
function currentRss(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

function childrenOf(pid: number): number[] {
  const file = `/proc/${pid}/task/${pid}/children`;
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist/src/main.js'))) throw new Error('run `npm run build` first');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-bench-upload-'));
  const pdfFile = path.join(work, 'big.pdf');
  const size = await makeBigPdf(pdfFile);
  const dataDir = path.join(work, 'data');
  const baselineDir = path.join(work, 'baseline');
  fs.mkdirSync(baselineDir);
  const store = createStore({ databaseUrl: null, sqlitePath: path.join(dataDir, 'formsign.sqlite') });
  await migrate(store);
  const { key, info } = await createKey(store.db, { workspace: 'bench', name: 'bench', grants: ['documents:write', 'forms:read'], expiresAt: null });
  const form = await createForm(store.db, info.workspaceId, { title: 'Probe' }, new Date().toISOString());
  await store.close();
  console.log(`upload of a ${(size / 1e6).toFixed(1)} MB PDF, ${ROUNDS} rounds, Node ${process.version}, ${os.cpus().length} cores`);

  const times: Record<string, number[]> = { baseline: [], formsign: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 ? (['baseline', 'formsign'] as const) : (['formsign', 'baseline'] as const);
    for (const kind of order) {
      const server = await start(kind, kind === 'baseline' ? baselineDir : dataDir);
      try {
        const url = kind === 'baseline' ? `http://127.0.0.1:${server.port}/upload` : `http://127.0.0.1:${server.port}/api/v1/documents`;
        await upload(url, pdfFile, kind === 'formsign' ? key : null); // warm-up
        const ms = await upload(url, pdfFile, kind === 'formsign' ? key : null);
        times[kind]!.push(ms);
        console.log(`  round ${round} ${kind.padEnd(9)} ${ms.toFixed(0).padStart(6)} ms  ${((size / 1e6 / ms) * 1000).toFixed(0)} MB/s`);
      } finally {
        await stop(server);
      }
    }
  }
  const base = median(times.baseline!);
  const ours = median(times.formsign!);
  console.log(`\nthroughput: baseline ${((size / 1e6 / base) * 1000).toFixed(0)} MB/s, formsign ${((size / 1e6 / ours) * 1000).toFixed(0)} MB/s, ratio ${(base / ours).toFixed(2)} (goal ≥ 0.5)`);

  // Peak RSS during one upload, on a freshly started server.
  {
    const server = await start('formsign', dataDir);
    try {
      const idle = currentRss(server.child.pid!);
      await upload(`http://127.0.0.1:${server.port}/api/v1/documents`, pdfFile, key);
      const peak = peakRss(server.child.pid!);
      console.log(`peak RSS during one upload: ${(peak / 1e6).toFixed(0)} MB (idle ${(idle / 1e6).toFixed(0)} MB) = ${(peak / size).toFixed(2)} × the file size (goal ≤ 3)`);
      // The PDF reader runs in a helper process of its own; its memory is not in the figure above.
      for (const helper of childrenOf(server.child.pid!)) {
        console.log(`  PDF helper process (pid ${helper}): peak RSS ${(peakRss(helper) / 1e6).toFixed(0)} MB; server and helper together ${((peak + peakRss(helper)) / 1e6).toFixed(0)} MB`);
      }
    } finally {
      await stop(server);
    }
  }

  // Other requests' latency while 4 uploads of 50 MB run at once.
  {
    const server = await start('formsign', dataDir);
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const latencies: number[] = [];
      let running = true;
      const probe = (async () => {
        while (running) {
          const t = performance.now();
          const res = await fetch(`${base}/api/v1/forms/${form.id}`, { headers: { authorization: `Bearer ${key}` } });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`probe answered ${res.status}`);
          latencies.push(performance.now() - t);
          await new Promise((r) => setTimeout(r, 10));
        }
      })();
      const started = performance.now();
      await Promise.all(Array.from({ length: 4 }, () => upload(`${base}/api/v1/documents`, pdfFile, key)));
      const elapsed = performance.now() - started;
      running = false;
      await probe;
      console.log(
        `4 concurrent uploads in ${(elapsed / 1000).toFixed(1)} s; ${latencies.length} other requests meanwhile: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms (goal p99 ≤ 250 ms); peak RSS ${(peakRss(server.child.pid!) / 1e6).toFixed(0)} MB`,
      );
    } finally {
      await stop(server);
    }
  }
  fs.rmSync(work, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
