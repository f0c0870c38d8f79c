import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RESOURCE_TAGS, resourceStamp, routeShape } from '../../src/http/conditional.js';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';

const FORMS = '/api/v1/forms';
const DOCS = '/api/v1/documents';

describe('conditional requests', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;

  before(async () => {
    ctx = await createTestContext();
    headers = bearer(await ctx.key(['forms:read', 'forms:write', 'forms:delete', 'documents:read', 'documents:write', 'documents:delete', 'revisions:read'], 'cond'));
  });
  after(() => ctx.close());

  const get = (url: string, extra: Record<string, string> = {}) => ctx.app.inject({ method: 'GET', url, headers: { ...headers, ...extra } });

  it('GET a form: ETag, If-None-Match answers 304 with no body; a change moves the tag', async () => {
    const form = (await ctx.app.inject({ method: 'POST', url: FORMS, headers, payload: { title: 'Tagged', settings: { updatedAt: 'inside settings', id: 'x' } } })).json().data;
    const first = await get(`${FORMS}/${form.id}`);
    const tag = first.headers.etag as string;
    assert.match(tag, /^"[A-Za-z0-9_-]{27}"$/);
    const notModified = await get(`${FORMS}/${form.id}`, { 'if-none-match': tag });
    assert.equal(notModified.statusCode, 304);
    assert.equal(notModified.body, '');
    assert.equal(notModified.headers.etag, tag);
    assert.ok(notModified.headers['x-ratelimit-limit']);
    assert.equal((await get(`${FORMS}/${form.id}`, { 'if-none-match': `W/${tag}, "other"` })).statusCode, 304);
    assert.equal((await get(`${FORMS}/${form.id}`, { 'if-none-match': '"other"' })).statusCode, 200);
    // A question added changes the form's content, and so its tag.
    const q = await ctx.app.inject({ method: 'POST', url: `${FORMS}/${form.id}/questions`, headers, payload: { questionText: 'Name?', type: 'short_text' } });
    assert.equal(q.statusCode, 201);
    const changed = await get(`${FORMS}/${form.id}`, { 'if-none-match': tag });
    assert.equal(changed.statusCode, 200);
    assert.notEqual(changed.headers.etag, tag);
    // Lists carry no tag.
    assert.equal((await get(FORMS)).headers.etag, undefined);
  });

  it('two editors: the second PUT with a stale If-Match is 412 and changes nothing; PUT answers carry the tag GET shows', async () => {
    const form = (await ctx.app.inject({ method: 'POST', url: FORMS, headers, payload: { title: 'Shared' } })).json().data;
    const tag = (await get(`${FORMS}/${form.id}`)).headers.etag as string;
    const put = (title: string, ifMatch: string) =>
      ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}`, headers: { ...headers, 'if-match': ifMatch }, payload: { title } });
    const alice = await put('Alice', tag);
    assert.equal(alice.statusCode, 200);
    const aliceTag = alice.headers.etag as string;
    assert.ok(aliceTag);
    assert.notEqual(aliceTag, tag);
    assert.equal((await get(`${FORMS}/${form.id}`)).headers.etag, aliceTag);
    const bob = await put('Bob', tag);
    assert.equal(bob.statusCode, 412);
    assert.equal(bob.json().code, 'precondition_failed');
    assert.equal((await get(`${FORMS}/${form.id}`)).json().data.title, 'Alice');
    // If-Match compares strongly: the weak form of the current tag matches nothing.
    const weak = await put('Weak', `W/${aliceTag}`);
    assert.equal(weak.statusCode, 412);
    assert.match(weak.json().hint, /a weak tag \(W\/"…"\) never matches/);
    assert.equal((await get(`${FORMS}/${form.id}`)).json().data.title, 'Alice');
    assert.equal((await put('Carol', `W/${aliceTag}, ${aliceTag}`)).statusCode, 200);
    const carolTag = (await get(`${FORMS}/${form.id}`)).headers.etag as string;
    assert.equal((await put('Carol', carolTag)).statusCode, 200);
    assert.equal((await put('Any', '*')).statusCode, 200);
    const del = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${form.id}`, headers: { ...headers, 'if-match': aliceTag } });
    assert.equal(del.statusCode, 412);
    assert.equal((await get(`${FORMS}/${form.id}`)).statusCode, 200);
  });

  it('concurrent PUTs with the same If-Match: exactly one succeeds', async () => {
    const form = (await ctx.app.inject({ method: 'POST', url: FORMS, headers, payload: { title: 'Race' } })).json().data;
    const tag = (await get(`${FORMS}/${form.id}`)).headers.etag as string;
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}`, headers: { ...headers, 'if-match': tag }, payload: { title: `T${i}` } })),
    );
    assert.equal(answers.filter((a) => a.statusCode === 200).length, 1);
    assert.equal(answers.filter((a) => a.statusCode === 412).length, 9);
  });

  it('concurrent writes to one form by different routes with the same If-Match: exactly one succeeds', async () => {
    const form = (await ctx.app.inject({ method: 'POST', url: FORMS, headers, payload: { title: 'Routes' } })).json().data;
    const tag = (await get(`${FORMS}/${form.id}`)).headers.etag as string;
    const withTag = { ...headers, 'if-match': tag };
    const answers = await Promise.all([
      ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}/settings`, headers: withTag, payload: { theme: 'dark' } }),
      ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}`, headers: withTag, payload: { title: 'Renamed' } }),
      ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}/settings`, headers: withTag, payload: { theme: 'light' } }),
      ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}`, headers: withTag, payload: { title: 'Renamed again' } }),
    ]);
    assert.deepEqual(answers.map((a) => a.statusCode).sort(), [200, 412, 412, 412], answers.map((a) => a.body).join('\n'));
  });

  it('questions, sections, rules and fields: PUT answers carry a tag that If-Match checks', async () => {
    const form = (await ctx.app.inject({ method: 'POST', url: FORMS, headers, payload: { title: 'Kids' } })).json().data;
    const section = (await ctx.app.inject({ method: 'POST', url: `${FORMS}/${form.id}/sections`, headers, payload: { title: 'S' } })).json().data;
    const first = await ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}/sections/${section.id}`, headers, payload: { title: 'S1' } });
    const tag = first.headers.etag as string;
    assert.ok(tag);
    await ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}/sections/${section.id}`, headers, payload: { title: 'S2' } });
    const stale = await ctx.app.inject({ method: 'PUT', url: `${FORMS}/${form.id}/sections/${section.id}`, headers: { ...headers, 'if-match': tag }, payload: { title: 'S3' } });
    assert.equal(stale.statusCode, 412);
    const staleDelete = await ctx.app.inject({ method: 'DELETE', url: `${FORMS}/${form.id}/sections/${section.id}`, headers: { ...headers, 'if-match': tag } });
    assert.equal(staleDelete.statusCode, 412);

    const pdf = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'a.pdf' }]);
    const doc = (await ctx.app.inject({ method: 'POST', url: DOCS, headers: { ...headers, ...pdf.headers }, payload: pdf.payload })).json().data;
    const docTag = (await get(`${DOCS}/${doc.id}`)).headers.etag as string;
    const field = await ctx.app.inject({ method: 'POST', url: `${DOCS}/${doc.id}/fields`, headers, payload: { type: 'date', pageNumber: 1, x: 0.1, y: 0.1, width: 0.2, height: 0.05 } });
    assert.equal(field.statusCode, 201);
    // A field added changes the document (its GET shows the fields).
    assert.notEqual((await get(`${DOCS}/${doc.id}`)).headers.etag, docTag);
    const putDoc = await ctx.app.inject({ method: 'PUT', url: `${DOCS}/${doc.id}`, headers: { ...headers, 'if-match': docTag }, payload: { title: 'X' } });
    assert.equal(putDoc.statusCode, 412);
    const fieldPut = await ctx.app.inject({ method: 'PUT', url: `${DOCS}/${doc.id}/fields/${field.json().data.id}`, headers: { ...headers, 'if-match': '"nope"' }, payload: { label: 'L' } });
    assert.equal(fieldPut.statusCode, 412);
    // The file download keeps its own validators (issue 18's, not this module's): its ETag is the content's hash.
    const file = await get(`${DOCS}/${doc.id}/file`);
    assert.equal(file.statusCode, 200);
    assert.notEqual(file.headers.etag, docTag);
    assert.equal((await get(`${DOCS}/${doc.id}/file`, { 'if-none-match': file.headers.etag as string })).statusCode, 304);
    // An unknown resource is still 404, with or without If-Match.
    const missing = await ctx.app.inject({ method: 'PUT', url: `${FORMS}/0190a0a0-0000-7000-8000-000000000000`, headers: { ...headers, 'if-match': tag }, payload: { title: 'x' } });
    assert.equal(missing.statusCode, 404);
  });

  it('every PUT and DELETE route says how its tag is read', () => {
    const missing: string[] = [];
    const spec = ctx.app.swagger() as { paths: Record<string, Record<string, unknown>> };
    for (const [path, ops] of Object.entries(spec.paths)) {
      for (const method of Object.keys(ops)) {
        if (method !== 'put' && method !== 'delete') continue;
        const shape = routeShape(path.replace(/\{(\w+)\}/g, ':$1'));
        if (!RESOURCE_TAGS.has(shape)) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('reads data.id and data.updatedAt of the envelope only, never of nested objects', () => {
    assert.deepEqual(resourceStamp('{"success":true,"data":{"settings":{"id":"n","updatedAt":"n"},"id":"a","x":[{"updatedAt":"m"}],"updatedAt":"b"}}'), { id: 'a', updatedAt: 'b' });
    assert.deepEqual(resourceStamp('{"success":true,"data":{"title":"a \\" \\"id\\":","id":"a\\"b","updatedAt":"t"}}'), { id: 'a"b', updatedAt: 't' });
    assert.equal(resourceStamp('{"success":true,"data":{"id":"a"}}'), null);
  });
});
