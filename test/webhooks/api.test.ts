import assert from 'node:assert/strict';
import dns from 'node:dns';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestContext, TEST_DB, type TestContext } from '../helpers/context.js';
import type { LookupFn } from '../../src/webhooks/safety.js';

/** Names of the tests resolve here; any other name as the system resolves it (`localhost`). */
const NAMES: Record<string, string> = { 'hooks.example.test': '93.184.216.34', 'evil.example.test': '127.0.0.1', 'inside.example.test': '10.1.2.3', 'metadata.example.test': '169.254.169.254' };
const lookup: LookupFn = async (hostname, options) => (NAMES[hostname] ? [{ address: NAMES[hostname]!, family: 4 }] : dns.promises.lookup(hostname, options));

describe(`webhook endpoints API (${TEST_DB})`, () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let other: Record<string, string>;

  before(async () => {
    // The production policy: https only, no private addresses.
    ctx = await createTestContext({ webhooks: { policy: { allowHttp: false, allowPrivate: false }, lookup } });
    headers = bearer(await ctx.key(['webhooks:manage', 'forms:write'], 'hooks'));
    other = bearer(await ctx.key(['webhooks'], 'elsewhere'));
  });
  after(() => ctx.close());

  const send = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, h = headers) =>
    ctx.app.inject({ method, url: `/api/v1${url}`, headers: h, ...(payload === undefined ? {} : { payload: payload as object }) });
  async function ok(res: Promise<{ statusCode: number; body: string; json(): any }>, status = 200): Promise<any> {
    const r = await res;
    assert.equal(r.statusCode, status, r.body);
    return r.json().data;
  }
  async function fails(res: Promise<{ statusCode: number; body: string; json(): any }>, status: number, code: string, hint?: RegExp) {
    const r = await res;
    assert.equal(r.statusCode, status, r.body);
    assert.equal(r.json().code, code);
    if (hint) assert.match(r.json().hint, hint);
  }

  it('creates an endpoint and shows its secret this once', async () => {
    const res = await send('POST', '/webhooks', { url: 'https://hooks.example.test/in', events: ['form_published', 'document_created'], description: 'CRM' });
    assert.equal(res.statusCode, 201, res.body);
    const created = res.json().data;
    assert.equal(res.headers.location, `/api/v1/webhooks/${created.id}`);
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32);
    assert.deepEqual(
      { url: created.url, events: created.events, description: created.description, enabled: created.enabled, disabledReason: created.disabledReason },
      { url: 'https://hooks.example.test/in', events: ['form_published', 'document_created'], description: 'CRM', enabled: true, disabledReason: null },
    );
    const got = await ok(send('GET', `/webhooks/${created.id}`));
    assert.equal(got.secret, undefined);
    const { secret: _secret, ...withoutSecret } = created;
    assert.deepEqual(got, withoutSecret);
    const list = await send('GET', '/webhooks');
    assert.ok(list.json().data.every((e: { secret?: string }) => e.secret === undefined));
  });

  it('refuses bad URLs: plain http, loopback, 10.x, metadata, a name resolving to 127.0.0.1, credentials', async () => {
    const cases: Array<[string, RegExp]> = [
      ['http://hooks.example.test/in', /https URL/],
      ['https://127.0.0.1/in', /private address/],
      ['https://[::1]/in', /private address/],
      ['https://10.0.0.5/in', /private address/],
      ['https://169.254.169.254/latest/meta-data', /private address/],
      ['https://[::ffff:169.254.169.254]/x', /private address/],
      ['https://evil.example.test/in', /evil\.example\.test does not resolve to a public address \(/],
      ['https://inside.example.test/in', /inside\.example\.test does not resolve to a public address \(/],
      ['https://metadata.example.test/in', /metadata\.example\.test does not resolve to a public address \(/],
      ['https://localhost/in', /does not resolve to a public address/],
      ['https://user:pw@hooks.example.test/in', /user name or password/],
      ['not a url', /valid absolute URL/],
      ['https://no-such-host.invalid/in', /does not resolve/],
    ];
    for (const [url, hint] of cases) await fails(send('POST', '/webhooks', { url, events: ['*'] }), 400, 'validation_failed', new RegExp(`^url: .*${hint.source}`));
    const before = await ok(send('GET', '/webhooks?limit=100'));
    const endpoint = before[0];
    await fails(send('PUT', `/webhooks/${endpoint.id}`, { url: 'https://evil.example.test/x' }), 400, 'validation_failed', /^url: /);
    assert.equal((await ok(send('GET', `/webhooks/${endpoint.id}`))).url, endpoint.url);
  });

  it('checks events and keys', async () => {
    await fails(send('POST', '/webhooks', { url: 'https://hooks.example.test/a', events: ['form_published', 'form_exploded'] }), 400, 'validation_failed', /^events\[1\]: must be one of "/);
    await fails(send('POST', '/webhooks', { url: 'https://hooks.example.test/a', events: ['*', 'form_published'] }), 400, 'validation_failed', /"\*" means every event/);
    await fails(send('POST', '/webhooks', { url: 'https://hooks.example.test/a', events: [] }), 400, 'validation_failed', /events/);
    await fails(send('POST', '/webhooks', { url: 'https://hooks.example.test/a' }), 400, 'validation_failed', /events: is required/);
    await fails(send('POST', '/webhooks', { url: 'https://hooks.example.test/a', events: ['*'], colour: 'red' }), 400, 'validation_failed', /colour: unknown key/);
    await fails(send('PUT', '/webhooks/00000000-0000-7000-8000-000000000000', {}), 404, 'not_found');
    const all = await ok(send('POST', '/webhooks', { url: 'https://hooks.example.test/all', events: ['*', '*'], enabled: false }), 201);
    assert.deepEqual(all.events, ['*']);
    assert.equal(all.enabled, false);
  });

  it('needs webhooks:manage (either spelling)', async () => {
    const without = bearer(await ctx.key(['forms:read'], 'hooks'));
    await fails(send('GET', '/webhooks', undefined, without), 403, 'missing_grant', /webhooks:manage \(webhooks\)/);
    await fails(send('POST', '/webhooks', { url: 'https://hooks.example.test/a', events: ['*'] }, without), 403, 'missing_grant');
    await ok(send('GET', '/webhooks', undefined, other));
  });

  it('lists newest first with pagination, updates, re-enables, deletes', async () => {
    const ws = bearer(await ctx.key(['webhooks:manage'], 'paging'));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await ok(send('POST', '/webhooks', { url: `https://hooks.example.test/${i}`, events: ['*'] }, ws), 201)).id);
    const page = await send('GET', '/webhooks?page=2&limit=2', undefined, ws);
    assert.deepEqual(page.json().meta, { total: 3, page: 2, limit: 2 });
    assert.deepEqual(page.json().data.map((e: { id: string }) => e.id), [ids[0]]);
    await fails(send('GET', '/webhooks?page=0', undefined, ws), 400, 'invalid_pagination');

    const updated = await ok(send('PUT', `/webhooks/${ids[1]}`, { events: ['form_deleted'], description: null, url: 'https://hooks.example.test/new' }, ws));
    assert.deepEqual([updated.events, updated.description, updated.url], [['form_deleted'], null, 'https://hooks.example.test/new']);
    await ctx.store.db.updateTable('webhook_endpoints').set({ enabled: 0, disabled_reason: 'Disabled automatically', failing_since: new Date(0).toISOString() }).where('id', '=', ids[1]!).execute();
    assert.equal((await ok(send('GET', `/webhooks/${ids[1]}`, undefined, ws))).disabledReason, 'Disabled automatically');
    const enabled = await ok(send('PUT', `/webhooks/${ids[1]}`, { enabled: true }, ws));
    assert.deepEqual([enabled.enabled, enabled.disabledReason], [true, null]);
    const row = await ctx.store.db.selectFrom('webhook_endpoints').select('failing_since').where('id', '=', ids[1]!).executeTakeFirstOrThrow();
    assert.equal(row.failing_since, null);

    assert.deepEqual(await ok(send('DELETE', `/webhooks/${ids[2]}`, undefined, ws)), { id: ids[2], deleted: true });
    await fails(send('GET', `/webhooks/${ids[2]}`, undefined, ws), 404, 'not_found', /Webhook endpoint not found/);
    await fails(send('DELETE', `/webhooks/${ids[2]}`, undefined, ws), 404, 'not_found');
  });

  it('at most 20 endpoints per workspace, also when created at once', async () => {
    const ws = bearer(await ctx.key(['webhooks:manage'], 'many'));
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => send('POST', '/webhooks', { url: `https://hooks.example.test/${i}`, events: ['*'] }, ws)));
    assert.equal(results.filter((r) => r.statusCode === 201).length, 20);
    for (const r of results.filter((r) => r.statusCode !== 201)) {
      assert.equal(r.statusCode, 400, r.body);
      assert.match(r.json().hint, /at most 20 webhook endpoints/);
    }
  });

  it('rotates the secret; queues a test event; lists deliveries', async () => {
    const created = await ok(send('POST', '/webhooks', { url: 'https://hooks.example.test/rotate', events: ['form_created'] }), 201);
    const rotated = await ok(send('POST', `/webhooks/${created.id}/rotate-secret`));
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, created.secret);
    const overlap = Date.parse(rotated.previousSecretExpiresAt) - Date.now();
    assert.ok(overlap > 23.9 * 3_600_000 && overlap <= 24 * 3_600_000, String(overlap));
    const row = await ctx.store.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.deepEqual([row.secret, row.previous_secret], [rotated.secret, created.secret]);
    await fails(send('POST', `/webhooks/${created.id}/rotate-secret`, { now: true }), 400, 'validation_failed', /now: unknown key/);

    // 200, as every success but a create, a parse job's start and a redelivery (API.md).
    const queued = await send('POST', `/webhooks/${created.id}/test`);
    assert.equal(queued.statusCode, 200, queued.body);
    const delivery = queued.json().data;
    assert.equal(delivery.event, 'webhook_test');
    assert.equal(delivery.status, 'pending');
    assert.match(delivery.eventId, /^evt_[0-9a-f]{32}$/);
    assert.deepEqual(delivery.attempts, []);
    // A subscribed event (form_created) and the test event, newest first.
    await ok(send('POST', '/forms', { title: 'Hooked' }), 201);
    const list = await send('GET', `/webhooks/${created.id}/deliveries`);
    assert.deepEqual(list.json().data.map((d: { event: string }) => d.event), ['form_created', 'webhook_test']);
    assert.equal(list.json().meta.total, 2);
    const pending = await send('GET', `/webhooks/${created.id}/deliveries?status=succeeded`);
    assert.deepEqual(pending.json().data, []);
    await fails(send('GET', `/webhooks/${created.id}/deliveries?status=lost`), 400, 'validation_failed');

    const again = await send('POST', `/webhooks/${created.id}/deliveries/${delivery.id}/redeliver`);
    assert.equal(again.statusCode, 202, again.body);
    assert.equal(again.json().data.eventId, delivery.eventId);
    await fails(send('POST', `/webhooks/${created.id}/deliveries/00000000-0000-7000-8000-000000000000/redeliver`), 404, 'not_found', /Delivery not found/);
    await fails(send('POST', `/webhooks/${created.id}/deliveries/nope/redeliver`), 404, 'not_found');
  });

  it("another workspace's endpoints and deliveries answer 404", async () => {
    const mine = await ok(send('POST', '/webhooks', { url: 'https://hooks.example.test/mine', events: ['*'] }), 201);
    const delivery = (await ok(send('POST', `/webhooks/${mine.id}/test`), 200)).id;
    const theirs = (path: string) => `/webhooks/${mine.id}${path}`;
    await fails(send('GET', theirs(''), undefined, other), 404, 'not_found');
    await fails(send('PUT', theirs(''), { enabled: false }, other), 404, 'not_found');
    await fails(send('DELETE', theirs(''), undefined, other), 404, 'not_found');
    await fails(send('POST', theirs('/rotate-secret'), undefined, other), 404, 'not_found');
    await fails(send('POST', theirs('/test'), undefined, other), 404, 'not_found');
    await fails(send('GET', theirs('/deliveries'), undefined, other), 404, 'not_found');
    await fails(send('POST', theirs(`/deliveries/${delivery}/redeliver`), undefined, other), 404, 'not_found');
    // Their own endpoint with my delivery's id: not found either.
    const own = await ok(send('POST', '/webhooks', { url: 'https://hooks.example.test/theirs', events: ['*'] }, other), 201);
    await fails(send('POST', `/webhooks/${own.id}/deliveries/${delivery}/redeliver`, undefined, other), 404, 'not_found');
    assert.ok(!(await ok(send('GET', '/webhooks?limit=100', undefined, other))).some((e: { id: string }) => e.id === mine.id));
    await fails(send('GET', '/webhooks/not-an-id'), 404, 'not_found');
    // Nothing of mine changed.
    assert.equal((await ok(send('GET', theirs('')))).enabled, true);
  });

  it('is described in the OpenAPI document', async () => {
    const spec = (await send('GET', '/openapi.json')).json();
    for (const path of ['/api/v1/webhooks', '/api/v1/webhooks/{id}', '/api/v1/webhooks/{id}/rotate-secret', '/api/v1/webhooks/{id}/test', '/api/v1/webhooks/{id}/deliveries', '/api/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver']) {
      assert.ok(spec.paths[path], path);
      for (const operation of Object.values(spec.paths[path]) as Array<{ tags: string[]; summary: string }>) {
        assert.deepEqual(operation.tags, ['Webhooks']);
        assert.ok(operation.summary);
      }
    }
    assert.ok(spec.paths['/api/v1/webhooks/{id}/test'].post.responses['200']);
    assert.ok(spec.paths['/api/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver'].post.responses['202']);
  });
});
