import assert from 'node:assert/strict';
import dns from 'node:dns';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { DetectionError } from '../../src/detect/runner.js';
import type { DetectionResult } from '../../src/detect/types.js';
import { recordEvent } from '../../src/webhooks/events.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import type { LookupFn } from '../../src/webhooks/safety.js';
import { verifyWebhook } from '../../src/webhooks/signature.js';
import { bearer, createTestContext, TEST_DB, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';
import { freePort, waitFor } from '../helpers/net.js';
import { Receiver, type Received } from '../helpers/receiver.js';

const ALL = ['forms:read', 'forms:write', 'forms:delete', 'documents:read', 'documents:write', 'documents:delete', 'documents:parse_ai', 'webhooks:manage'];
/** The retry schedule (about 33 hours) and the 5 days before disabling, run 100,000 times faster. */
const SCALE = 0.00001;
const TIMEOUT_MS = 1500;

describe(`webhook deliveries (${TEST_DB})`, () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let pdf: Buffer;
  let detect: () => Promise<DetectionResult>;
  const receivers: Receiver[] = [];

  before(async () => {
    ctx = await createTestContext({
      worker: true,
      libreOffice: null,
      detect: () => detect(),
      revisionBytesPerWorkspace: 6000,
      webhooks: { deliver: { retryScale: SCALE, timeoutMs: TIMEOUT_MS } },
    });
    headers = bearer(await ctx.key(ALL, 'deliveries'));
    pdf = await makePdf([{ width: 612, height: 792 }]);
  });
  after(async () => {
    await ctx.close();
    for (const r of receivers) await r.stop().catch(() => {});
  });

  const receiver = async (port = 0) => {
    const r = await new Receiver().start(port);
    receivers.push(r);
    return r;
  };
  const send = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, h = headers) =>
    ctx.app.inject({ method, url: `/api/v1${url}`, headers: h, ...(payload === undefined ? {} : { payload: payload as object }) });
  async function ok(res: Promise<{ statusCode: number; body: string; json(): any }>, status = 200): Promise<any> {
    const r = await res;
    assert.equal(r.statusCode, status, r.body);
    return r.json().data;
  }
  const endpoint = (url: string, events: string[] = ['*'], h = headers): Promise<{ id: string; secret: string }> => ok(send('POST', '/webhooks', { url, events }, h), 201);
  const deliveries = async (id: string, h = headers) => (await ok(send('GET', `/webhooks/${id}/deliveries?limit=100`, undefined, h))) as Array<{ id: string; eventId: string; event: string; status: string; attempts: Array<{ responseStatus: number | null; error: string | null; responseBody: string | null }>; nextAttemptAt: string | null }>;
  async function settled(id: string, count: number, h = headers) {
    let last: Awaited<ReturnType<typeof deliveries>> = [];
    await waitFor(async () => {
      last = await deliveries(id, h);
      return last.length >= count && last.every((d) => d.status !== 'pending');
    }, 30_000, 25).catch(() => assert.fail(`deliveries did not settle: ${JSON.stringify(last)}`));
    return last;
  }
  async function upload(h = headers): Promise<string> {
    const body = multipart([{ name: 'file', data: pdf, filename: 'contract.pdf' }]);
    return (await ok(ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...h, ...body.headers }, payload: body.payload }), 201)).id;
  }
  const verified = (secret: string, r: Received) =>
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { id: string; event: string; timestamp: string; workspaceId: string; data: any };

  it('delivers every event type, each signed so that the standardwebhooks package verifies it', async () => {
    const r = await receiver();
    const { id, secret } = await endpoint(r.url);
    const result: DetectionResult = {
      fields: [{ type: 'digital_signature', label: 'Signature', pageNumber: 1, rect: { x: 0.1, y: 0.8, width: 0.3, height: 0.05 }, confidence: 0.9, source: 'layout', assigneeRole: null, isRequired: true, isReadOnly: false, options: {} } as never],
      stats: { pages: 1, durationMs: 1, found: {}, duplicates: 0, skipped: {}, warnings: [] },
    };
    detect = async () => result;

    const form = (await ok(send('POST', '/forms', { title: 'Events' }), 201)).id;
    await ok(send('PUT', `/forms/${form}`, { title: 'Events, renamed' }));
    await ok(send('POST', `/forms/${form}/questions`, { questionText: 'Name?', type: 'short_text' }), 201);
    await ok(send('POST', `/forms/${form}/publish`), 201);
    await ok(send('DELETE', `/forms/${form}`));
    const doc = await upload();
    await ok(send('PUT', `/documents/${doc}`, { title: 'Contract' }));
    await ok(send('POST', `/documents/${doc}/fields`, { type: 'date', pageNumber: 1, x: 0.5, y: 0.5, width: 0.2, height: 0.05 }), 201);
    await ok(send('POST', `/documents/${doc}/publish`), 201);
    const job = (await ok(send('POST', `/documents/${doc}/parse-jobs`, { applyMode: 'preview' }), 202)).id;
    await r.waitFor(10);
    detect = async () => {
      throw new DetectionError('unreadable', 'the document cannot be read', true);
    };
    const failedJob = (await ok(send('POST', `/documents/${doc}/parse-jobs`, { applyMode: 'preview' }), 202)).id;
    await r.waitFor(11);
    await ok(send('DELETE', `/documents/${doc}`));
    await ok(send('POST', `/webhooks/${id}/test`), 200);
    await r.waitFor(13);

    const events = r.received.map((x) => verified(secret, x));
    const byType = new Map<string, typeof events>();
    for (const e of events) byType.set(e.event, [...(byType.get(e.event) ?? []), e]);
    assert.deepEqual([...byType.keys()].sort(), [
      'document_created', 'document_deleted', 'document_published', 'document_updated', 'form_created', 'form_deleted', 'form_published', 'form_updated', 'parse_job_completed', 'parse_job_failed', 'webhook_test',
    ]);
    assert.equal(byType.get('form_updated')!.length, 2);
    assert.equal(byType.get('document_updated')!.length, 2);
    const workspaceId = byType.get('form_created')![0]!.workspaceId;
    for (const e of events) {
      assert.match(e.id, /^evt_[0-9a-f]{32}$/);
      assert.equal(e.workspaceId, workspaceId);
      assert.match(e.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    for (const x of r.received) {
      assert.equal(x.headers['webhook-id'], JSON.parse(x.body).id);
      assert.ok(Math.abs(Number(x.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
      assert.equal(x.headers['content-type'], 'application/json');
      // The service's own helper agrees with the independent one.
      assert.deepEqual(verifyWebhook(secret, x.body, x.headers as Record<string, string>), JSON.parse(x.body));
    }
    const one = (type: string) => byType.get(type)![0]!.data;
    assert.deepEqual(Object.keys(one('form_created')), ['form']);
    assert.equal(one('form_created').form.title, 'Events');
    assert.equal(byType.get('form_updated')![0]!.data.form.title, 'Events, renamed');
    assert.equal(byType.get('form_updated')![1]!.data.form.questionCount, 1);
    assert.deepEqual([one('form_published').form.status, one('form_published').revision.version], ['published', 1]);
    assert.deepEqual(one('form_deleted'), { id: form });
    assert.equal(one('document_created').document.id, doc);
    assert.deepEqual([one('document_published').document.currentVersion, one('document_published').revision.documentId], [1, doc]);
    assert.deepEqual([one('parse_job_completed').parseJob.id, one('parse_job_completed').parseJob.status, one('parse_job_completed').document.id], [job, 'completed', doc]);
    assert.equal(one('parse_job_completed').parseJob.result.fields.length, 1);
    assert.deepEqual([one('parse_job_failed').parseJob.id, one('parse_job_failed').parseJob.status, one('parse_job_failed').parseJob.error.code], [failedJob, 'failed', 'unreadable']);
    assert.deepEqual(one('document_deleted'), { id: doc });
    assert.equal(one('webhook_test').webhook.id, id);
    const log = await settled(id, 13);
    assert.ok(log.every((d) => d.status === 'succeeded' && d.attempts.length === 1 && d.attempts[0]!.responseStatus === 200 && d.attempts[0]!.responseBody === 'ok'));
  });

  it('only the events an endpoint subscribed to, only to enabled endpoints, only of its workspace', async () => {
    const r = await receiver();
    const published = await endpoint(r.url, ['form_published']);
    const off = await receiver();
    const disabled = await endpoint(off.url, ['*']);
    await ok(send('PUT', `/webhooks/${disabled.id}`, { enabled: false }));
    const elsewhere = await receiver();
    const otherHeaders = bearer(await ctx.key(ALL, 'another-workspace'));
    await endpoint(elsewhere.url, ['*'], otherHeaders);
    const form = (await ok(send('POST', '/forms', { title: 'Filtered' }), 201)).id;
    await ok(send('POST', `/forms/${form}/publish`), 201);
    await r.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(r.received.map((x) => JSON.parse(x.body).event), ['form_published']);
    assert.equal(off.received.length, 0);
    assert.equal(elsewhere.received.length, 0);
    assert.equal((await deliveries(published.id)).length, 1);
  });

  it('retries after a 500, a timeout and a dropped connection, then succeeds, with the same webhook-id', async () => {
    const r = await receiver();
    r.next({ status: 500, body: 'x'.repeat(5000) }, { hang: true }, { drop: true });
    const { id } = await endpoint(r.url, ['form_created']);
    await ok(send('POST', '/forms', { title: 'Retried' }), 201);
    const [delivery] = await settled(id, 1);
    assert.equal(delivery!.status, 'succeeded');
    assert.deepEqual(delivery!.attempts.map((a) => [a.responseStatus, a.error]), [
      [500, 'HTTP 500'],
      [null, `timed out after ${TIMEOUT_MS} ms`],
      [null, 'connection closed by the receiver before it answered'],
      [200, null],
    ]);
    assert.equal(delivery!.attempts[0]!.responseBody!.length, 1024);
    assert.equal(new Set(r.received.map((x) => x.headers['webhook-id'])).size, 1);
    assert.equal(new Set(r.received.map((x) => x.body)).size, 1);
    assert.equal(r.received[0]!.headers['webhook-id'], delivery!.eventId);
    // The success ended the endpoint's failing streak (begun by the 500), in the same commit.
    assert.equal((await ctx.store.db.selectFrom('webhook_endpoints').select('failing_since').where('id', '=', id).executeTakeFirstOrThrow()).failing_since, null);
  });

  it('retries after connection refused until the receiver is up', async () => {
    const port = await freePort();
    const { id } = await endpoint(`http://127.0.0.1:${port}/hook`, ['form_created']);
    await ok(send('POST', '/forms', { title: 'Refused first' }), 201);
    await waitFor(async () => (await deliveries(id))[0]!.attempts.length > 0, 10_000, 2);
    const r = await receiver(port);
    const [delivery] = await settled(id, 1);
    assert.equal(delivery!.status, 'succeeded');
    assert.equal(delivery!.attempts[0]!.error, 'connection refused');
    assert.deepEqual(delivery!.attempts.at(-1)!.responseStatus, 200);
    assert.equal(r.received.length, 1);
  });

  it('a receiver down for the whole schedule: failed after 8 attempts; failing for 5 days disables the endpoint; redelivery works again', async () => {
    const r = await receiver();
    r.fallback = { status: 503 };
    const { id } = await endpoint(r.url, ['form_created']);
    await ok(send('POST', '/forms', { title: 'Never delivered' }), 201);
    const [first] = await settled(id, 1);
    assert.equal(first!.status, 'failed');
    assert.equal(first!.attempts.length, 8);
    assert.equal(first!.nextAttemptAt, null);
    assert.ok(first!.attempts.every((a) => a.responseStatus === 503));
    // Events keep coming and failing for (scaled) 5 days: then the endpoint is disabled, and says why.
    let endpointView: { enabled: boolean; disabledReason: string | null } = { enabled: true, disabledReason: null };
    for (let i = 0; i < 100 && endpointView.enabled; i++) {
      await ok(send('POST', '/forms', { title: `Again ${i}` }), 201);
      await new Promise((resolve) => setTimeout(resolve, 200));
      endpointView = await ok(send('GET', `/webhooks/${id}`));
    }
    assert.equal(endpointView.enabled, false);
    assert.match(endpointView.disabledReason!, /^Disabled automatically at .*: every delivery attempt since .* failed \(5 days without a success\)\. Last error: HTTP 503\./);
    // A disabled endpoint is sent nothing new.
    const before = r.received.length;
    await ok(send('POST', '/forms', { title: 'Not sent' }), 201);
    await settled(id, 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const pendingOrNew = (await deliveries(id)).filter((d) => d.status === 'pending');
    assert.deepEqual(pendingOrNew, []);
    assert.ok(r.received.length - before <= 8); // only retries of deliveries queued before it was disabled
    // The receiver is fixed: a redelivery (sent even while disabled) succeeds with the same id.
    r.fallback = { status: 204 };
    const count = r.received.length;
    const again = await ok(send('POST', `/webhooks/${id}/deliveries/${first!.id}/redeliver`), 202);
    assert.equal(again.status, 'pending');
    await r.waitFor(count + 1);
    const redelivered = (await settled(id, 1)).find((d) => d.id === first!.id)!;
    assert.equal(redelivered.status, 'succeeded');
    assert.equal(redelivered.attempts.length, 9);
    assert.equal(r.received.at(-1)!.headers['webhook-id'], first!.eventId);
  });

  it('after a rotation both secrets sign for 24 hours; then only the new one', async () => {
    const r = await receiver();
    const { id, secret: old } = await endpoint(r.url, ['form_created']);
    const { secret: fresh } = await ok(send('POST', `/webhooks/${id}/rotate-secret`));
    await ok(send('POST', '/forms', { title: 'Rotated' }), 201);
    await r.waitFor(1);
    const [x] = r.received;
    assert.equal(String(x!.headers['webhook-signature']).split(' ').length, 2);
    verified(fresh, x!);
    verified(old, x!);
    // 24 hours later (moved back in the database), the old secret no longer signs.
    await ctx.store.db.updateTable('webhook_endpoints').set({ previous_secret_expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', id).execute();
    await ok(send('POST', '/forms', { title: 'Rotated later' }), 201);
    await r.waitFor(2);
    const y = r.received[1]!;
    assert.equal(String(y.headers['webhook-signature']).split(' ').length, 1);
    verified(fresh, y);
    assert.throws(() => verified(old, y), /No matching signature/);
  });

  it('does not follow redirects', async () => {
    const target = await receiver();
    const r = await receiver();
    r.fallback = { status: 302, headers: { location: target.url } };
    const { id } = await endpoint(r.url, ['form_created']);
    await ok(send('POST', '/forms', { title: 'Redirected' }), 201);
    await waitFor(async () => (await deliveries(id))[0]!.attempts.length > 0, 10_000, 10);
    const [delivery] = await deliveries(id);
    assert.equal(delivery!.attempts[0]!.responseStatus, 302);
    assert.equal(delivery!.attempts[0]!.error, `redirect not followed (Location: ${target.url})`);
    await settled(id, 1);
    assert.equal(target.received.length, 0);
  });

  it('no event for a change that is rolled back', async () => {
    const r = await receiver();
    const h = bearer(await ctx.key(ALL, 'rollback'));
    const { id } = await endpoint(r.url, ['form_updated', 'form_published', 'form_created'], h);
    const form = (await ok(send('POST', '/forms', { title: 'Small budget', description: 'd'.repeat(1000) }, h), 201)).id;
    for (let i = 0; i < 5; i++) await ok(send('POST', `/forms/${form}/questions`, { questionText: `Q${i}`, type: 'short_text', description: 'q'.repeat(1000) }, h), 201);
    await settled(id, 6, h);
    // The title changes, then publishing goes over the workspace's budget: the whole change is rolled back.
    const res = await send('PUT', `/forms/${form}`, { title: 'Renamed', status: 'published' }, h);
    assert.equal(res.statusCode, 413, res.body);
    assert.equal((await ok(send('GET', `/forms/${form}`, undefined, h))).title, 'Small budget');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await deliveries(id, h)).length, 6);
    assert.equal(r.received.length, 6);
    // And in a transaction that fails after recording an event, nothing stays.
    const workspace = (await ctx.store.db.selectFrom('webhook_endpoints').select('workspace_id').where('id', '=', id).executeTakeFirstOrThrow()).workspace_id;
    const events = async () => Number((await ctx.store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const count = await events();
    await assert.rejects(
      ctx.store.db.transaction().execute(async (trx) => {
        await recordEvent(trx, workspace, 'form_updated', { form: { id: form } });
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await events(), count);
  });

  it('a slow receiver holds only its own slots: other endpoints and workspaces are delivered at once', async () => {
    const slow = await receiver();
    slow.fallback = { hang: true };
    const fast = await receiver();
    const other = bearer(await ctx.key(ALL, 'isolated'));
    const h = bearer(await ctx.key(ALL, 'slow-one'));
    await endpoint(slow.url, ['form_created'], h);
    const sameWorkspace = await receiver();
    await endpoint(sameWorkspace.url, ['form_deleted'], h);
    await endpoint(fast.url, ['form_created'], other);
    const forms: string[] = [];
    for (let i = 0; i < 12; i++) forms.push((await ok(send('POST', '/forms', { title: `Slow ${i}` }, h), 201)).id);
    await slow.waitFor(4);
    const started = Date.now();
    await ok(send('POST', '/forms', { title: 'Fast' }, other), 201);
    await ok(send('DELETE', `/forms/${forms[0]}`, undefined, h));
    await fast.waitFor(1, 5000);
    await sameWorkspace.waitFor(1, 5000);
    const took = Date.now() - started;
    assert.ok(took < TIMEOUT_MS, `the other deliveries took ${took} ms`);
    // At most 4 attempts at once to one endpoint.
    assert.equal(slow.received.length, 4);
  });

  it('checks addresses again at every attempt, after resolving: DNS rebinding, 10.x, metadata and localhost are refused unless allowed', async () => {
    const r = await receiver();
    let answer = '93.184.216.34';
    const lookup: LookupFn = async (hostname, options) => (hostname === 'rebind.example.test' ? [{ address: answer, family: 4 }] : dns.promises.lookup(hostname, options));
    const strict = await createTestContext({ database: ctx.database, webhooks: { policy: { allowHttp: true, allowPrivate: false }, lookup } });
    try {
      const h = bearer(await ctx.key(ALL, 'strict'));
      const sendStrict = (method: 'POST' | 'GET', url: string, payload?: unknown) => strict.app.inject({ method, url: `/api/v1${url}`, headers: h, ...(payload === undefined ? {} : { payload: payload as object }) });
      // Saved while the name resolves to a public address; it resolves to 127.0.0.1 at delivery.
      const saved = await sendStrict('POST', '/webhooks', { url: `http://rebind.example.test:${r.port}/hook`, events: ['form_created'] });
      assert.equal(saved.statusCode, 201, saved.body);
      answer = '127.0.0.1';
      const workspace = (await ctx.store.db.selectFrom('webhook_endpoints').select('workspace_id').where('id', '=', saved.json().data.id).executeTakeFirstOrThrow()).workspace_id;
      // Endpoints the API would refuse today, as if saved under another policy.
      const now = new Date().toISOString();
      const row = (url: string) => ({ id: crypto.randomUUID(), workspace_id: workspace, url, events: '["form_created"]', description: null, enabled: 1, disabled_reason: null, secret: 'whsec_' + Buffer.alloc(32).toString('base64'), previous_secret: null, previous_secret_expires_at: null, failing_since: null, created_at: now, updated_at: now });
      const unsafe = [row('http://10.255.255.1/hook'), row('http://169.254.169.254/latest/meta-data'), row(`http://localhost:${r.port}/hook`), row(`http://[::ffff:127.0.0.1]:${r.port}/hook`)];
      await ctx.store.db.insertInto('webhook_endpoints').values(unsafe).execute();
      const dispatcher = new WebhookDispatcher({ store: ctx.store, log: strict.app.log, policy: { allowHttp: true, allowPrivate: false }, lookup, pollMs: 20, retryScale: SCALE, timeoutMs: TIMEOUT_MS });
      // The main dispatcher (private addresses allowed) is stopped meanwhile: only the strict one delivers.
      await ctx.dispatcher!.stop(1000);
      dispatcher.start();
      try {
        assert.equal((await sendStrict('POST', '/forms', { title: 'Rebound' })).statusCode, 201);
        const all = [saved.json().data.id, ...unsafe.map((u) => u.id)];
        await waitFor(async () => {
          const rows = await ctx.store.db.selectFrom('webhook_deliveries').select('status').where('endpoint_id', 'in', all).execute();
          return rows.length === all.length && rows.every((x) => x.status === 'failed');
        }, 20_000, 25);
        const attempts = await ctx.store.db
          .selectFrom('webhook_attempts as a')
          .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
          .select(['d.endpoint_id', 'a.error', 'a.response_status'])
          .where('d.endpoint_id', 'in', all)
          .execute();
        const errorOf = (endpointId: string) => attempts.find((a) => a.endpoint_id === endpointId)!.error!;
        assert.match(errorOf(all[0]!), /^refused: the URL host rebind\.example\.test does not resolve to a public address \(/);
        assert.match(errorOf(all[1]!), /^refused: the URL must not point to a private address: 10\.255\.255\.1/);
        assert.match(errorOf(all[2]!), /^refused: the URL must not point to a private address: 169\.254\.169\.254/);
        assert.match(errorOf(all[3]!), /^refused: the URL host localhost does not resolve to a public address/);
        assert.match(errorOf(all[4]!), /^refused: the URL must not point to a private address: ::ffff:7f00:1 carries the IPv4 address 127\.0\.0\.1/);
        assert.ok(attempts.every((a) => a.response_status === null));
        assert.equal(r.received.length, 0);
      } finally {
        await dispatcher.stop(1000);
      }
      // Allowed (WEBHOOK_ALLOW_PRIVATE=true): the same endpoint is delivered to.
      const allowed = new WebhookDispatcher({ store: ctx.store, log: strict.app.log, policy: { allowHttp: true, allowPrivate: true }, lookup, pollMs: 20, retryScale: SCALE, timeoutMs: TIMEOUT_MS });
      allowed.start();
      try {
        const failed = await ctx.store.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', saved.json().data.id).executeTakeFirstOrThrow();
        const again = await sendStrict('POST', `/webhooks/${saved.json().data.id}/deliveries/${failed.id}/redeliver`);
        assert.equal(again.statusCode, 202, again.body);
        await r.waitFor(1, 10_000);
      } finally {
        await allowed.stop(1000);
      }
    } finally {
      await strict.close();
    }
  });
});
