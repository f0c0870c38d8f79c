/**
 * Webhook deliveries (issue 20), two figures, each against a baseline in the same run:
 *
 * 1. **API latency under delivery load**: p99 of authenticated `GET /api/v1/forms/{id}` at a fixed
 *    rate against `formsign serve` (its embedded deliveries run in a worker thread of the same
 *    process), while 1,000 events go to receivers that answer in 2 s, against the same requests
 *    with no deliveries running. Goal: p99 ≤ 2 × the baseline. Rounds alternate which phase comes
 *    first (baseline then loaded, loaded then baseline, …). BENCH_WRITES=1 measures writes
 *    (`POST /api/v1/forms`) instead of reads.
 * 2. **Delivery throughput** to a fast receiver: events/s of the dispatcher (outbox rows claimed,
 *    signed, POSTed, recorded) against a bare loop of signed `fetch` calls to the same receiver at
 *    the same concurrency (4: the dispatcher's limit per endpoint). Goal: ≥ 0.5.
 *
 *   npm run build && npm run bench:webhooks
 *   BENCH_ROUNDS=1 BENCH_EVENTS=1000 BENCH_RATE=200 BENCH_PART=latency npm run bench:webhooks
 *
 * SQLite by default; DATABASE_URL=postgres://… runs both parts on PostgreSQL (a fresh database
 * is not made: use an empty one).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import { createStore, type Store } from '../src/store/db.js';
import { createForm } from '../src/store/forms.js';
import { createKey } from '../src/store/keys.js';
import { migrate } from '../src/store/migrations.js';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.js';
import { createEndpoint } from '../src/webhooks/endpoints.js';
import { recordEvent } from '../src/webhooks/events.js';
import { signatureHeader } from '../src/webhooks/signature.js';
import { freePort, median, percentile, SERVER_FLAGS, waitUp } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1000);
const RATE = Number(process.env.BENCH_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const FAST_EVENTS = Number(process.env.BENCH_FAST_EVENTS ?? 3000);
const WORKSPACES = 50;
const CONNECTIONS = 10;
/** The mean time between two requests of one connection at the fixed rate. */
const CO_INTERVAL_MS = (1000 * CONNECTIONS) / RATE;
/** BENCH_WRITES=1: the requests measured are writes (`POST /api/v1/forms`), which share SQLite's write lock with the deliveries. */
const WRITES = process.env.BENCH_WRITES === '1';
type Kind = 'baseline' | 'deliveries';
const DATABASE_URL = process.env.DATABASE_URL ?? null;
const ROOT = path.resolve(import.meta.dirname, '..');
/** The `formsign` measured (BENCH_SERVER: another build's dist/src/main.js, to compare builds with the same measurement). */
const SERVER = process.env.BENCH_SERVER ?? path.join(ROOT, 'dist/src/main.js');
const POLICY = { allowHttp: true, allowPrivate: true };
const silent = { info() {}, warn() {}, error() {} };

async function startReceiver(delayMs: number): Promise<{ child: ChildProcess; url: string; count(): Promise<number> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/webhook-receiver.ts')], { env: { PATH: process.env.PATH, PORT: String(port), DELAY_MS: String(delayMs) }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  return { child, url: `${base}/hook`, count: async () => Number(await (await fetch(`${base}/count`)).text()) };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** `count` events of `type` for each endpoint's workspace, each in its own transaction (as changes write them). */
async function queueEvents(store: Store, workspaces: string[], count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const workspaceId = workspaces[i % workspaces.length]!;
    await store.db.transaction().execute((trx) => recordEvent(trx, workspaceId, 'form_created', { form: { id: `bench-${i}`, title: 'A form of the benchmark', description: 'x'.repeat(200) } }));
  }
}

async function pending(store: Store): Promise<number> {
  const row = await store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * One phase of load at the fixed rate. autocannon's own latency histogram counts whole
 * milliseconds and, at a fixed rate, "corrects" for coordinated omission with an expected
 * interval of ceil(1 / rate per connection) = 1 ms (a unit slip: the interval is 50 ms), which adds
 * N − 1 made-up samples for one N-ms response: one stall then decides the p99. So every response's
 * latency (autocannon's hrtime, in fractional ms) is kept here; `corrected` adds the standard
 * correction at the right interval (for a response of L ms: L − 50, L − 100, … ms).
 */
async function measure(url: string, headers: Record<string, string>): Promise<{ latencies: number[]; corrected: number[]; autocannonP99: number; failed: number }> {
  const latencies: number[] = [];
  const corrected: number[] = [];
  const request = WRITES ? { method: 'POST' as const, url: url.replace(/\/forms\/[^/]+$/, '/forms'), headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'A form written during the benchmark' }) } : { url, headers };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ ...request, connections: CONNECTIONS, overallRate: RATE, duration: SECONDS }, (error, done) => (error ? reject(error) : resolve(done)));
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status < 200 || status >= 300) return;
      latencies.push(ms);
      corrected.push(ms);
      for (let missing = ms - CO_INTERVAL_MS; missing > 0; missing -= CO_INTERVAL_MS) corrected.push(missing);
    });
  });
  return { latencies, corrected, autocannonP99: result.latency.p99, failed: result.non2xx + result.errors + result.timeouts };
}

async function latencyPart(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-bench-hooks-'));
  const store = createStore({ databaseUrl: DATABASE_URL, sqlitePath: path.join(dataDir, 'formsign.sqlite') });
  await migrate(store);
  const { key, info } = await createKey(store.db, { workspace: 'bench-reader', name: 'bench', grants: ['forms:read', 'forms:write'], expiresAt: null });
  const form = await createForm(store.db, info.workspaceId, { title: 'Benchmarked form', description: 'x', settings: { a: 1 } }, new Date().toISOString());
  const slow = await startReceiver(2000);
  // Receivers in 50 workspaces: deliveries spread over them as a real deployment's would.
  const workspaces: string[] = [];
  for (let i = 0; i < WORKSPACES; i++) {
    const { info: ws } = await createKey(store.db, { workspace: `bench-hooks-${i}`, name: 'bench', grants: ['webhooks:manage'], expiresAt: null });
    await createEndpoint({ store, policy: POLICY }, ws.workspaceId, { url: slow.url, events: ['*'] });
    workspaces.push(ws.workspaceId);
  }
  const port = await freePort();
  const server = spawn(process.execPath, [...SERVER_FLAGS, SERVER, 'serve'], {
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: String(port), RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: 'info', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', ...(DATABASE_URL ? { DATABASE_URL } : {}) },
    stdio: 'ignore',
  });
  try {
    await waitUp(`http://127.0.0.1:${port}/healthz`);
    const url = `http://127.0.0.1:${port}/api/v1/forms/${form.id}`;
    const headers = { authorization: `Bearer ${key}` };
    await autocannon({ url, headers, connections: 8, duration: 3 });
    console.log(`1. ${WRITES ? 'POST /api/v1/forms' : 'GET /api/v1/forms/{id}'} at ${RATE} req/s (${CONNECTIONS} connections) for ${SECONDS} s, with and without ${EVENTS} events going to receivers answering in 2 s (${WORKSPACES} workspaces), ${ROUNDS} round(s), ${DATABASE_URL ? 'PostgreSQL' : 'SQLite'}`);
    console.log(`   p99 = every response's own latency (autocannon's hrtime, sub-millisecond); p99co = the same, corrected for coordinated omission at the expected ${CO_INTERVAL_MS} ms between requests of a connection; ac = autocannon's own p99 (whole ms, its correction at 1 ms)`);
    const p99: Record<Kind, number[]> = { baseline: [], deliveries: [] };
    const p99co: Record<Kind, number[]> = { baseline: [], deliveries: [] };
    const ac: Record<Kind, number[]> = { baseline: [], deliveries: [] };
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternating which comes first: a drift of the machine's load over a round falls on both.
      const order: Kind[] = round % 2 === 1 ? ['baseline', 'deliveries'] : ['deliveries', 'baseline'];
      for (const kind of order) {
        const before = await slow.count();
        if (kind === 'deliveries') await queueEvents(store, workspaces, EVENTS);
        const result = await measure(url, headers);
        const delivered = (await slow.count()) - before;
        p99[kind].push(percentile(result.latencies, 99));
        p99co[kind].push(percentile(result.corrected, 99));
        ac[kind].push(result.autocannonP99);
        const f = (n: number) => n.toFixed(1).padStart(6);
        console.log(`  round ${round} ${kind.padEnd(10)} p99 ${f(p99[kind].at(-1)!)} ms  p99co ${f(p99co[kind].at(-1)!)} ms  ac ${String(result.autocannonP99).padStart(4)} ms  p50 ${percentile(result.latencies, 50).toFixed(2)} ms  p99.9 ${percentile(result.latencies, 99.9).toFixed(1)} ms  max ${Math.max(...result.latencies).toFixed(1)} ms  ${result.latencies.length} responses, non-2xx/errors ${result.failed}  webhooks delivered meanwhile ${delivered}  load ${os.loadavg()[0]!.toFixed(1)}`);
        // The next phase starts with nothing in flight.
        for (let i = 0; i < 600 && (await pending(store)) > 0; i++) await new Promise((r) => setTimeout(r, 500));
      }
    }
    const ratio = (figures: Record<Kind, number[]>) => `${median(figures.baseline).toFixed(1)} → ${median(figures.deliveries).toFixed(1)} ms: ratio ${(median(figures.deliveries) / median(figures.baseline)).toFixed(2)}`;
    const perRound = p99.baseline.map((b, i) => (p99.deliveries[i]! / b).toFixed(2)).join(', ');
    console.log(`  median p99 (goal: ratio ≤ 2): ${ratio(p99)} (per round ${perRound}); p99co ${ratio(p99co)}; autocannon's p99 ${ratio(ac)}\n`);
  } finally {
    await stop(server);
    await stop(slow.child);
    await store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function throughputPart(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-bench-hooks-'));
  const store = createStore({ databaseUrl: DATABASE_URL, sqlitePath: path.join(dataDir, 'formsign.sqlite') });
  await migrate(store);
  const fast = await startReceiver(0);
  try {
    const { info } = await createKey(store.db, { workspace: 'bench-fast', name: 'bench', grants: ['webhooks:manage'], expiresAt: null });
    const endpoint = await createEndpoint({ store, policy: POLICY }, info.workspaceId, { url: fast.url, events: ['*'] });
    const body = JSON.stringify({ id: 'evt_0', event: 'form_created', timestamp: new Date().toISOString(), workspaceId: info.workspaceId, data: { form: { id: 'x', title: 'A form of the benchmark', description: 'x'.repeat(200) } } });
    const concurrency = 4;
    console.log(`2. ${FAST_EVENTS} events to one fast receiver (its own process), concurrency ${concurrency}, ${ROUNDS} round(s)`);
    const rates: Record<'bare' | 'bareUndici' | 'dispatcher', number[]> = { bare: [], bareUndici: [], dispatcher: [] };
    const agent = new Agent();
    /** `concurrency` loops of sign-and-POST, nothing read or written in a database: events/s. */
    const bareLoop = async (post: (id: string, headers: Record<string, string>) => Promise<number>) => {
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < FAST_EVENTS) {
            const id = `evt_${next++}`;
            const timestamp = Math.floor(Date.now() / 1000);
            const status = await post(id, { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader([endpoint.secret], id, timestamp, body) });
            if (status !== 200) throw new Error(`receiver answered ${status}`);
          }
        }),
      );
      return FAST_EVENTS / ((performance.now() - started) / 1000);
    };
    for (let round = 1; round <= ROUNDS; round++) {
      // The baseline the issue names: Node's fetch.
      rates.bare.push(
        await bareLoop(async (_id, headers) => {
          const res = await fetch(fast.url, { method: 'POST', body, redirect: 'manual', headers });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      // A stricter one: the HTTP client the dispatcher itself uses (undici's request).
      rates.bareUndici.push(
        await bareLoop(async (_id, headers) => {
          const res = await request(fast.url, { method: 'POST', body, headers, dispatcher: agent });
          await res.body.arrayBuffer();
          return res.statusCode;
        }),
      );

      // The dispatcher: the events are in the outbox first (not timed), then delivered.
      await queueEvents(store, [info.workspaceId], FAST_EVENTS);
      const dispatcher = new WebhookDispatcher({ store, log: silent, policy: POLICY, pollMs: 50 });
      const t0 = performance.now();
      dispatcher.start();
      while ((await pending(store)) > 0) await new Promise((r) => setTimeout(r, 50));
      const elapsed = (performance.now() - t0) / 1000;
      await dispatcher.stop(1000);
      rates.dispatcher.push(FAST_EVENTS / elapsed);
      console.log(`  round ${round}  bare fetch loop ${rates.bare.at(-1)!.toFixed(0)} events/s  bare undici loop ${rates.bareUndici.at(-1)!.toFixed(0)} events/s  dispatcher ${rates.dispatcher.at(-1)!.toFixed(0)} events/s`);
    }
    await agent.close();
    const bare = median(rates.bare);
    const bareUndici = median(rates.bareUndici);
    const dispatched = median(rates.dispatcher);
    const failed = await store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('status', '!=', 'succeeded').executeTakeFirstOrThrow();
    console.log(`  median: bare fetch ${bare.toFixed(0)} events/s, bare undici ${bareUndici.toFixed(0)} events/s, dispatcher ${dispatched.toFixed(0)} events/s: ratio to fetch ${(dispatched / bare).toFixed(2)} (goal ≥ 0.5), to undici ${(dispatched / bareUndici).toFixed(2)}; deliveries not succeeded: ${failed.n}`);
  } finally {
    await stop(fast.child);
    await store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist/src/main.js'))) throw new Error('run `npm run build` first');
  if (process.env.BENCH_SERVER) console.log(`server: ${SERVER}`);
  console.log(`Node ${process.version}, ${os.cpus().length} cores (a shared machine: figures vary from run to run)\n`);
  if (process.env.BENCH_PART !== 'throughput') await latencyPart();
  if (process.env.BENCH_PART !== 'latency') await throughputPart();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
