import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { bearer, createTestContext, createTestDatabase, TEST_DB, type TestContext, type TestDatabase } from '../helpers/context.js';
import { waitFor } from '../helpers/net.js';
import { Receiver } from '../helpers/receiver.js';

const MAIN = path.resolve('dist/src/main.js');

describe(`webhook delivery by worker processes (${TEST_DB})`, () => {
  let database: TestDatabase;
  let dataDir: string;
  let ctx: TestContext;
  let headers: Record<string, string>;
  let env: NodeJS.ProcessEnv;
  let receiver: Receiver;
  const children = new Set<ChildProcess>();

  before(async () => {
    database = await createTestDatabase();
    const { databaseUrl, sqlitePath } = database.location;
    dataDir = databaseUrl ? fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-hooks-')) : path.dirname(sqlitePath);
    // The API in this process without deliveries of its own; `formsign worker` delivers.
    ctx = await createTestContext({ database, dataDir, libreOffice: null });
    headers = bearer(await ctx.key(['forms:write', 'webhooks:manage'], 'killed'));
    // A 1-second attempt timeout: the lease of a claimed delivery is 2 × 1 s + 2 s.
    env = { PATH: process.env.PATH, LOG_LEVEL: 'warn', DATA_DIR: dataDir, WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '1000', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
    receiver = await new Receiver().start();
  });
  after(async () => {
    for (const child of children) child.kill('SIGKILL');
    await receiver.stop();
    await ctx.close();
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  function startWorker(): { child: ChildProcess; exited: Promise<number | null> } {
    const child = spawn(process.execPath, [MAIN, 'worker'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    children.add(child);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => (children.delete(child), resolve(code))));
    return { child, exited };
  }

  it('a worker killed (SIGKILL) mid-delivery: another delivers the event again, with the same webhook-id', async () => {
    const created = await ctx.app.inject({ method: 'POST', url: '/api/v1/webhooks', headers, payload: { url: receiver.url, events: ['form_created'] } });
    assert.equal(created.statusCode, 201, created.body);
    const { id, secret } = created.json().data;
    // The first attempt reaches the receiver, which does not answer: the worker is killed meanwhile.
    receiver.next({ hang: true });
    const form = await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers, payload: { title: 'Delivered twice' } });
    assert.equal(form.statusCode, 201, form.body);
    const first = startWorker();
    await receiver.waitFor(1, 30_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const second = startWorker();
    await receiver.waitFor(2, 30_000);
    const [a, b] = receiver.received;
    assert.equal(a!.headers['webhook-id'], b!.headers['webhook-id']);
    assert.equal(a!.body, b!.body);
    const event = new Webhook(secret).verify(b!.body, b!.headers as Record<string, string>) as { event: string; data: { form: { id: string } } };
    assert.deepEqual([event.event, event.data.form.id], ['form_created', form.json().data.id]);
    let log: any[] = [];
    await waitFor(async () => {
      log = (await ctx.app.inject({ method: 'GET', url: `/api/v1/webhooks/${id}/deliveries`, headers })).json().data;
      return log[0]?.status === 'succeeded';
    }, 10_000);
    // The killed attempt left no record; the one that succeeded did.
    assert.equal(log.length, 1);
    assert.deepEqual(log[0].attempts.map((x: { responseStatus: number }) => x.responseStatus), [200]);
    assert.equal(log[0].eventId, a!.headers['webhook-id']);
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });
});
