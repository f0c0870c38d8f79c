import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fixedClock } from '../src/domain/clock.js';
import { bearer, createTestContext, type TestContext } from './helpers/context.js';
import { makePdf, multipart } from './helpers/files.js';

// One clock (`deps.clock`): every time the service takes comes from it, so a test can set it.
describe('the service clock (deps.clock)', () => {
  const clock = fixedClock('2031-02-03T04:05:06.789Z');
  let ctx: TestContext;
  let headers: Record<string, string>;

  before(async () => {
    ctx = await createTestContext({ clock, keyCacheTtlMs: 0 });
    headers = bearer(await ctx.key(['forms:read', 'forms:write', 'documents:read', 'documents:write', 'documents:delete', 'revisions:read']));
  });
  after(() => ctx.close());

  const call = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => {
    const res = await ctx.app.inject({ method, url: `/api/v1${url}`, headers, ...(payload ? { payload } : {}) });
    assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json().data;
  };

  it('stamps forms, their content and revisions with the set time; a stamp still moves when the clock stands still', async () => {
    clock.set('2031-02-03T04:05:06.789Z');
    const form = await call('POST', '/forms', { title: 'Clocked' });
    assert.equal(form.createdAt, '2031-02-03T04:05:06.789Z');
    assert.equal(form.updatedAt, '2031-02-03T04:05:06.789Z');
    const question = await call('POST', `/forms/${form.id}/questions`, { questionText: 'Name?', type: 'short_text' });
    assert.equal(question.createdAt, '2031-02-03T04:05:06.789Z');
    // The clock stands still: the draft's stamp moves 1 ms per change all the same.
    assert.equal((await call('GET', `/forms/${form.id}`)).updatedAt, '2031-02-03T04:05:06.790Z');
    clock.advance(60_000);
    const published = await call('POST', `/forms/${form.id}/publish`);
    assert.equal(published.revision.publishedAt, '2031-02-03T04:06:06.789Z');
    clock.advance(1000);
    assert.equal((await call('PUT', `/forms/${form.id}`, { title: 'Renamed' })).updatedAt, '2031-02-03T04:06:07.789Z');
  });

  it('stamps documents and their fields, and soft deletes, with the set time', async () => {
    clock.set('2032-01-01T00:00:00.000Z');
    const body = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'a.pdf' }]);
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 201, res.body);
    const document = res.json().data;
    assert.equal(document.createdAt, '2032-01-01T00:00:00.000Z');
    clock.advance(5);
    const [field] = await call('POST', `/documents/${document.id}/fields/bulk`, { fields: [{ type: 'digital_signature', pageNumber: 1, x: 0.1, y: 0.1, width: 0.2, height: 0.05 }] });
    assert.equal(field.createdAt, '2032-01-01T00:00:00.005Z');
    assert.equal((await call('GET', `/documents/${document.id}`)).updatedAt, '2032-01-01T00:00:00.005Z');
    clock.advance(5);
    await call('DELETE', `/documents/${document.id}`);
    const row = await ctx.store.db.selectFrom('documents').select('deleted_at').where('id', '=', document.id).executeTakeFirstOrThrow();
    assert.equal(row.deleted_at, '2032-01-01T00:00:00.010Z');
  });

  it('expires a key by the set clock', async () => {
    clock.set('2033-06-01T12:00:00.000Z');
    const expiring = bearer(await ctx.key(['forms:read'], undefined, '2033-06-01T12:01:00.000Z'));
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/api/v1/forms', headers: expiring })).statusCode, 200);
    clock.advance(60_000);
    const refused = await ctx.app.inject({ method: 'GET', url: '/api/v1/forms', headers: expiring });
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.json().code, 'invalid_api_key');
    assert.match(refused.json().hint, /expired/);
  });
});
