import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKey } from '../../src/domain/keys.js';
import { revokeKey } from '../../src/store/keys.js';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';

describe('authentication and grants', () => {
  let ctx: TestContext;
  before(async () => {
    // Verified keys are remembered for 300 ms here (5 s by default) so that revocation can be seen.
    ctx = await createTestContext();
  });
  after(() => ctx.close());

  const get = (headers: Record<string, string> = {}, url = '/api/v1/forms') => ctx.app.inject({ method: 'GET', url, headers });

  it('answers 401 missing_api_key without a key, with WWW-Authenticate and rate-limit headers', async () => {
    const variants: Array<Record<string, string>> = [{}, { authorization: '' }, { authorization: 'Basic dXNlcjpwYXNz' }, { authorization: 'Bearer' }];
    for (const headers of variants) {
      const res = await get(headers);
      assert.equal(res.statusCode, 401, JSON.stringify(headers));
      assert.equal(res.headers['www-authenticate'], 'Bearer');
      assert.equal(res.json().code, 'missing_api_key');
      assert.equal(res.json().error, 'Unauthorized');
      assert.match(res.json().hint, /Authorization: Bearer/);
      assert.ok(res.headers['x-ratelimit-limit']);
      assert.ok(res.headers['x-request-id']);
    }
  });

  it('answers 401 invalid_api_key for unknown, malformed, revoked and expired keys', async () => {
    const unknown = generateKey();
    const malformed = ['nonsense', 'fsk_short', `${unknown}x`, unknown.replace('fsk_', 'abc_')];
    for (const key of [unknown, ...malformed]) {
      const res = await get(bearer(key));
      assert.equal(res.statusCode, 401, key);
      assert.equal(res.headers['www-authenticate'], 'Bearer');
      assert.equal(res.json().code, 'invalid_api_key');
    }
    const expiring = new Date(Date.now() + 1500).toISOString();
    const expired = await ctx.key(['forms:read'], undefined, expiring);
    assert.equal((await get(bearer(expired))).statusCode, 200);
    await new Promise((r) => setTimeout(r, 1600));
    const late = await get(bearer(expired));
    assert.equal(late.statusCode, 401);
    assert.equal(late.json().code, 'invalid_api_key');
    assert.match(late.json().hint, /expired/);

    const revoked = await ctx.key(['forms:read']);
    assert.equal((await get(bearer(revoked))).statusCode, 200);
    const row = await ctx.store.db.selectFrom('api_keys').select('id').orderBy('created_at', 'desc').orderBy('id', 'desc').executeTakeFirstOrThrow();
    assert.equal(await revokeKey(ctx.store, row.id), true);
    // At once: the revocation empties the memory of verified keys.
    const refused = await get(bearer(revoked));
    assert.equal(refused.statusCode, 401);
    assert.match(refused.json().hint, /revoked/);
  });

  it('accepts the Bearer scheme in any letter case', async () => {
    const key = await ctx.key(['forms:read']);
    assert.equal((await get({ authorization: `bearer ${key}` })).statusCode, 200);
    assert.equal((await get({ authorization: `BEARER  ${key}` })).statusCode, 200);
  });

  it('stores only a hash of the key', async () => {
    const key = await ctx.key(['forms:read']);
    const rows = await ctx.store.db.selectFrom('api_keys').selectAll().execute();
    for (const row of rows) {
      assert.ok(!Object.values(row).some((v) => typeof v === 'string' && v.includes(key.slice(12))));
    }
  });

  it('answers 403 missing_grant naming every needed grant in both spellings', async () => {
    const readOnly = bearer(await ctx.key(['read:forms']));
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers: readOnly, payload: { title: 'x' } });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().code, 'missing_grant');
    assert.equal(res.json().error, 'Forbidden');
    assert.match(res.json().hint, /forms:write \(write:forms\)/);
    const count = await ctx.store.db.selectFrom('forms').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    assert.equal(Number(count.n), 0);

    const del = await ctx.app.inject({ method: 'DELETE', url: '/api/v1/forms/01a1fd14-68a6-7162-bd6b-c7ed74244524', headers: readOnly });
    assert.equal(del.statusCode, 403);
    assert.match(del.json().hint, /forms:delete \(delete:forms\)/);

    const none = bearer(await ctx.key(['documents:read']));
    const list = await get(none);
    assert.equal(list.statusCode, 403);
    assert.match(list.json().hint, /forms:read \(read:forms\)/);
  });

  it('treats both spellings of a grant alike', async () => {
    const scopes = bearer(await ctx.key(['read:forms', 'write:forms', 'delete:forms'], 'spelling'));
    const perms = bearer(await ctx.key(['forms:read', 'forms:write', 'forms:delete'], 'spelling'));
    const created = await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers: scopes, payload: { title: 'scope' } });
    assert.equal(created.statusCode, 201);
    const id = created.json().data.id;
    assert.equal((await get(perms, `/api/v1/forms/${id}`)).statusCode, 200);
    assert.equal((await ctx.app.inject({ method: 'PUT', url: `/api/v1/forms/${id}`, headers: perms, payload: { title: 'p' } })).statusCode, 200);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/v1/forms/${id}`, headers: scopes })).statusCode, 200);
  });

  it('authenticates before it routes: an unknown path needs a key, then is 404 in the envelope', async () => {
    assert.equal((await get({}, '/api/v1/nowhere')).statusCode, 401);
    const key = await ctx.key(['forms:read']);
    const res = await get(bearer(key), '/api/v1/nowhere');
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'not_found');
    assert.ok(res.headers['x-ratelimit-remaining']);
    const wrongMethod = await ctx.app.inject({ method: 'PATCH', url: '/api/v1/forms', headers: bearer(key), payload: {} });
    assert.equal(wrongMethod.statusCode, 404);
    assert.equal(wrongMethod.json().code, 'not_found');
  });

  it('echoes a well-formed X-Request-Id and makes one otherwise', async () => {
    const key = bearer(await ctx.key(['forms:read']));
    const echoed = await get({ ...key, 'x-request-id': 'abc.DEF_123-x' });
    assert.equal(echoed.headers['x-request-id'], 'abc.DEF_123-x');
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon', '']) {
      const res = await get({ ...key, 'x-request-id': bad });
      assert.notEqual(res.headers['x-request-id'], bad);
      assert.match(String(res.headers['x-request-id']), /^[A-Za-z0-9._-]{1,128}$/);
    }
    const a = await get(key);
    const b = await get(key);
    assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
  });

  it('serves health, readiness, docs and the OpenAPI document without a key', async () => {
    for (const url of ['/healthz', '/readyz']) {
      const res = await ctx.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.deepEqual(res.json(), { success: true, data: { status: 'ok' } });
      assert.equal(res.headers['x-ratelimit-limit'], undefined, 'not rate limited');
    }
    const docs = await ctx.app.inject({ method: 'GET', url: '/docs' });
    assert.ok([200, 302].includes(docs.statusCode));
    const openapi = await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    assert.equal(openapi.statusCode, 200);
    assert.ok(openapi.headers['x-ratelimit-limit'], 'under /api/v1, so rate limited');
    const spec = openapi.json();
    assert.equal(spec.openapi, '3.1.0');
    for (const path of ['/api/v1/forms', '/api/v1/forms/{id}']) assert.ok(spec.paths[path], path);
    assert.deepEqual(Object.keys(spec.paths['/api/v1/forms/{id}']).sort(), ['delete', 'get', 'put']);
    const create = spec.paths['/api/v1/forms'].post;
    assert.deepEqual(create.requestBody.content['application/json'].schema.required, ['title']);
    assert.equal(create.requestBody.content['application/json'].schema.additionalProperties, false);
    assert.ok(create.responses['201']);
    const upload = spec.paths['/api/v1/documents'].post.requestBody.content['multipart/form-data'].schema;
    assert.deepEqual(upload.required, ['file']);
    for (const path of ['/api/v1/documents/{id}', '/api/v1/documents/{id}/file', '/api/v1/documents/{id}/fields', '/api/v1/documents/{id}/fields/bulk', '/api/v1/documents/{id}/fields/{fid}']) {
      assert.ok(spec.paths[path], path);
    }
  });
});
