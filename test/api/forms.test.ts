import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { multipart } from '../helpers/files.js';

const FORMS = '/api/v1/forms';

describe('forms CRUD', () => {
  let ctx: TestContext;
  let key: string;
  let headers: Record<string, string>;

  before(async () => {
    ctx = await createTestContext();
    key = await ctx.key(['forms:read', 'forms:write', 'forms:delete'], 'acme');
    headers = bearer(key);
  });
  after(() => ctx.close());

  async function create(body: unknown, h = headers) {
    return ctx.app.inject({ method: 'POST', url: FORMS, headers: h, payload: body as object });
  }

  it('creates a form with defaults and answers 201 with Location', async () => {
    const res = await create({ title: 'Customer Satisfaction Survey', description: 'Help us improve our service.' });
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.equal(body.success, true);
    const form = body.data;
    assert.match(form.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(res.headers.location, `${FORMS}/${form.id}`);
    assert.deepEqual(Object.keys(form).sort(), [
      'createdAt', 'currentVersion', 'description', 'hasUnpublishedChanges', 'id', 'questionCount',
      'settings', 'status', 'title', 'updatedAt', 'workspaceId',
    ]);
    assert.equal(form.title, 'Customer Satisfaction Survey');
    assert.equal(form.description, 'Help us improve our service.');
    assert.equal(form.status, 'draft');
    assert.deepEqual(form.settings, {});
    assert.equal(form.currentVersion, null);
    assert.equal(form.hasUnpublishedChanges, true);
    assert.equal(form.questionCount, 0);
    assert.match(form.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(form.createdAt, form.updatedAt);

    const got = await ctx.app.inject({ method: 'GET', url: `${FORMS}/${form.id}`, headers });
    assert.equal(got.statusCode, 200);
    assert.deepEqual(got.json().data, { ...form, sections: [], questions: [], rules: [] });
  });

  it('keeps settings exactly as given, snake_case keys inside included', async () => {
    const settings = { theme_color: '#fff', nested: { some_key: [1, { deep_key: true }] }, 'odd key': null };
    const res = await create({ title: 'Settings', settings });
    assert.equal(res.statusCode, 201);
    assert.deepEqual(res.json().data.settings, settings);
  });

  it('accepts snake_case request keys and rejects both spellings of one key', async () => {
    const res = await ctx.app.inject({
      method: 'GET',
      url: FORMS,
      headers,
    });
    assert.equal(res.statusCode, 200);
    // No form key has two words yet except inside settings; the casing rule is checked on a
    // two-word key that does not exist, which must be refused under the name the client sent.
    const unknown = await create({ title: 'x', question_text: 'y' });
    assert.equal(unknown.statusCode, 400);
    assert.match(unknown.json().hint, /^question_text: unknown key/);
    const twice = await create({ title: 'x', questionText: 'a', question_text: 'b' });
    assert.equal(twice.statusCode, 400);
    assert.equal(twice.json().code, 'validation_failed');
    assert.match(twice.json().hint, /questionText: given twice/);
  });

  it('rejects unknown keys, wrong types and bad values, naming the key, and stores nothing', async () => {
    const before = (await ctx.app.inject({ method: 'GET', url: FORMS, headers })).json().meta.total;
    const cases: Array<[unknown, RegExp]> = [
      [{ title: 'x', titel: 'y' }, /^titel: unknown key/],
      // A required key misspelt: the unknown key is named, not only the missing one.
      [{ titel: 'Survey' }, /^titel: unknown key \(allowed: /],
      [{}, /title: is required/],
      [{ title: 5 }, /title: must be a string/],
      [{ title: '' }, /title: must be at least 1 character/],
      [{ title: '   ' }, /title: must not be blank/],
      [{ title: 'x'.repeat(201) }, /title: must be at most 200 characters/],
      [{ title: 'x', description: 'd'.repeat(1001) }, /description: must be at most 1000 characters/],
      [{ title: 'x', description: 7 }, /description: must be a string or null/],
      [{ title: 'x', settings: [] }, /settings: must be an object/],
      [{ title: 'x', settings: 'a' }, /settings: must be an object/],
      [{ title: 'x', settings: { big: 'y'.repeat(65_536) } }, /settings: must be at most 65536 bytes/],
      [{ title: 'x', status: 'archived' }, /status: must be "draft"/],
      [[{ title: 'x' }], /body: must be an object/],
      ['just a string', /body: must be an object/],
    ];
    for (const [payload, hint] of cases) {
      const res = await ctx.app.inject({
        method: 'POST',
        url: FORMS,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'hint', 'success']);
      assert.equal(body.success, false);
      assert.equal(body.error, 'Bad Request');
      assert.equal(body.code, 'validation_failed');
      assert.match(body.hint, hint, `${JSON.stringify(payload).slice(0, 60)} → ${body.hint}`);
    }
    const after = (await ctx.app.inject({ method: 'GET', url: FORMS, headers })).json().meta.total;
    assert.equal(after, before);
  });

  it('refuses a body of more values than the limit (100,000) with 400 before parsing it', async () => {
    const many = `{"title":"many","settings":{"list":[${Array(100_001).fill('0').join(',')}]}}`;
    const res = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...headers, 'content-type': 'application/json' }, payload: many });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'validation_failed');
    assert.match(res.json().hint, /more than 100,000 values/);
  });

  it('refuses NUL characters, absurd nesting and multipart bodies where JSON is expected', async () => {
    const nul = await create({ title: 'a\u0000b' });
    assert.equal(nul.statusCode, 400);
    assert.match(nul.json().hint, /title: must not contain the NUL character/);
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const nested = await create({ title: 'deep', settings: deep });
    assert.equal(nested.statusCode, 400);
    assert.match(nested.json().hint, /nested more than 32 levels/);
    let huge = '1';
    for (let i = 0; i < 100_000; i++) huge = `[${huge}]`;
    const enormous = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...headers, 'content-type': 'application/json' }, payload: `{"title":"x","settings":{"a":${huge}}}` });
    assert.equal(enormous.statusCode, 400, enormous.body);
    const form = (await create({ title: 'target' })).json().data;
    const body = multipart([{ name: 'title', data: 'x' }]);
    const asMultipart = await ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}`, headers: { ...headers, ...body.headers }, payload: body.payload });
    assert.equal(asMultipart.statusCode, 415);
    assert.equal(asMultipart.json().code, 'unsupported_media_type');
  });

  it('answers URLs the router cannot read, and over-long ids, in the envelope with all headers', async () => {
    for (const url of [`${FORMS}/%E0%A4%A`, `${FORMS}/${'x'.repeat(600)}`]) {
      const res = await ctx.app.inject({ method: 'GET', url, headers });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().code, 'not_found');
      assert.ok(res.headers['x-request-id']);
      assert.ok(res.headers['x-ratelimit-remaining'], url);
    }
    const noKey = await ctx.app.inject({ method: 'GET', url: `${FORMS}/%E0%A4%A` });
    assert.equal(noKey.statusCode, 401);
  });

  it('answers malformed JSON, wrong content types, empty and oversized bodies in the envelope', async () => {
    const post = (payload: string, contentType: string) =>
      ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...headers, 'content-type': contentType }, payload });
    const malformed = await post('{"title": ', 'application/json');
    assert.equal(malformed.statusCode, 400);
    assert.equal(malformed.json().code, 'validation_failed');
    // Bytes that are not UTF-8 are refused, not stored as U+FFFD; a UTF-8 byte order mark is allowed.
    const latin1 = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...headers, 'content-type': 'application/json' }, payload: Buffer.from('{"title":"Caf\xe9"}', 'latin1') });
    assert.equal(latin1.statusCode, 400, latin1.body);
    assert.match(latin1.json().hint, /^body: is not valid UTF-8/);
    const bom = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...headers, 'content-type': 'application/json' }, payload: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"title":"Café"}')]) });
    assert.equal(bom.statusCode, 201, bom.body);
    assert.equal(bom.json().data.title, 'Café');
    // Half of a surrogate pair is valid JSON but no character: refused, not stored as U+FFFD.
    const lone = await post('{"title":"a\\ud800b"}', 'application/json');
    assert.equal(lone.statusCode, 400, lone.body);
    assert.match(lone.json().hint, /^title: holds half of a UTF-16 surrogate pair/);
    assert.equal((await post('{"title":"\\ud83d\\ude00"}', 'application/json')).statusCode, 201, 'a whole pair is a character');
    // A number JSON allows but a double cannot hold is refused, not kept as null.
    const before = (await ctx.app.inject({ method: 'GET', url: `${FORMS}?limit=1`, headers })).json().meta.total;
    for (const body of ['{"title":"x","settings":{"a":1e400}}', '{"title":"x","settings":{"a":[-1e999]}}', '{"title":"x","description":"d","settings":{},"extra":1e400}']) {
      const res = await post(body, 'application/json');
      assert.equal(res.statusCode, 400, body);
      assert.equal(res.json().code, 'validation_failed');
    }
    assert.match((await post('{"title":"x","settings":{"a":1e400}}', 'application/json')).json().hint, /^settings: holds a number out of range/);
    assert.equal((await ctx.app.inject({ method: 'GET', url: `${FORMS}?limit=1`, headers })).json().meta.total, before);
    const poisoned = await post('{"title":"x","__proto__":{"admin":true}}', 'application/json');
    assert.equal(poisoned.statusCode, 400);
    assert.equal(poisoned.json().code, 'validation_failed');
    const empty = await post('', 'application/json');
    assert.equal(empty.statusCode, 400);
    assert.equal(empty.json().code, 'validation_failed');
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await post('{"title":"x"}', type);
      assert.equal(res.statusCode, 415, type);
      assert.equal(res.json().code, 'unsupported_media_type');
      assert.equal(res.json().error, 'Unsupported Media Type');
    }
    const exactly = JSON.stringify({ title: 'big', settings: { pad: '' } });
    const padTo = (n: number) => JSON.stringify({ title: 'big', settings: { pad: 'p'.repeat(n - exactly.length) } });
    const tooLarge = await post(padTo(1_048_577), 'application/json');
    assert.equal(tooLarge.statusCode, 413);
    assert.equal(tooLarge.json().code, 'payload_too_large');
    // 1 MiB exactly is a valid body size; it is refused only for the 64 KiB settings rule.
    const atLimit = await post(padTo(1_048_576), 'application/json');
    assert.equal(atLimit.statusCode, 400);
    assert.match(atLimit.json().hint, /settings: must be at most 65536 bytes/);
  });

  it('an operation that takes no body refuses one with keys, and takes an empty one with a JSON content type', async () => {
    const form = (await create({ title: 'to delete' })).json().data;
    const typo = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${form.id}`, headers: { ...headers, 'content-type': 'application/json' }, payload: '{"permanent":true}' });
    assert.equal(typo.statusCode, 400, typo.body);
    assert.equal(typo.json().code, 'validation_failed');
    assert.match(typo.json().hint, /^permanent: unknown key/);
    assert.equal((await ctx.app.inject({ method: 'GET', url: `${FORMS}/${form.id}`, headers })).statusCode, 200, 'nothing was deleted');
    const array = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${form.id}`, headers: { ...headers, 'content-type': 'application/json' }, payload: '[1]' });
    assert.equal(array.statusCode, 400);
    assert.match(array.json().hint, /^body: this operation takes no body/);
    // A client that sends the JSON content type on every request, with no body or with {}.
    for (const payload of ['', '{}']) {
      const other = (await create({ title: 'to delete' })).json().data;
      const res = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${other.id}`, headers: { ...headers, 'content-type': 'application/json' }, payload });
      assert.equal(res.statusCode, 200, `${JSON.stringify(payload)}: ${res.body}`);
      assert.deepEqual(res.json().data, { id: other.id, deleted: true });
    }
    // A multipart body there is refused too, not left unread.
    const parts = multipart([{ name: 'permanent', data: 'true' }]);
    const asParts = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${form.id}`, headers: { ...headers, ...parts.headers }, payload: parts.payload });
    assert.equal(asParts.statusCode, 415, asParts.body);
    assert.equal(asParts.headers.connection, 'close');
    assert.equal((await ctx.app.inject({ method: 'GET', url: `${FORMS}/${form.id}`, headers })).statusCode, 200, 'still there');
    // A route whose body is required still refuses an empty one.
    const emptyCreate = await ctx.app.inject({ method: 'POST', url: FORMS, headers: { ...headers, 'content-type': 'application/json' }, payload: '' });
    assert.equal(emptyCreate.statusCode, 400);
  });

  it('lists newest first with pagination rules and a status filter', async () => {
    const ws = bearer(await ctx.key(['forms:read', 'forms:write']));
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push((await create({ title: `Form ${i}` }, ws)).json().data.id);
    const list = async (query: string) => ctx.app.inject({ method: 'GET', url: `${FORMS}${query}`, headers: ws });

    const first = (await list('')).json();
    assert.deepEqual(first.meta, { total: 25, page: 1, limit: 20 });
    assert.deepEqual(first.data.map((f: { id: string }) => f.id), ids.slice().reverse().slice(0, 20));
    const second = (await list('?page=2')).json();
    assert.deepEqual(second.meta, { total: 25, page: 2, limit: 20 });
    assert.deepEqual(second.data.map((f: { id: string }) => f.id), ids.slice().reverse().slice(20));
    const small = (await list('?page=3&limit=4')).json();
    assert.deepEqual(small.meta, { total: 25, page: 3, limit: 4 });
    assert.deepEqual(small.data.map((f: { id: string }) => f.id), ids.slice().reverse().slice(8, 12));
    const clamped = (await list('?limit=500')).json();
    assert.deepEqual(clamped.meta, { total: 25, page: 1, limit: 100 });
    assert.equal(clamped.data.length, 25);
    const past = (await list('?page=9')).json();
    assert.deepEqual(past, { success: true, data: [], meta: { total: 25, page: 9, limit: 20 } });

    assert.deepEqual((await list('?limit=99999999999999999999')).json().meta, { total: 25, page: 1, limit: 100 });
    // Leading zeros are still the whole number they write.
    assert.deepEqual((await list('?page=02&limit=004')).json().meta, { total: 25, page: 2, limit: 4 });
    for (const bad of ['?page=0', '?page=00', '?limit=000', '?page=-1', '?page=abc', '?page=1.5', '?page=1.0', '?page=0x10', '?page=%205', '?page=+5', '?limit=1e3', '?limit=Infinity', '?limit=0', '?limit=abc', '?limit=', '?page=', '?page=1&page=2', '?page=99999999999999', '?page=1000000001']) {
      const res = await list(bad);
      assert.equal(res.statusCode, 400, bad);
      assert.equal(res.json().code, 'invalid_pagination', bad);
    }
    const unknownParam = await list('?pgae=2');
    assert.equal(unknownParam.statusCode, 400);
    assert.match(unknownParam.json().hint, /^pgae: unknown query parameter/);

    await ctx.app.inject({ method: 'PUT', url: `${FORMS}/${ids[3]}`, headers: ws, payload: { status: 'archived' } });
    const archived = (await list('?status=archived')).json();
    assert.deepEqual(archived.meta.total, 1);
    assert.equal(archived.data[0].id, ids[3]);
    assert.equal((await list('?status=draft')).json().meta.total, 24);
    assert.equal((await list('?status=published')).json().meta.total, 0);
    const badStatus = await list('?status=deleted');
    assert.equal(badStatus.statusCode, 400);
    assert.equal(badStatus.json().code, 'validation_failed');
  });

  it('updates only the keys given and tracks unpublished changes', async () => {
    const form = (await create({ title: 'Before', description: 'keep me', settings: { a: 1 } })).json().data;
    const put = (payload: object, id = form.id) => ctx.app.inject({ method: 'PUT', url: `${FORMS}/${id}`, headers, payload });
    const res = await put({ title: 'After' });
    assert.equal(res.statusCode, 200);
    const updated = res.json().data;
    assert.equal(updated.title, 'After');
    assert.equal(updated.description, 'keep me');
    assert.deepEqual(updated.settings, { a: 1 });
    assert.equal(updated.hasUnpublishedChanges, true);
    assert.ok(updated.updatedAt >= form.updatedAt);
    const cleared = (await put({ description: null, settings: {} })).json().data;
    assert.equal(cleared.description, null);
    assert.deepEqual(cleared.settings, {});
    assert.deepEqual((await ctx.app.inject({ method: 'GET', url: `${FORMS}/${form.id}`, headers })).json().data, { ...cleared, sections: [], questions: [], rules: [] });

    const invalid = await put({ title: '' });
    assert.equal(invalid.statusCode, 400);
    const unknown = await put({ questionCount: 3 });
    assert.equal(unknown.statusCode, 400);
    assert.match(unknown.json().hint, /^questionCount: unknown key/);
    const empty = await put({});
    assert.equal(empty.statusCode, 200);
    assert.deepEqual(empty.json().data, cleared);
  });

  it('moves status forward only; archived forms are read only but deletable', async () => {
    const form = (await create({ title: 'Lifecycle' })).json().data;
    const put = (payload: object) => ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}`, headers, payload });
    assert.equal((await put({ status: 'draft' })).statusCode, 200);
    const publish = await put({ status: 'published' });
    assert.equal(publish.statusCode, 200);
    assert.equal(publish.json().data.status, 'published');
    assert.equal(publish.json().data.currentVersion, 1);
    assert.equal(publish.json().data.hasUnpublishedChanges, false);
    // Published with nothing changed: PUT changes nothing (no new revision) and answers 200.
    const again = await put({ status: 'published' });
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.json().data, publish.json().data);
    assert.equal((await put({ status: 'draft' })).json().code, 'invalid_status_transition');
    const archived = await put({ status: 'archived' });
    assert.equal(archived.statusCode, 200);
    assert.equal(archived.json().data.status, 'archived');
    const back = await put({ status: 'draft' });
    assert.equal(back.statusCode, 409);
    assert.equal(back.json().code, 'invalid_status_transition');
    const edit = await put({ title: 'New title' });
    assert.equal(edit.statusCode, 409);
    assert.equal(edit.json().code, 'form_not_editable');
    assert.equal((await put({ status: 'archived' })).statusCode, 200);
    const got = (await ctx.app.inject({ method: 'GET', url: `${FORMS}/${form.id}`, headers })).json().data;
    assert.equal(got.title, 'Lifecycle');
    const del = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${form.id}`, headers });
    assert.equal(del.statusCode, 200);
  });

  it('soft-deletes, then permanently deletes, also an already soft-deleted form', async () => {
    const a = (await create({ title: 'Soft' })).json().data;
    const del = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${a.id}`, headers });
    assert.equal(del.statusCode, 200);
    assert.deepEqual(del.json(), { success: true, data: { id: a.id, deleted: true } });
    assert.equal((await ctx.app.inject({ method: 'GET', url: `${FORMS}/${a.id}`, headers })).statusCode, 404);
    assert.equal((await ctx.app.inject({ method: 'PUT', url: `${FORMS}/${a.id}`, headers, payload: { title: 'x' } })).statusCode, 404);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${a.id}`, headers })).statusCode, 404);
    const listed = (await ctx.app.inject({ method: 'GET', url: `${FORMS}?limit=100`, headers })).json().data;
    assert.ok(!listed.some((f: { id: string }) => f.id === a.id));
    const row = await ctx.store.db.selectFrom('forms').select(['id', 'deleted_at']).where('id', '=', a.id).executeTakeFirst();
    assert.ok(row?.deleted_at, 'soft delete keeps the row');

    const gone = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${a.id}?permanent=true`, headers });
    assert.equal(gone.statusCode, 200);
    assert.equal(await ctx.store.db.selectFrom('forms').select('id').where('id', '=', a.id).executeTakeFirst(), undefined);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${a.id}?permanent=true`, headers })).statusCode, 404);

    const b = (await create({ title: 'Hard' })).json().data;
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${b.id}?permanent=true`, headers })).statusCode, 200);
    assert.equal(await ctx.store.db.selectFrom('forms').select('id').where('id', '=', b.id).executeTakeFirst(), undefined);
    const bad = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${b.id}?permanent=yes`, headers });
    assert.equal(bad.statusCode, 400);
  });

  it('answers 404 for malformed and unknown ids', async () => {
    for (const id of ['nope', '123', '01a1fd14-68a6-7162-bd6b-c7ed74244524', "1' or '1'='1"]) {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const res = await ctx.app.inject({
          method,
          url: `${FORMS}/${encodeURIComponent(id)}`,
          headers,
          ...(method === 'PUT' ? { payload: { title: 'x' } } : {}),
        });
        assert.equal(res.statusCode, 404, `${method} ${id}`);
        assert.deepEqual(res.json(), { success: false, error: 'Not Found', hint: 'Form not found', code: 'not_found' });
      }
    }
  });

  it("never shows another workspace's forms, not even their existence", async () => {
    const mine = (await create({ title: 'Private' })).json().data;
    const other = bearer(await ctx.key(['forms:read', 'forms:write', 'forms:delete'], 'other-co'));
    const get = await ctx.app.inject({ method: 'GET', url: `${FORMS}/${mine.id}`, headers: other });
    const unknown = await ctx.app.inject({ method: 'GET', url: `${FORMS}/01a1fd14-68a6-7162-bd6b-c7ed74244524`, headers: other });
    assert.equal(get.statusCode, 404);
    assert.deepEqual(get.json(), unknown.json());
    assert.equal((await ctx.app.inject({ method: 'PUT', url: `${FORMS}/${mine.id}`, headers: other, payload: { title: 'hijack' } })).statusCode, 404);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${mine.id}`, headers: other })).statusCode, 404);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${mine.id}?permanent=true`, headers: other })).statusCode, 404);
    const list = (await ctx.app.inject({ method: 'GET', url: FORMS, headers: other })).json();
    assert.equal(list.meta.total, 0);
    const still = (await ctx.app.inject({ method: 'GET', url: `${FORMS}/${mine.id}`, headers })).json().data;
    assert.equal(still.title, 'Private');
  });

  it('keeps both edits when two different keys are updated at the same time', async () => {
    const form = (await create({ title: 'Race', description: 'start' })).json().data;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        ctx.app.inject({
          method: 'PUT',
          url: `${FORMS}/${form.id}`,
          headers,
          payload: i % 2 === 0 ? { title: `title ${i}` } : { description: `description ${i}` },
        }),
      ),
    );
    assert.ok(results.every((r) => r.statusCode === 200));
    const final = (await ctx.app.inject({ method: 'GET', url: `${FORMS}/${form.id}`, headers })).json().data;
    assert.match(final.title, /^title \d+$/);
    assert.match(final.description, /^description \d+$/);
  });
});
