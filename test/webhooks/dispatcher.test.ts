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

  it('claims a fast endpoint further ahead (at most 8 × its attempts in flight) and a slow one at most twice', { timeout: 60_000 }, async () => {
    const { store } = database;
    const slowReceiver = await new Receiver().start();
    slowReceiver.fallback = { status: 200, delayMs: 250 };
    const { info: fastWs } = await createKey(store.db, { workspace: 'ahead-fast', name: 't', grants: ['webhooks:manage'], expiresAt: null });
    const { info: slowWs } = await createKey(store.db, { workspace: 'ahead-slow', name: 't', grants: ['webhooks:manage'], expiresAt: null });
    const fast = await createEndpoint({ store, policy }, fastWs.workspaceId, { url: receiver.url, events: ['form_created'] });
    const slow = await createEndpoint({ store, policy }, slowWs.workspaceId, { url: slowReceiver.url, events: ['form_created'] });
    const before = receiver.received.length;
    for (let i = 0; i < 200; i++) await store.db.transaction().execute((trx) => recordEvent(trx, fastWs.workspaceId, 'form_created', { form: { id: `fast${i}` } }));
    for (let i = 0; i < 12; i++) await store.db.transaction().execute((trx) => recordEvent(trx, slowWs.workspaceId, 'form_created', { form: { id: `slow${i}` } }));
    const dispatcher = new WebhookDispatcher({ store, log: silent, policy, perEndpoint: 2, pollMs: 20, timeoutMs: 5000 });
    const most = { fast: 0, slow: 0 };
    const sample = setInterval(() => {
      most.fast = Math.max(most.fast, dispatcher.holding(fast.id));
      most.slow = Math.max(most.slow, dispatcher.holding(slow.id));
    }, 1);
    dispatcher.start();
    try {
      await receiver.waitFor(before + 200, 30_000);
      await slowReceiver.waitFor(12, 30_000);
    } finally {
      clearInterval(sample);
      await dispatcher.stop(1000);
      await slowReceiver.stop();
    }
    // 2 in flight each: the slow endpoint (250-ms answers) is held at most 4, the fast one up to
    // 16 once its attempts are known to be quick — more than twice, so claims come less often.
    assert.ok(most.slow >= 3 && most.slow <= 4, `slow endpoint held at most ${most.slow}`);
    assert.ok(most.fast > 4 && most.fast <= 16, `fast endpoint held at most ${most.fast}`);
    const pending = await store.db.selectFrom('webhook_deliveries').select('id').where('status', '!=', 'succeeded').where('endpoint_id', 'in', [fast.id, slow.id]).execute();
    assert.equal(pending.length, 0);
  });

  it('hands back at once what it claimed ahead for an endpoint that turned slow, once too late to start within the lease', { timeout: 60_000 }, async () => {
    const { store } = database;
    const turning = await new Receiver().start();
    turning.next(...Array.from({ length: 12 }, () => ({ status: 200 })));
    turning.fallback = { hang: true };
    const { info } = await createKey(store.db, { workspace: 'turning', name: 't', grants: ['webhooks:manage'], expiresAt: null });
    const endpoint = await createEndpoint({ store, policy }, info.workspaceId, { url: turning.url, events: ['form_created'] });
    for (let i = 0; i < 40; i++) await store.db.transaction().execute((trx) => recordEvent(trx, info.workspaceId, 'form_created', { form: { id: `t${i}` } }));
    // 1 attempt at a time, 1-s timeout: a lease of 4 s, and a delivery claimed more than 2 s ago
    // can no longer be started within it.
    const dispatcher = new WebhookDispatcher({ store, log: silent, policy, perEndpoint: 1, pollMs: 20, timeoutMs: 1000 });
    // Leased by this dispatcher and claimed more than 3.5 s ago (lease ends within 0.5 s): an
    // attempt started by then (at most 2 s after its claim) has ended (1-s timeout) and been
    // written; only a delivery left waiting past its time, not handed back, is still leased.
    const stale = async () =>
      Number(
        (
          await store.db
            .selectFrom('webhook_deliveries')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('endpoint_id', '=', endpoint.id)
            .where('lease_owner', '=', dispatcher.owner)
            .where('status', '=', 'pending')
            .where('lease_expires_at', '<', new Date(Date.now() + 500).toISOString())
            .executeTakeFirstOrThrow()
        ).n,
      );
    let mostHeld = 0;
    let mostStale = 0;
    dispatcher.start();
    try {
      const until = Date.now() + 6000;
      while (Date.now() < until) {
        mostHeld = Math.max(mostHeld, dispatcher.holding(endpoint.id));
        mostStale = Math.max(mostStale, await stale());
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await dispatcher.stop(100);
      await turning.stop();
    }
    assert.ok(mostHeld > 2, `it claimed ahead while the endpoint was fast (held at most ${mostHeld})`);
    assert.equal(mostStale, 0, `${mostStale} deliveries stayed leased, not started, until their leases ran out`);
  });
});

