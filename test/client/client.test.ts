import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createFormsignClient, type FormsignClient } from '../../clients/typescript/src/index.js';
import { createTestContext, type TestContext } from '../helpers/context.js';

const SAMPLE = path.resolve(import.meta.dirname, '../../docs/examples/contract.pdf');
const ALL = ['forms:read', 'forms:write', 'forms:delete', 'documents:read', 'documents:write', 'documents:delete', 'documents:parse_ai', 'revisions:read'];

async function listen(ctx: TestContext): Promise<string> {
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
}

/**
 * The generated client (clients/typescript) against a real server listening on a port, on the
 * test database (SQLite, or PostgreSQL with FORMSIGN_TEST_DB=postgres), with a parse worker.
 */
describe('TypeScript client against a running server', () => {
  let ctx: TestContext;
  let base: string;
  let client: FormsignClient;

  before(async () => {
    ctx = await createTestContext({ worker: true });
    base = await listen(ctx);
    client = createFormsignClient({ baseUrl: base, apiKey: await ctx.key(ALL, 'client') });
  });
  after(() => ctx.close());

  it('forms: create, list (integer page and limit), get, update with If-Match, delete', async () => {
    const created = await client.POST('/api/v1/forms', { body: { title: 'Client form', description: 'Made by the typed client' } });
    assert.equal(created.response.status, 201);
    const form = created.data!.data;
    assert.equal(created.response.headers.get('location'), `/api/v1/forms/${form.id}`);
    for (let i = 0; i < 2; i++) await client.POST('/api/v1/forms', { body: { title: `Filler ${i}` } });
    const page2 = await client.GET('/api/v1/forms', { params: { query: { page: 2, limit: 2 } } });
    assert.deepEqual(page2.data!.meta, { total: 3, page: 2, limit: 2 });
    assert.equal(page2.data!.data[0]!.id, form.id);

    const got = await client.GET('/api/v1/forms/{id}', { params: { path: { id: form.id } } });
    assert.equal(got.data!.data.title, 'Client form');
    assert.deepEqual(got.data!.data.questions, []);
    const etag = got.response.headers.get('etag')!;
    const updated = await client.PUT('/api/v1/forms/{id}', { params: { path: { id: form.id }, header: { 'If-Match': etag } }, body: { title: 'Renamed' } });
    assert.equal(updated.data!.data.title, 'Renamed');
    const stale = await client.PUT('/api/v1/forms/{id}', { params: { path: { id: form.id }, header: { 'If-Match': etag } }, body: { title: 'Lost' } });
    assert.equal(stale.response.status, 412);
    assert.equal(stale.error!.code, 'precondition_failed');

    const missing = await client.GET('/api/v1/forms/{id}', { params: { path: { id: '0190a0a0-0000-7000-8000-000000000000' } } });
    assert.equal(missing.response.status, 404);
    assert.equal(missing.error!.code, 'not_found');
    const deleted = await client.DELETE('/api/v1/forms/{id}', { params: { path: { id: form.id }, query: { permanent: true } } });
    assert.deepEqual(deleted.data!.data, { id: form.id, deleted: true });
  });

  it('questions, sections, rules, evaluate, publish and revisions (integer version)', async () => {
    const form = (await client.POST('/api/v1/forms', { body: { title: 'Logic' } })).data!.data;
    const id = form.id;
    const section = (await client.POST('/api/v1/forms/{id}/sections', { params: { path: { id } }, body: { title: 'About you' } })).data!.data;
    const q1 = (await client.POST('/api/v1/forms/{id}/questions', { params: { path: { id } }, body: { questionText: 'Company?', type: 'yes_no', isRequired: true, sectionId: section.id } })).data!.data;
    const q2 = (await client.POST('/api/v1/forms/{id}/questions', { params: { path: { id } }, body: { questionText: 'Company name', type: 'short_text' } })).data!.data;
    const rule = await client.POST('/api/v1/forms/{id}/rules', {
      params: { path: { id } },
      body: { sourceQuestionId: q1.id, operator: 'equals', value: true, action: 'show', targetQuestionId: q2.id },
    });
    assert.equal(rule.response.status, 201);
    const evaluated = await client.POST('/api/v1/forms/{id}/evaluate', { params: { path: { id } }, body: { answers: { [q1.id]: false } } });
    assert.deepEqual(evaluated.data!.data.hiddenQuestionIds, [q2.id]);
    const questions = await client.GET('/api/v1/forms/{id}/questions', { params: { path: { id }, query: { limit: 10 } } });
    assert.deepEqual(questions.data!.data.map((q) => q.id), [q1.id, q2.id]);

    const published = await client.POST('/api/v1/forms/{id}/publish', { params: { path: { id } } });
    assert.equal(published.response.status, 201);
    assert.equal(published.data!.data.revision.version, 1);
    const again = await client.POST('/api/v1/forms/{id}/publish', { params: { path: { id } } });
    assert.equal(again.error!.code, 'no_changes');
    const revision = await client.GET('/api/v1/forms/{id}/revisions/{version}', { params: { path: { id, version: 1 } } });
    assert.equal(revision.data!.data.version, 1);
    const list = await client.GET('/api/v1/forms/{id}/revisions', { params: { path: { id }, query: { page: 1 } } });
    assert.equal(list.data!.meta.total, 1);
  });

  it('documents: upload (multipart), fields, the file, a parse job polled to the end and applied, publish', async () => {
    const bytes = fs.readFileSync(SAMPLE);
    const upload = await client.uploadDocument(bytes, { filename: 'contract.pdf', title: 'Service Agreement' });
    assert.equal(upload.response.status, 201, JSON.stringify(upload.error));
    const doc = upload.data!;
    assert.equal(doc.pageCount, 3);
    assert.equal(doc.title, 'Service Agreement');
    const id = doc.id;

    const field = await client.POST('/api/v1/documents/{id}/fields', {
      params: { path: { id } },
      body: { type: 'digital_signature', pageNumber: 3, x: 0.1, y: 0.85, width: 0.35, height: 0.06, assigneeRole: 'signer_1' },
    });
    assert.equal(field.response.status, 201);
    const bulk = await client.POST('/api/v1/documents/{id}/fields/bulk', {
      params: { path: { id } },
      body: { fields: [{ type: 'date', pageNumber: 3, x: 0.5, y: 0.85, width: 0.2, height: 0.04 }] },
    });
    assert.equal(bulk.data!.data.length, 1);
    const file = await client.GET('/api/v1/documents/{id}/file', { params: { path: { id } }, parseAs: 'arrayBuffer' });
    assert.ok(Buffer.from(file.data as ArrayBuffer).equals(bytes));

    const started = await client.POST('/api/v1/documents/{id}/parse-jobs', { params: { path: { id } }, body: { applyMode: 'preview' } });
    assert.equal(started.response.status, 202);
    const job = await client.waitForParseJob(id, started.data!.data.id, { timeoutMs: 60_000 });
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    assert.deepEqual(job.result!.fields.map((f) => f.source).sort(), ['acroform', 'text_tag']);
    const applied = await client.POST('/api/v1/documents/{id}/parse-jobs/{jobId}/apply', { params: { path: { id, jobId: job.id } }, body: { minConfidence: 0.5 } });
    assert.equal(applied.response.status, 200);
    assert.equal(applied.data!.data.createdFieldIds.length, 2);
    const withFields = await client.GET('/api/v1/documents/{id}', { params: { path: { id } } });
    assert.equal(withFields.data!.data.fields.length, 4);

    const published = await client.POST('/api/v1/documents/{id}/publish', { params: { path: { id } } });
    assert.equal(published.data!.data.revision.version, 1);
    const revision = await client.GET('/api/v1/documents/{id}/revisions/{version}', { params: { path: { id, version: 1 } } });
    assert.equal(revision.data!.data.snapshot.fields.length, 4);
  });

  it('a POST whose answer is lost is sent again with the same Idempotency-Key: one form, the first answer', async () => {
    const key = await ctx.key(ALL, 'client-lost');
    let lost = 0;
    const keys: string[] = [];
    const lossy = createFormsignClient({
      baseUrl: base,
      apiKey: key,
      sleep: async () => {},
      fetch: async (request) => {
        keys.push(request.headers.get('idempotency-key') ?? '');
        const response = await fetch(request);
        if (request.method === 'POST' && lost++ === 0) throw new TypeError('fetch failed (the answer was lost)');
        return response;
      },
    });
    const created = await lossy.POST('/api/v1/forms', { body: { title: 'Exactly once' } });
    assert.equal(created.response.status, 201);
    assert.equal(created.response.headers.get('idempotent-replayed'), 'true');
    assert.equal(keys.length, 2);
    assert.equal(keys[0], keys[1]);
    assert.match(keys[0]!, /^[0-9a-f-]{36}$/);
    const list = await lossy.GET('/api/v1/forms', {});
    assert.equal(list.data!.meta.total, 1);
    // The upload too.
    const bytes = fs.readFileSync(SAMPLE);
    lost = 0;
    const upload = await lossy.uploadDocument(bytes, { filename: 'contract.pdf' });
    assert.equal(upload.response.status, 201);
    assert.equal(upload.response.headers.get('idempotent-replayed'), 'true');
    assert.equal((await lossy.GET('/api/v1/documents', {})).data!.meta.total, 1);
  });
});

describe('TypeScript client: aborted requests', () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
  });
  after(() => ctx.close());

  it('a request the caller aborted, or whose timeout ran out, throws at once: it is not retried as a network error', async () => {
    const base = await listen(ctx);
    let attempts = 0;
    const waits: number[] = [];
    const client = createFormsignClient({
      baseUrl: base,
      apiKey: await ctx.key(ALL, 'aborting'),
      sleep: async (ms) => void waits.push(ms),
      fetch: (request) => {
        attempts++;
        return fetch(request);
      },
    });
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(client.GET('/api/v1/forms', { signal: controller.signal }), { name: 'AbortError' });
    assert.equal(attempts, 1);
    attempts = 0;
    await assert.rejects(client.POST('/api/v1/forms', { body: { title: 'never' }, signal: AbortSignal.timeout(0) }), (error: Error) => ['AbortError', 'TimeoutError'].includes(error.name));
    assert.ok(attempts <= 1, `${attempts} attempts`);
    assert.deepEqual(waits, []);
    // Aborted while waiting to retry (a 429 asking for a minute): thrown then, not after the wait.
    const patient = createFormsignClient({
      baseUrl: base,
      apiKey: 'fsk_unused',
      sleep: () => new Promise<void>(() => {}),
      fetch: async () => new Response(JSON.stringify({ success: false, error: 'Too Many Requests', hint: 'later', code: 'rate_limited' }), { status: 429, headers: { 'retry-after': '60', 'content-type': 'application/json' } }),
    });
    const started = Date.now();
    await assert.rejects(patient.GET('/api/v1/forms', { signal: AbortSignal.timeout(100) }), { name: 'TimeoutError' });
    assert.ok(Date.now() - started < 5000);
    // A 304 has neither data nor an error envelope: the README says to test the status first.
    const created = await client.POST('/api/v1/forms', { body: { title: 'Tagged' } });
    const id = created.data!.data.id;
    const first = await client.GET('/api/v1/forms/{id}', { params: { path: { id } } });
    const again = await client.GET('/api/v1/forms/{id}', { params: { path: { id }, header: { 'If-None-Match': first.response.headers.get('etag')! } } });
    assert.equal(again.response.status, 304);
    assert.equal(again.data, undefined);
    assert.equal(again.error, '');
  });
});

describe('TypeScript client: 429 retried after Retry-After', () => {
  let ctx: TestContext;
  let clock = Date.parse('2026-03-01T10:00:10.000Z');

  before(async () => {
    ctx = await createTestContext({ rateLimit: 2, now: () => clock });
  });
  after(() => ctx.close());

  it('waits the seconds Retry-After says (the server\'s clock moves with the wait) and succeeds', async () => {
    const base = await listen(ctx);
    const waits: number[] = [];
    const client = createFormsignClient({
      baseUrl: base,
      apiKey: await ctx.key(['forms:read'], 'limited'),
      sleep: async (ms) => {
        waits.push(ms);
        clock += ms;
      },
    });
    for (let i = 0; i < 2; i++) assert.equal((await client.GET('/api/v1/forms', {})).response.status, 200);
    const third = await client.GET('/api/v1/forms', {});
    assert.equal(third.response.status, 200);
    assert.deepEqual(waits, [50_000]);
    const none = createFormsignClient({ baseUrl: base, apiKey: await ctx.key(['forms:read'], 'limited2'), retries: 0 });
    for (let i = 0; i < 2; i++) await none.GET('/api/v1/forms', {});
    const refused = await none.GET('/api/v1/forms', {});
    assert.equal(refused.response.status, 429);
    assert.equal(refused.error!.code, 'rate_limited');
  });
});
