import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { bodyStoppingHashThread, largePdf, makePdf, multipart } from '../helpers/files.js';

const FORMS = '/api/v1/forms';
const DOCS = '/api/v1/documents';

describe('Idempotency-Key', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let base: string;

  before(async () => {
    ctx = await createTestContext();
    headers = bearer(await ctx.key(['forms:read', 'forms:write', 'documents:read', 'documents:write'], 'idem'));
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  });
  after(() => ctx.close());

  const countForms = async (h = headers) => (await ctx.app.inject({ method: 'GET', url: `${FORMS}?limit=100`, headers: h })).json().meta.total as number;

  it('50 concurrent retries over HTTP create one form; every retry is refused as in progress or replayed byte for byte', async () => {
    const before = await countForms();
    const key = `concurrent-${Date.now()}`;
    const send = () =>
      fetch(`${base}${FORMS}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ title: 'Once' }),
      }).then(async (res) => ({ status: res.status, replayed: res.headers.get('idempotent-replayed'), location: res.headers.get('location'), body: await res.text() }));
    const answers = await Promise.all(Array.from({ length: 50 }, send));
    assert.equal(await countForms(), before + 1, 'exactly one form was created');
    const created = answers.filter((a) => a.status === 201);
    const first = created.find((a) => a.replayed === null);
    assert.ok(first, 'one request ran');
    assert.equal(created.filter((a) => a.replayed === null).length, 1);
    for (const a of answers) {
      if (a.status === 201) {
        assert.equal(a.body, first.body);
        assert.equal(a.location, first.location);
      } else {
        assert.equal(a.status, 409);
        assert.equal(JSON.parse(a.body).code, 'idempotency_key_in_progress');
      }
    }
    // Once the first has answered, every retry is its replay, identical byte for byte.
    const again = await send();
    assert.equal(again.status, 201);
    assert.equal(again.replayed, 'true');
    assert.equal(again.body, first.body);
    assert.equal(again.location, first.location);
    assert.equal(await countForms(), before + 1);
  });

  it('the same key with another body or path is 422 idempotency_key_reused and changes nothing', async () => {
    const key = 'reuse-1';
    const h = { ...headers, 'idempotency-key': key };
    const first = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'A' } });
    assert.equal(first.statusCode, 201);
    const count = await countForms();
    // The same body written otherwise (spacing) is the same request.
    const spaced = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...h, 'content-type': 'application/json' }, payload: '{ "title" : "A" }' });
    assert.equal(spaced.statusCode, 201);
    assert.equal(spaced.body, first.body);
    const other = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'B' } });
    assert.equal(other.statusCode, 422);
    assert.equal(other.json().code, 'idempotency_key_reused');
    const id = first.json().data.id as string;
    const path = await ctx.app.inject({ method: 'POST', url: `${FORMS}/${id}/sections`, headers: h, payload: { title: 'A' } });
    assert.equal(path.statusCode, 422);
    assert.equal(path.json().code, 'idempotency_key_reused');
    assert.equal(await countForms(), count);
  });

  it('keys belong to a workspace: another workspace may use the same key', async () => {
    const other = bearer(await ctx.key(['forms:read', 'forms:write'], 'idem-other'));
    const a = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...headers, 'idempotency-key': 'shared' }, payload: { title: 'Mine' } });
    const b = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...other, 'idempotency-key': 'shared' }, payload: { title: 'Theirs' } });
    assert.equal(a.statusCode, 201);
    assert.equal(b.statusCode, 201);
    assert.equal(b.headers['idempotent-replayed'], undefined);
    assert.notEqual(a.json().data.id, b.json().data.id);
  });

  it('an error answer is kept and replayed; a malformed key is 400', async () => {
    const missing = `${FORMS}/0190a0a0-0000-7000-8000-000000000000/sections`;
    const h = { ...headers, 'idempotency-key': 'err-1' };
    const first = await ctx.app.inject({ method: 'POST', url: missing, headers: h, payload: { title: 'S' } });
    assert.equal(first.statusCode, 404);
    const again = await ctx.app.inject({ method: 'POST', url: missing, headers: h, payload: { title: 'S' } });
    assert.equal(again.statusCode, 404);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body, first.body);
    for (const bad of ['', 'x'.repeat(256), 'tab\there', 'é']) {
      const res = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...headers, 'idempotency-key': bad }, payload: { title: 'T' } });
      assert.equal(res.statusCode, 400, JSON.stringify(bad));
      assert.equal(res.json().code, 'validation_failed');
    }
  });

  it('a body refused by its schema does not take the key', async () => {
    const h = { ...headers, 'idempotency-key': 'schema-1' };
    const bad = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'T', nope: 1 } });
    assert.equal(bad.statusCode, 400);
    const good = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'T' } });
    assert.equal(good.statusCode, 201);
    assert.equal(good.headers['idempotent-replayed'], undefined);
  });

  it('an expired key (24 hours) runs the request again', async () => {
    const h = { ...headers, 'idempotency-key': 'old-1' };
    const first = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'Old' } });
    assert.equal(first.statusCode, 201);
    await ctx.store.db.updateTable('idempotency_keys').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('key', '=', 'old-1').execute();
    const again = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'Old' } });
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.notEqual(again.json().data.id, first.json().data.id);
  });

  it('a claim left running by a server that died is taken over by the same request once its lease has passed, never by another body', async () => {
    const h = { ...headers, 'idempotency-key': 'stale-1' };
    // A first answer, then its row put back as a server that died before answering leaves it.
    const first = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'S', description: 'D' } });
    assert.equal(first.statusCode, 201);
    const now = Date.now();
    const stuck = (lockedUntil: number) =>
      ctx.store.db
        .updateTable('idempotency_keys')
        .set({ state: 'running', locked_until: new Date(lockedUntil).toISOString(), response_status: null, response_headers: null, response_body: null })
        .where('key', '=', 'stale-1')
        .execute();
    await stuck(now + 60_000);
    const busy = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'S', description: 'D' } });
    assert.equal(busy.statusCode, 409);
    assert.equal(busy.json().code, 'idempotency_key_in_progress');
    const otherWhileRunning = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'Other' } });
    assert.equal(otherWhileRunning.statusCode, 422);
    assert.equal(otherWhileRunning.json().code, 'idempotency_key_reused');
    await stuck(now - 1);
    const count = await countForms();
    // After the lease, another body still does not take the key over, and changes nothing.
    const otherAfterLease = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'Other' } });
    assert.equal(otherAfterLease.statusCode, 422);
    assert.equal(otherAfterLease.json().code, 'idempotency_key_reused');
    assert.equal(await countForms(), count);
    const row = await ctx.store.db.selectFrom('idempotency_keys').selectAll().where('key', '=', 'stale-1').executeTakeFirstOrThrow();
    assert.equal(row.state, 'running');
    // The same body (its keys in another order) takes it over, runs, and is replayed from then on.
    const taken = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...h, 'content-type': 'application/json' }, payload: '{"description":"D","title":"S"}' });
    assert.equal(taken.statusCode, 201);
    assert.equal(taken.headers['idempotent-replayed'], undefined);
    assert.equal(await countForms(), count + 1);
    const replay = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'S', description: 'D' } });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body, taken.body);
  });

  it('a body with its keys in another order, nested objects too, is the same request', async () => {
    const h = { ...headers, 'idempotency-key': 'order-1', 'content-type': 'application/json' };
    const first = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: '{"title":"O","settings":{"theme":{"primaryColor":"#112233"}},"description":"d"}' });
    assert.equal(first.statusCode, 201, first.body);
    const count = await countForms();
    const again = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: '{"description":"d","settings":{"theme":{"primaryColor":"#112233"}},"title":"O"}' });
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body, first.body);
    const changed = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: '{"description":"d","settings":{"theme":{"primaryColor":"#112234"}},"title":"O"}' });
    assert.equal(changed.statusCode, 422);
    assert.equal(await countForms(), count);
  });

  it('a key claimed by an earlier release (keys in the order sent) still replays and is still taken over', async () => {
    const h = { ...headers, 'idempotency-key': 'legacy-1', 'content-type': 'application/json' };
    const body = '{"title":"L","description":"x"}';
    const first = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: body });
    assert.equal(first.statusCode, 201);
    const { createHash } = await import('node:crypto');
    const legacy = createHash('sha256').update(`json\n\n${JSON.stringify({ title: 'L', description: 'x' })}`).digest('hex');
    const row = await ctx.store.db.selectFrom('idempotency_keys').select('fingerprint').where('key', '=', 'legacy-1').executeTakeFirstOrThrow();
    assert.notEqual(row.fingerprint, legacy, 'the keys are not in order, so the two fingerprints differ');
    await ctx.store.db.updateTable('idempotency_keys').set({ fingerprint: legacy }).where('key', '=', 'legacy-1').execute();
    const replay = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: body });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body, first.body);
    await ctx.store.db
      .updateTable('idempotency_keys')
      .set({ state: 'running', locked_until: new Date(Date.now() - 1).toISOString(), response_status: null, response_headers: null, response_body: null })
      .where('key', '=', 'legacy-1')
      .execute();
    const taken = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: body });
    assert.equal(taken.statusCode, 201);
    assert.equal(taken.headers['idempotent-replayed'], undefined);
  });

  it('uploads: a retry (another multipart boundary) replays; another file or title is 422; one document is stored', async () => {
    const pdf = await makePdf([{ width: 612, height: 792 }]);
    const other = await makePdf([{ width: 300, height: 300 }]);
    const send = (data: Buffer, parts: Array<{ name: string; data: string }> = []) => {
      const body = multipart([{ name: 'file', data, filename: 'contract.pdf' }, ...parts]);
      return ctx.app.inject({ method: 'POST', url: DOCS, headers: { ...headers, ...body.headers, 'idempotency-key': 'upload-1' }, payload: body.payload });
    };
    const first = await send(pdf);
    assert.equal(first.statusCode, 201);
    const again = await send(pdf);
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body, first.body);
    assert.equal(again.headers.location, first.headers.location);
    const sameTitle = await send(pdf, [{ name: 'title', data: 'contract.pdf' }]);
    assert.equal(sameTitle.statusCode, 201);
    const otherFile = await send(other);
    assert.equal(otherFile.statusCode, 422);
    assert.equal(otherFile.json().code, 'idempotency_key_reused');
    const otherTitle = await send(pdf, [{ name: 'title', data: 'Another' }]);
    assert.equal(otherTitle.statusCode, 422);
    const list = await ctx.app.inject({ method: 'GET', url: DOCS, headers });
    assert.equal(list.json().meta.total, 1);
  });

  it('a retried upload whose hashing thread dies answers 500 and closes the connection, not idempotency_key_reused; the next retry replays', async () => {
    const pdf = await largePdf(2 * 1024 * 1024);
    const send = (payload: Buffer | Readable, body: ReturnType<typeof multipart>) =>
      ctx.app.inject({ method: 'POST', url: DOCS, headers: { ...headers, ...body.headers, 'idempotency-key': 'upload-thread' }, payload });
    const body = multipart([{ name: 'file', data: pdf, filename: 'big.pdf' }]);
    const first = await send(body.payload, body);
    assert.equal(first.statusCode, 201, first.body);
    // The retry's first MiB, then (once the thread hashes it for the fingerprint) the thread ends.
    const retry = bodyStoppingHashThread(body.payload);
    const failed = await send(retry.stream, body);
    assert.ok(retry.stopped(), 'the thread was stopped while it hashed the retry');
    assert.equal(failed.statusCode, 500, failed.body);
    assert.equal(failed.json().code, 'internal_error');
    assert.equal(failed.headers.connection, 'close');
    const again = await send(body.payload, body);
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body, first.body);
  });

  it('a refused upload lets its key go', async () => {
    const body = multipart([{ name: 'file', data: 'not a pdf', filename: 'x.txt' }]);
    const h = { ...headers, ...body.headers, 'idempotency-key': 'upload-bad' };
    const bad = await ctx.app.inject({ method: 'POST', url: DOCS, headers: h, payload: body.payload });
    assert.equal(bad.statusCode, 415);
    const pdf = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'x.pdf' }]);
    const good = await ctx.app.inject({ method: 'POST', url: DOCS, headers: { ...headers, ...pdf.headers, 'idempotency-key': 'upload-bad' }, payload: pdf.payload });
    assert.equal(good.statusCode, 201);
  });
});

describe('Idempotency-Key: a claim held by a running request is renewed', () => {
  const LEASE_MS = 300;
  let ctx: TestContext;
  let headers: Record<string, string>;
  let port: number;

  before(async () => {
    ctx = await createTestContext({ idempotencyLeaseMs: LEASE_MS });
    headers = bearer(await ctx.key(['documents:read', 'documents:write', 'forms:read', 'forms:write'], 'lease'));
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  after(() => ctx.close());

  it('an upload that runs for many leases keeps its key: a retry meanwhile is 409, never a second run; then it replays', async () => {
    const pdf = await makePdf([{ width: 612, height: 792 }]);
    const body = multipart([{ name: 'file', data: pdf, filename: 'slow.pdf' }]);
    const payload = Buffer.from(body.payload as Buffer);
    const h = { ...headers, ...body.headers, 'idempotency-key': 'slow-upload-1' };
    // The first request: half of its body now, the rest after five leases.
    const first = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: DOCS, headers: { ...h, 'content-length': String(payload.length) } }, (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk)).on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      });
      request.on('error', reject);
      request.write(payload.subarray(0, payload.length >> 1));
      setTimeout(() => request.end(payload.subarray(payload.length >> 1)), 5 * LEASE_MS);
    });
    await new Promise((resolve) => setTimeout(resolve, 3 * LEASE_MS));
    const row = await ctx.store.db.selectFrom('idempotency_keys').selectAll().where('key', '=', 'slow-upload-1').executeTakeFirstOrThrow();
    assert.equal(row.state, 'running');
    assert.ok(Date.parse(row.locked_until) > Date.now(), 'the lease was renewed while the request ran');
    const retry = await ctx.app.inject({ method: 'POST', url: DOCS, headers: h, payload: body.payload });
    assert.equal(retry.statusCode, 409, retry.body);
    assert.equal(retry.json().code, 'idempotency_key_in_progress');
    const answered = await first;
    assert.equal(answered.status, 201, answered.body);
    const replay = await ctx.app.inject({ method: 'POST', url: DOCS, headers: h, payload: body.payload });
    assert.equal(replay.statusCode, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body, answered.body);
    const list = await ctx.app.inject({ method: 'GET', url: DOCS, headers });
    assert.equal(list.json().meta.total, 1);
  });

  it('a claim whose server died is free once a lease has passed, not after the request time limit', async () => {
    const h = { ...headers, 'content-type': 'application/json', 'idempotency-key': 'died-1' };
    // A first request; its row keeps the lease its claim was given (a quick request is not renewed).
    const first = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'Died' } });
    assert.equal(first.statusCode, 201, first.body);
    const row = await ctx.store.db.selectFrom('idempotency_keys').selectAll().where('key', '=', 'died-1').executeTakeFirstOrThrow();
    const lease = Date.parse(row.locked_until) - Date.parse(row.created_at);
    assert.ok(lease >= LEASE_MS && lease < LEASE_MS + 1000, `the claim was given a lease of ${lease} ms`);
    // Put back as a server that died while running it leaves it: running, no answer, that lease.
    await ctx.store.db
      .updateTable('idempotency_keys')
      .set({ state: 'running', response_status: null, response_headers: null, response_body: null })
      .where('key', '=', 'died-1')
      .execute();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(row.locked_until) - Date.now()) + 50));
    const again = await ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: { title: 'Died' } });
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.notEqual(again.json().data.id, first.json().data.id);
  });
});
