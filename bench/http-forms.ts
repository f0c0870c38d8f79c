/**
 * Authenticated `GET /api/v1/forms/{id}` of formsign against a bare Fastify route doing the same
 * single-row read on the same SQLite file, in the same run, each server in its own process and
 * autocannon in this one. Runs alternate (baseline, formsign, baseline, formsign, …) so that
 * machine noise hits both alike; the figure that counts is the ratio of medians.
 *
 *   npm run bench:http                    # SQLite, in-process limiter, then the Redis limiter
 *   BENCH_SECONDS=5 BENCH_ROUNDS=2 npm run bench:http
 *
 * Needs a build (`npm run build`, done by `npm ci`) and, for the Redis figures, REDIS_URL or
 * Redis on 127.0.0.1:6379.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { createStore } from '../src/store/db.js';
import { createForm } from '../src/store/forms.js';
import { createKey } from '../src/store/keys.js';
import { migrate } from '../src/store/migrations.js';
import { freePort, median, SERVER_FLAGS, waitUp } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROOT = path.resolve(import.meta.dirname, '..');

async function start(kind: 'baseline' | 'formsign' | 'formsign+redis', dataDir: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  // Metrics on (METRICS=false to measure without): as an operator would run it.
  const env = { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: String(port), RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', METRICS: process.env.METRICS ?? 'true' };
  const child =
    kind === 'baseline'
      ? spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/baseline-server.ts')], { env, stdio: 'ignore' })
      : spawn(process.execPath, [...SERVER_FLAGS, path.join(ROOT, 'dist/src/main.js'), 'serve'], {
          env: { ...env, ...(kind === 'formsign+redis' ? { REDIS_URL } : {}) },
          // Request logging stays on (info, one line per request), as in production; it goes nowhere.
          stdio: 'ignore',
        });
  await waitUp(`http://127.0.0.1:${port}/healthz`);
  return { child, port };
}

async function measure(url: string, headers: Record<string, string>): Promise<{ rps: number; p99: number; errors: number }> {
  // Warm up (JIT, connection pools) before the measured run.
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 });
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS });
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.non2xx + result.errors + result.timeouts };
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist/src/main.js'))) throw new Error('run `npm run build` first');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-bench-'));
  const store = createStore({ databaseUrl: null, sqlitePath: path.join(dataDir, 'formsign.sqlite') });
  await migrate(store);
  const { key, info } = await createKey(store.db, { workspace: 'bench', name: 'bench', grants: ['forms:read'], expiresAt: null });
  for (let i = 0; i < 1000; i++) await createForm(store.db, info.workspaceId, { title: `Filler ${i}` }, new Date().toISOString());
  const form = await createForm(store.db, info.workspaceId, { title: 'Benchmarked form', description: 'x', settings: { a: 1 } }, new Date().toISOString());
  await store.close();

  let redisUp = false;
  const probe = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  try {
    await probe.connect();
    redisUp = (await probe.ping()) === 'PONG';
  } catch {
    redisUp = false;
  } finally {
    probe.disconnect();
  }

  type Kind = 'baseline' | 'formsign' | 'formsign+redis';
  const kinds: Kind[] = ['baseline', 'formsign', ...(redisUp ? (['formsign+redis'] as const) : [])];
  const results: Record<string, Array<{ rps: number; p99: number; errors: number }>> = {};
  console.log(`GET /api/v1/forms/{id}: ${ROUNDS} rounds × ${SECONDS} s, ${CONNECTIONS} connections, Node ${process.version}, ${os.cpus().length} cores`);
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round starts with a different server, so that no one always runs right after another.
    const order = kinds.map((_, i) => kinds[(i + round - 1) % kinds.length]!);
    for (const kind of order) {
      const { child, port } = await start(kind, dataDir);
      try {
        const url = kind === 'baseline' ? `http://127.0.0.1:${port}/forms/${form.id}` : `http://127.0.0.1:${port}/api/v1/forms/${form.id}`;
        // As a browser or an HTTP library asks: compression accepted (the answer, under 1 KiB, stays as it is).
        const r = await measure(url, { authorization: `Bearer ${key}`, 'accept-encoding': 'gzip, deflate, br' });
        (results[kind] ??= []).push(r);
        console.log(`  round ${round} ${kind.padEnd(15)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${r.p99} ms  non-2xx/errors ${r.errors}`);
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    }
  }
  const base = median(results.baseline!.map((r) => r.rps));
  console.log('\nmedian req/s and ratio to the baseline:');
  for (const kind of kinds) {
    const rps = median(results[kind]!.map((r) => r.rps));
    console.log(`  ${kind.padEnd(15)} ${rps.toFixed(0).padStart(7)} req/s  ratio ${(rps / base).toFixed(2)}  errors ${results[kind]!.reduce((n, r) => n + r.errors, 0)}`);
  }
  if (!redisUp) console.log(`  (Redis not reachable at ${REDIS_URL}: no Redis figures)`);
  fs.rmSync(dataDir, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
