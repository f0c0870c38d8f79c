import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../../src/store/keys.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { createEndpoint } from '../../src/webhooks/endpoints.js';
import { recordEvent } from '../../src/webhooks/events.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from '../helpers/context.js';
import { Receiver } from '../helpers/receiver.js';

const policy = { allowHttp: true, allowPrivate: true };
const silent = { info() {}, warn() {}, error() {} };

describe(`webhook dispatcher limits (${TEST_DB})`, () => {
  let database: TestDatabase;
  let receiver: Receiver;

  before(async () => {
    database = await createTestDatabase();
    receiver = await new Receiver().start();
  });
  after(async () => {
    await receiver.stop();
    await database.drop();
  });

  it('holding all it may (every slot busy, as many claimed and waiting), it waits without spinning, then delivers the rest', { timeout: 60_000 }, async () => {
    const { store } = database;
    const { info } = await createKey(store.db, { workspace: 'full', name: 't', grants: ['webhooks:manage'], expiresAt: null });
    const endpoints = [];
    for (let i = 0; i < 4; i++) endpoints.push(await createEndpoint({ store, policy }, info.workspaceId, { url: `${receiver.url}?e=${i}`, events: ['form_created'] }));
    for (let i = 0; i < 5; i++) await store.db.transaction().execute((trx) => recordEvent(trx, info.workspaceId, 'form_created', { form: { id: `f${i}` } }));
    receiver.next(...Array.from({ length: 2 }, () => ({ status: 200, delayMs: 1500 })));
    // 2 attempts at once, 1 per endpoint: it holds 4 (2 running, 2 claimed), with 16 more due.
    const dispatcher = new WebhookDispatcher({ store, log: silent, policy, concurrency: 2, perEndpoint: 1, pollMs: 20, timeoutMs: 5000 });
    dispatcher.start();
    try {
      await receiver.waitFor(2);
      // The event loop stays free meanwhile: a 10-ms timer fires about on time.
      for (let i = 0; i < 5; i++) {
        const started = Date.now();
        await new Promise((r) => setTimeout(r, 10));
        assert.ok(Date.now() - started < 500, `a 10-ms timer took ${Date.now() - started} ms`);
      }
      assert.equal(dispatcher.busy, 2);
      await receiver.waitFor(20, 30_000);
      const rows = await store.db.selectFrom('webhook_deliveries').select('status').execute();
      await new Promise((r) => setTimeout(r, 200));
      const settled = await store.db.selectFrom('webhook_deliveries').select('status').where('status', '=', 'succeeded').execute();
      assert.equal(rows.length, 20);
      assert.equal(settled.length, 20);
      assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 5);
    } finally {
      await dispatcher.stop(1000);
    }
  });
});
