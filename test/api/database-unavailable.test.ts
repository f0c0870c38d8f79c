import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createStore } from '../../src/store/db.js';
import { bearer, createTestContext, createTestDatabase, TEST_DB, type TestContext, type TestDatabase } from '../helpers/context.js';
import { startDatabaseRelay, type DatabaseRelay } from '../helpers/net.js';

/** GET /healthz back to back until `stop()`; the worst latency seen (a request still waiting counts). */
function probeHealth(base: string): { stop(): Promise<number> } {
  let running = true;
  let worst = 0;
  let pendingSince: number | null = null;
  const loop = (async () => {
    while (running) {
      pendingSince = performance.now();
      await fetch(`${base}/healthz`).then((r) => r.arrayBuffer());
      worst = Math.max(worst, performance.now() - pendingSince);
      pendingSince = null;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      if (pendingSince !== null) worst = Math.max(worst, performance.now() - pendingSince);
      await loop;
      return worst;
    },
  };
}

/** Another process holding SQLite's write lock (`BEGIN IMMEDIATE`) until told to commit. */
async function holdWriteLock(file: string): Promise<{ release(): Promise<void> }> {
  const script = `
    const db = new (require('better-sqlite3'))(process.argv[1]);
    db.prepare('begin immediate').run();
    process.stdout.write('locked\\n');
    process.stdin.once('data', () => { db.prepare('commit').run(); db.close(); process.exit(0); });`;
  const child: ChildProcess = spawn(process.execPath, ['-e', script, file], { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
  });
  return {
    async release() {
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin!.write('go\n');
      await exited;
    },
  };
}

describe('SQLite locked by another process: no stall, 503 after the wait', { skip: TEST_DB !== 'sqlite' }, () => {
  let database: TestDatabase;
  let ctx: TestContext;
  let base: string;
  let headers: Record<string, string>;
  let sqlitePath: string;

  before(async () => {
    const plain = await createTestDatabase();
    sqlitePath = plain.location.sqlitePath;
    await plain.store.close();
    // The same file, with a shorter wait so that the test is quick.
    const store = createStore({ databaseUrl: null, sqlitePath, sqliteBusyWaitMs: 1500 });
    database = { ...plain, store, drop: async () => { await store.close(); await plain.drop().catch(() => {}); } };
    ctx = await createTestContext({ database });
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
    headers = { ...bearer(await ctx.key(['forms:write', 'forms:read'])), 'content-type': 'application/json' };
    // Remembered by the key cache, so that the write below is the first thing to need the lock.
    assert.equal((await fetch(`${base}/api/v1/forms`, { headers })).status, 200);
  });
  after(async () => {
    await ctx.close();
    await database.drop();
  });

  it('a write waits off the event loop (/healthz stays fast, reads go on) and answers 503 with Retry-After', async () => {
    const lock = await holdWriteLock(sqlitePath);
    try {
      const probe = probeHealth(base);
      const started = performance.now();
      const write = fetch(`${base}/api/v1/forms`, { method: 'POST', headers, body: JSON.stringify({ title: 'Locked out' }) });
      // Reads do not need the write lock (WAL): they are answered meanwhile.
      await new Promise((r) => setTimeout(r, 300));
      const readStarted = performance.now();
      assert.equal((await fetch(`${base}/api/v1/forms`, { headers })).status, 200);
      assert.ok(performance.now() - readStarted < 500, 'a read waited for the write');
      const res = await write;
      const waited = performance.now() - started;
      const worst = await probe.stop();
      assert.equal(res.status, 503, await res.clone().text());
      const body = await res.json();
      assert.equal(body.code, 'unavailable');
      assert.equal(res.headers.get('retry-after'), '1');
      assert.ok(waited >= 1400 && waited < 4000, `answered after ${waited} ms`);
      assert.ok(worst < 500, `/healthz took ${worst} ms while the write waited`);
    } finally {
      await lock.release();
    }
    // Nothing was written.
    const list = await (await fetch(`${base}/api/v1/forms`, { headers })).json();
    assert.ok(!list.data.some((f: { title: string }) => f.title === 'Locked out'));
  });

  it('a write whose lock is released within the wait succeeds', async () => {
    const lock = await holdWriteLock(sqlitePath);
    const write = fetch(`${base}/api/v1/forms`, { method: 'POST', headers, body: JSON.stringify({ title: 'Waited' }) });
    await new Promise((r) => setTimeout(r, 400));
    await lock.release();
    const res = await write;
    assert.equal(res.status, 201, await res.clone().text());
  });
});

describe('PostgreSQL unreachable: 503, not 500', { skip: TEST_DB !== 'postgres' }, () => {
  let database: TestDatabase;
  let proxyDb: TestDatabase;
  let ctx: TestContext;
  let relay: DatabaseRelay;
  let base: string;
  let headers: Record<string, string>;

  before(async () => {
    database = await createTestDatabase();
    // The app reaches PostgreSQL through a TCP relay this test can cut.
    relay = await startDatabaseRelay(database.location.databaseUrl!);
    const store = createStore({ databaseUrl: relay.url, sqlitePath: '' });
    proxyDb = { store, location: { databaseUrl: relay.url, sqlitePath: '' }, drop: () => store.close() };
    ctx = await createTestContext({ database: proxyDb });
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
    headers = { ...bearer(await ctx.key(['forms:write', 'forms:read'])), 'content-type': 'application/json' };
    assert.equal((await fetch(`${base}/api/v1/forms`, { headers })).status, 200);
  });
  after(async () => {
    await ctx.close();
    await proxyDb.drop().catch(() => {});
    await relay.close();
    await database.drop();
  });

  it('connections refused and dropped: writes and reads answer 503 unavailable with Retry-After; back to normal after', async () => {
    relay.server.close();
    relay.cut();
    for (const request of [
      () => fetch(`${base}/api/v1/forms`, { method: 'POST', headers, body: JSON.stringify({ title: 'Unreachable' }) }),
      () => fetch(`${base}/api/v1/forms`, { headers }),
    ]) {
      const res = await request();
      assert.equal(res.status, 503, await res.clone().text());
      assert.equal((await res.json()).code, 'unavailable');
      assert.ok(res.headers.get('retry-after'));
    }
    assert.equal((await fetch(`${base}/readyz`)).status, 503);
    // The relay comes back on the same port: the pool reconnects.
    await new Promise<void>((r) => relay.server.listen(Number(new URL(relay.url).port), '127.0.0.1', r));
    const res = await fetch(`${base}/api/v1/forms`, { method: 'POST', headers, body: JSON.stringify({ title: 'Back' }) });
    assert.equal(res.status, 201, await res.clone().text());
  });
});
