/**
 * Upload of a 50 MB PDF over a real socket: formsign (`POST /api/v1/documents`: stream to a
 * staged file while hashing and — postgres, s3 — into the store, type check, PDF analysis in a
 * helper, the file made visible under its hash, row) with each blob
 * store — `disk` (on SQLite), `postgres` and `s3` (on PostgreSQL; s3 is an s3rver stand-in in a
 * process of its own) — against a bare @fastify/multipart route that streams the same file to
 * disk, same run, alternating. Every upload is of new bytes (the stores keep a content once).
 * Each measured upload prints the CPU it took the client, the server (with its PDF helper) and,
 * for postgres and s3, the local PostgreSQL and s3rver.
 * Also: each store's peak RSS during one upload, each store's download throughput
 * (`GET …/file`) against reading the file from disk, and the latency of other requests while 4
 * uploads of 50 MB run at once (disk).
 *
 *   npm run build && npm run bench:upload
 *   BENCH_ROUNDS=3 BENCH_STORES=disk,postgres npm run bench:upload
 *   (PostgreSQL at FORMSIGN_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import pg from 'pg';
import { createStore } from '../src/store/db.js';
import { createForm } from '../src/store/forms.js';
import { createKey } from '../src/store/keys.js';
import { migrate } from '../src/store/migrations.js';
import { freePort, median, percentile, SERVER_FLAGS, waitUp } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
type StoreKind = 'disk' | 'postgres' | 's3';
const STORES = (process.env.BENCH_STORES ?? 'disk,postgres,s3').split(',') as StoreKind[];
const ADMIN_URL = process.env.FORMSIGN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const S3_BUCKET = 'formsign-bench';
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

/** The settings of each store's server (filled in by main). */
const storeEnv: Record<StoreKind, Record<string, string>> = { disk: { BLOB_STORE: 'disk' }, postgres: {}, s3: {} };

async function start(kind: 'baseline' | 'formsign' | StoreKind, dataDir: string): Promise<Server> {
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    DATA_DIR: dataDir,
    PORT: String(port),
    RATE_LIMIT_PER_MINUTE: '1000000000',
    SOFFICE_PATH: 'off',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    ...(kind === 'baseline' || kind === 'formsign' ? {} : storeEnv[kind]),
  };
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

/** New bytes for the next upload: 16 random bytes inside the embedded file (never read by the analysis). */
function freshen(file: string, size: number): void {
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, crypto.randomBytes(16), 0, 16, Math.floor(size / 2));
  fs.closeSync(fd);
}

/**
 * How the benchmark sends a file, and downloads one. `stream` (the default): node:http; an upload
 * is the multipart body written by hand around the file read from disk in 1 MiB pieces, 75–180 ms
 * of CPU per 50 MB. `fetch`: fetch, and a FormData of `fs.openAsBlob` for an upload (the figures
 * before 2026-11-29's fifth session), which took this process 0.5–0.7 s of CPU per 50 MB upload
 * on these 2 cores, more than the server, so that every figure was partly the client's.
 */
const CLIENT = (process.env.BENCH_CLIENT ?? 'stream') as 'stream' | 'fetch';
if (CLIENT !== 'stream' && CLIENT !== 'fetch') throw new Error('BENCH_CLIENT is stream or fetch');

/** Milliseconds to download `url` whole (bytes counted, not kept), with the client `BENCH_CLIENT` names. */
async function download(url: string, key: string, size: number): Promise<number> {
  const started = performance.now();
  let status: number;
  let body: AsyncIterable<Uint8Array>;
  if (CLIENT === 'fetch') {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    status = res.status;
    body = res.body as unknown as AsyncIterable<Uint8Array>;
  } else {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => http.get(url, { headers: { authorization: `Bearer ${key}` } }, resolve).once('error', reject));
    status = res.statusCode!;
    body = res;
  }
  if (status !== 200) throw new Error(`download answered ${status}`);
  let bytes = 0;
  for await (const chunk of body) bytes += chunk.length;
  if (bytes !== size) throw new Error(`downloaded ${bytes} of ${size} bytes`);
  return performance.now() - started;
}

/** Milliseconds to read `file` from disk as a stream (the download baseline). */
async function readFromDisk(file: string): Promise<number> {
  const started = performance.now();
  for await (const _chunk of fs.createReadStream(file)) {
    // counted by the stream
  }
  return performance.now() - started;
}

/** Milliseconds to upload `file` as the multipart field `file` (201 or 200 expected). */
async function upload(url: string, file: string, key: string | null): Promise<number> {
  const started = performance.now();
  await send(url, file, key);
  return performance.now() - started;
}

/** Uploads `file` as the multipart field `file`; answers the body of the 201 or 200. */
async function send(url: string, file: string, key: string | null): Promise<string> {
  const { status, body } = CLIENT === 'fetch' ? await sendByFetch(url, file, key) : await sendByStream(url, file, key);
  if (status !== 201 && status !== 200) throw new Error(`upload answered ${status}: ${body.slice(0, 200)}`);
  return body;
}

async function sendByFetch(url: string, file: string, key: string | null): Promise<{ status: number; body: string }> {
  const form = new FormData();
  form.append('file', await fs.openAsBlob(file), 'contract.pdf');
  const res = await fetch(url, { method: 'POST', body: form, headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: res.status, body: await res.text() };
}

async function sendByStream(url: string, file: string, key: string | null): Promise<{ status: number; body: string }> {
  const boundary = `----formsign-bench-${crypto.randomBytes(12).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="contract.pdf"\r\nContent-Type: application/pdf\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const length = head.length + fs.statSync(file).size + tail.length;
  const headers = { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(length), ...(key ? { authorization: `Bearer ${key}` } : {}) };
  const request = http.request(url, { method: 'POST', headers });
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    request.once('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.once('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(parts).toString('utf8') }));
      res.once('error', reject);
    });
    request.once('error', reject);
  });
  // Both awaited together: a server that answers early and closes fails the pipeline, and its
  // answer (status and body) is what is wanted then.
  const [sent, answer] = await Promise.allSettled([
    pipeline(
      (async function* () {
        yield head;
        yield* fs.createReadStream(file, { highWaterMark: 1024 * 1024 });
        yield tail;
      })(),
      request,
    ),
    answered,
  ]);
  if (answer.status === 'fulfilled') return answer.value;
  throw sent.status === 'rejected' ? sent.reason : answer.reason;
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

/** CPU time (user + system, in ms, to the kernel's clock tick) of a process and its live child processes (the PDF helper). */
function cpuMs(pid: number): number {
  return Math.round(([pid, ...childrenOf(pid)].reduce((sum, p) => sum + cpuTicks(p), 0) * 1000) / CLOCK_TICKS);
}

/**
 * CPU time (ms) so far of the peers on this machine: every process named `postgres` (all of
 * PostgreSQL's, connections and background writers alike; 0 when it runs elsewhere) and the
 * s3rver process. A process that ends between two readings drops out of the second: a difference
 * of two readings is right only while the same processes run (as during one upload).
 */
function peersCpuMs(s3: ChildProcess | null): { postgres: number; s3: number } {
  let postgres = 0;
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/comm`, 'utf8').trim() === 'postgres') postgres += cpuTicks(Number(name));
    } catch {
      // ended meanwhile
    }
  }
  const s3Ticks = s3?.pid && s3.exitCode === null ? cpuTicks(s3.pid) : 0;
  return { postgres: Math.round((postgres * 1000) / CLOCK_TICKS), s3: Math.round((s3Ticks * 1000) / CLOCK_TICKS) };
}

/** utime + stime of one process, in clock ticks (fields 14 and 15 of proc(5)). */
function cpuTicks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

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
  const { key, info } = await createKey(store.db, { workspace: 'bench', name: 'bench', grants: ['documents:write', 'documents:read', 'forms:read'], expiresAt: null });
  const form = await createForm(store.db, info.workspaceId, { title: 'Probe' }, new Date().toISOString());
  await store.close();

  // PostgreSQL for the postgres and s3 stores (one database, dropped at the end); the s3 peer.
  const keys: Record<StoreKind, string> = { disk: key, postgres: '', s3: '' };
  const dbName = `formsign_bench_${crypto.randomBytes(4).toString('hex')}`;
  let s3: ChildProcess | null = null;
  const needsPg = STORES.some((s) => s !== 'disk');
  if (needsPg) {
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
    const url = new URL(ADMIN_URL);
    url.pathname = `/${dbName}`;
    const pgStore = createStore({ databaseUrl: url.toString(), sqlitePath: '' });
    await migrate(pgStore);
    const pgKey = (await createKey(pgStore.db, { workspace: 'bench', name: 'bench', grants: ['documents:write', 'documents:read'], expiresAt: null })).key;
    await pgStore.close();
    keys.postgres = keys.s3 = pgKey;
    storeEnv.postgres = { DATABASE_URL: url.toString(), BLOB_STORE: 'postgres' };
    if (STORES.includes('s3')) {
      const port = await freePort();
      fs.mkdirSync(path.join(work, 's3'));
      s3 = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/s3-standin.ts')], { env: { PATH: process.env.PATH, PORT: String(port), DIR: path.join(work, 's3'), BUCKET: S3_BUCKET }, stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise((resolve) => s3!.stdout!.once('data', resolve));
      storeEnv.s3 = {
        DATABASE_URL: url.toString(),
        BLOB_STORE: 's3',
        S3_ENDPOINT: `http://127.0.0.1:${port}`,
        S3_BUCKET,
        S3_ACCESS_KEY_ID: 'S3RVER',
        S3_SECRET_ACCESS_KEY: 'S3RVER',
        S3_FORCE_PATH_STYLE: 'true',
      };
    }
  }
  const dirOf = (kind: StoreKind) => (kind === 'disk' ? dataDir : path.join(work, `data-${kind}`));
  console.log(`upload of a ${(size / 1e6).toFixed(1)} MB PDF, ${ROUNDS} rounds, stores ${STORES.join(', ')}, client ${CLIENT}, Node ${process.version}, ${os.cpus().length} cores`);

  const times: Record<string, number[]> = { baseline: [] };
  for (const kind of STORES) times[kind] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const all = ['baseline', ...STORES] as const;
    // A different order each round: no store always goes first (or after the same one).
    const order = all.map((_, i) => all[(i + round) % all.length]!);
    if (round % 2 === 0) order.reverse();
    for (const kind of order) {
      const server = await start(kind, kind === 'baseline' ? baselineDir : dirOf(kind));
      try {
        const url = kind === 'baseline' ? `http://127.0.0.1:${server.port}/upload` : `http://127.0.0.1:${server.port}/api/v1/documents`;
        const auth = kind === 'baseline' ? null : keys[kind];
        freshen(pdfFile, size);
        await upload(url, pdfFile, auth); // warm-up
        freshen(pdfFile, size);
        const cpu = process.cpuUsage();
        const serverCpu = cpuMs(server.child.pid!);
        const hasPeers = kind === 'postgres' || kind === 's3';
        const peersCpu = hasPeers ? peersCpuMs(s3) : null;
        const ms = await upload(url, pdfFile, auth);
        const { user, system } = process.cpuUsage(cpu);
        const peers = hasPeers ? peersCpuMs(s3) : null;
        times[kind]!.push(ms);
        console.log(
          `  round ${round} ${kind.padEnd(9)} ${ms.toFixed(0).padStart(6)} ms  ${((size / 1e6 / ms) * 1000).toFixed(0)} MB/s  (CPU: the client's ${((user + system) / 1000).toFixed(0)} ms, the server's ${cpuMs(server.child.pid!) - serverCpu} ms` +
            (peers && peersCpu ? `, PostgreSQL's ${peers.postgres - peersCpu.postgres} ms${kind === 's3' ? `, s3rver's ${peers.s3 - peersCpu.s3} ms` : ''})` : ')'),
        );
      } finally {
        await stop(server);
      }
    }
  }
  const base = median(times.baseline!);
  console.log(`\nupload throughput (median of ${ROUNDS}): baseline ${((size / 1e6 / base) * 1000).toFixed(0)} MB/s`);
  for (const kind of STORES) {
    const ours = median(times[kind]!);
    const goal = kind === 'disk' ? 0.9 : 0.6;
    console.log(`  ${kind.padEnd(9)} ${((size / 1e6 / ours) * 1000).toFixed(0).padStart(4)} MB/s, ratio ${(base / ours).toFixed(2)} (goal ≥ ${goal})`);
  }

  // Per store, on a freshly started server: peak RSS during one upload, then downloads.
  console.log('');
  for (const kind of STORES) {
    const server = await start(kind, dirOf(kind));
    try {
      const idle = currentRss(server.child.pid!);
      freshen(pdfFile, size);
      const doc = (JSON.parse(await send(`http://127.0.0.1:${server.port}/api/v1/documents`, pdfFile, keys[kind])) as { data: { id: string } }).data;
      const peak = peakRss(server.child.pid!);
      const helpers = childrenOf(server.child.pid!).map((h) => `PDF helper ${(peakRss(h) / 1e6).toFixed(0)} MB`);
      console.log(
        `${kind.padEnd(9)} peak RSS during one upload ${(peak / 1e6).toFixed(0)} MB, idle ${(idle / 1e6).toFixed(0)} MB: peak − idle = ${((peak - idle) / 1e6).toFixed(0)} MB = ${((peak - idle) / size).toFixed(2)} × the file (goal ≤ 1)${helpers.length ? `; ${helpers.join(', ')} (own process)` : ''}`,
      );
      const fileUrl = `http://127.0.0.1:${server.port}/api/v1/documents/${doc.id}/file`;
      await download(fileUrl, keys[kind], size); // warm-up
      const disk: number[] = [];
      const ours: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        disk.push(await readFromDisk(pdfFile));
        ours.push(await download(fileUrl, keys[kind], size));
      }
      const d = median(disk);
      const o = median(ours);
      console.log(`${' '.repeat(10)}download ${((size / 1e6 / o) * 1000).toFixed(0)} MB/s against reading the file from disk ${((size / 1e6 / d) * 1000).toFixed(0)} MB/s: ratio ${(d / o).toFixed(2)}`);
    } finally {
      await stop(server);
    }
  }
  console.log('');

  // Other requests' latency while 4 uploads of 50 MB run at once.
  {
    const server = await start('disk', dataDir);
    try {
      const base = `http://127.0.0.1:${server.port}`;
      // Four distinct files (the same bytes would be stored once), made before the probe starts:
      // copying 200 MB blocks this process, and a probe answered meanwhile would be timed late.
      const copies = Array.from({ length: 4 }, (_, i) => {
        const copy = path.join(work, `copy-${i}.pdf`);
        fs.copyFileSync(pdfFile, copy);
        freshen(copy, size);
        return copy;
      });
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
      await Promise.all(copies.map((copy) => upload(`${base}/api/v1/documents`, copy, key)));
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
  s3?.kill('SIGTERM');
  if (needsPg) {
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  }
  fs.rmSync(work, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
