import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { DispatcherThread } from '../../src/webhooks/dispatcher-thread.js';
import { createTestContext, createTestDatabase, TEST_DB, type TestContext, type TestDatabase } from '../helpers/context.js';
import { freePort, waitFor } from '../helpers/net.js';
import { Receiver } from '../helpers/receiver.js';

const MAIN = path.resolve('dist/src/main.js');

/** `formsign serve`'s own deliveries: a worker thread of the API process with its own database connection. */
describe(`webhook deliveries of formsign serve (${TEST_DB})`, () => {
  let database: TestDatabase;
  let dataDir: string;
  let ctx: TestContext;
  let key: string;
  let env: NodeJS.ProcessEnv;
  let receiver: Receiver;
  let hook: { id: string; secret: string };
  const children = new Set<ChildProcess>();

  before(async () => {
    database = await createTestDatabase();
    const { databaseUrl, sqlitePath } = database.location;
    dataDir = databaseUrl ? fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-serve-hooks-')) : path.dirname(sqlitePath);
    // Keys are made here; everything else goes through the served API.
    ctx = await createTestContext({ database, dataDir, libreOffice: null });
    key = await ctx.key(['forms:write', 'webhooks:manage'], 'served');
    // A 1-second attempt timeout: the lease of a claimed delivery is 2 × 1 s + 2 s.
    env = { PATH: process.env.PATH, LOG_LEVEL: 'info', DATA_DIR: dataDir, SOFFICE_PATH: 'off', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '1000', WORKER_STOP_GRACE_MS: '500', ...ctx.blobEnv, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
    receiver = await new Receiver().start();
  });
  after(async () => {
    for (const child of children) child.kill('SIGKILL');
    await receiver.stop();
    await ctx.close();
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function serve(args: string[] = []) {
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN, 'serve', ...args], { env: { ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'inherit'] });
    children.add(child);
    let log = '';
    child.stdout!.on('data', (d) => (log += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => (children.delete(child), resolve(code))));
    const base = `http://127.0.0.1:${port}/api/v1`;
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.ok === true);
    const call = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${base}${url}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, json: () => JSON.parse(text), text };
    };
    return { child, exited, call, log: () => log };
  }
  type Served = Awaited<ReturnType<typeof serve>>;
  const createForm = async (s: Served, title: string) => {
    const res = await s.call('POST', '/forms', { title });
    assert.equal(res.status, 201, res.text);
    return res.json().data.id as string;
  };
  const deliveries = async (s: Served) => (await s.call('GET', `/webhooks/${hook.id}/deliveries?limit=100`)).json().data as Array<{ eventId: string; status: string; attempts: Array<{ responseStatus: number | null }> }>;

  it('delivers in a thread of its own: a change made through it reaches the receiver, signed', async () => {
    const s = await serve();
    const created = await s.call('POST', '/webhooks', { url: receiver.url, events: ['form_created'] });
    assert.equal(created.status, 201, created.text);
    hook = created.json().data;
    const formId = await createForm(s, 'Delivered by serve');
    await receiver.waitFor(1);
    const event = new Webhook(hook.secret).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>) as { event: string; data: { form: { id: string } } };
    assert.deepEqual([event.event, event.data.form.id], ['form_created', formId]);
    await waitFor(async () => (await deliveries(s))[0]?.status === 'succeeded', 10_000);
    assert.match(s.log(), /webhook deliveries in a thread of their own/);
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0);
  });

  it('SIGTERM with an attempt in flight: the grace runs out, the delivery is handed back unrecorded and sent again (same webhook-id) by the next start', async () => {
    const s = await serve();
    const before = receiver.received.length;
    receiver.next({ hang: true });
    await createForm(s, 'Cut off by SIGTERM');
    await receiver.waitFor(before + 1);
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0);
    const again = await serve();
    await receiver.waitFor(before + 2, 20_000);
    const [a, b] = receiver.received.slice(before);
    assert.equal(a!.headers['webhook-id'], b!.headers['webhook-id']);
    await waitFor(async () => (await deliveries(again)).every((d) => d.status === 'succeeded'), 10_000);
    const cut = (await deliveries(again)).find((d) => d.eventId === a!.headers['webhook-id'])!;
    // The cut-off attempt was no receiver's failure: not recorded.
    assert.deepEqual(cut.attempts.map((x) => x.responseStatus), [200]);
    again.child.kill('SIGTERM');
    assert.equal(await again.exited, 0);
  });

  it('SIGKILL mid-delivery: the next start delivers the event again (same webhook-id) once the lease runs out', async () => {
    const s = await serve();
    const before = receiver.received.length;
    receiver.next({ hang: true });
    await createForm(s, 'Killed');
    await receiver.waitFor(before + 1);
    s.child.kill('SIGKILL');
    await s.exited;
    const again = await serve();
    await receiver.waitFor(before + 2, 30_000);
    const [a, b] = receiver.received.slice(before);
    assert.equal(a!.headers['webhook-id'], b!.headers['webhook-id']);
    assert.equal(a!.body, b!.body);
    await waitFor(async () => (await deliveries(again)).every((d) => d.status === 'succeeded'), 10_000);
    again.child.kill('SIGTERM');
    assert.equal(await again.exited, 0);
  });

  it('serve --no-worker delivers nothing; the deliveries wait for a worker', async () => {
    const s = await serve(['--no-worker']);
    const before = receiver.received.length;
    await createForm(s, 'Not delivered here');
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(receiver.received.length, before);
    assert.ok((await deliveries(s)).some((d) => d.status === 'pending'));
    assert.match(s.log(), /no webhook deliveries in this process/);
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0);
    // The embedded thread of the next serve takes it.
    const again = await serve();
    await receiver.waitFor(before + 1);
    again.child.kill('SIGTERM');
    assert.equal(await again.exited, 0);
  });

  it('a delivery thread that cannot open its database fails the start with the reason', async () => {
    const log = { info() {}, warn() {}, error() {} };
    await assert.rejects(
      DispatcherThread.start({ store: { databaseUrl: null, sqlitePath: '/dev/null/no-such-dir/formsign.sqlite' }, dispatcher: { policy: { allowHttp: true, allowPrivate: true } }, log }),
      /ENOTDIR|not a directory/i,
    );
  });
});
