import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';

const ALL = ['documents:read', 'documents:write', 'documents:delete'];

/**
 * `GET /documents/{id}` keeps its fields' JSON per stamp of the document and compresses an answer
 * once for the reads that share it: what a client reads must still be the document as it is now.
 */
describe('reading a document with its fields', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  // The service's clock: standing still unless a test moves it.
  let now = Date.parse('2026-12-03T12:00:00.000Z');

  before(async () => {
    ctx = await createTestContext({ now: () => now });
    headers = bearer(await ctx.key(ALL, 'reader'));
  });
  after(() => ctx.close());

  const get = (id: string, extra: Record<string, string> = {}, h = headers) => ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${id}`, headers: { ...h, ...extra } });
  async function newDocument(fields: number): Promise<string> {
    const body = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'many.pdf' }]);
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json().data.id as string;
    // Fields of several kinds: choices, defaults, roles, directions, flags.
    const kinds = [
      { type: 'short_text' },
      { type: 'checkbox', isRequired: true },
      { type: 'dropdown', options: { choices: ['Yes', 'No', 'Maybe'] }, defaultValue: 'No' },
      { type: 'date', defaultValue: '__today__', direction: 'rtl' },
      { type: 'digital_signature', assigneeRole: 'signer_1', isReadOnly: true },
      { type: 'multi_select', options: { choices: ['a', 'b'] }, direction: 'ltr' },
    ];
    const items = Array.from({ length: fields }, (_, i) => ({ ...kinds[i % kinds.length], label: `Field ${i} «ü»`, pageNumber: 1, x: (i % 10) * 0.09, y: Math.floor(i / 10) * 0.09, width: 0.08, height: 0.05 }));
    const bulk = await ctx.app.inject({ method: 'POST', url: `/api/v1/documents/${id}/fields/bulk`, headers, payload: { fields: items } });
    assert.equal(bulk.statusCode, 201, bulk.body);
    return id;
  }

  it('answers the document with every field as the other routes answer them, compressed as accepted and tagged', async () => {
    const id = await newDocument(60);
    const plain = await get(id);
    assert.equal(plain.statusCode, 200, plain.body);
    const data = plain.json().data;
    const listed = await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${id}/fields?limit=100`, headers });
    assert.deepEqual(data.fields, listed.json().data);
    assert.equal(data.fields.length, 60);
    const updated = await ctx.app.inject({ method: 'PUT', url: `/api/v1/documents/${id}`, headers, payload: { title: 'Many fields' } });
    const { downloadUrl: _url, ...document } = { ...data, title: 'Many fields', updatedAt: updated.json().data.updatedAt, fields: undefined };
    const { downloadUrl: _url2, ...answered } = updated.json().data;
    assert.deepEqual(JSON.parse(JSON.stringify(document)), answered);
    // Read again after that change: compressed answers decompress to the plain one, with one tag.
    const again = await get(id);
    const [br, gzip] = await Promise.all([get(id, { 'accept-encoding': 'br' }), get(id, { 'accept-encoding': 'gzip' })]);
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(zlib.brotliDecompressSync(br.rawPayload).toString(), again.body);
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(gzip.rawPayload).toString(), again.body);
    for (const res of [br, gzip]) assert.equal(res.headers.etag, again.headers.etag);
    assert.equal(again.headers.etag, updated.headers.etag);
    assert.notEqual(again.headers.etag, plain.headers.etag);
    const notModified = await get(id, { 'accept-encoding': 'br', 'if-none-match': String(again.headers.etag) });
    assert.equal(notModified.statusCode, 304);
    assert.equal(notModified.rawPayload.length, 0);
  });

  it('with the clock standing still, every change of a field is seen by the next read, under a new tag', async () => {
    const id = await newDocument(30);
    const field = (await get(id)).json().data.fields[7];
    const tags = new Set<string>();
    for (let round = 0; round < 5; round++) {
      const put = await ctx.app.inject({ method: 'PUT', url: `/api/v1/documents/${id}/fields/${field.id}`, headers, payload: { label: `Round ${round}` } });
      assert.equal(put.statusCode, 200, put.body);
      const [plain, br] = await Promise.all([get(id), get(id, { 'accept-encoding': 'br' })]);
      assert.equal(plain.json().data.fields[7].label, `Round ${round}`);
      assert.equal(JSON.parse(zlib.brotliDecompressSync(br.rawPayload).toString()).data.fields[7].label, `Round ${round}`);
      tags.add(String(plain.headers.etag));
    }
    assert.equal(tags.size, 5, 'one tag per state, though the clock did not move');
    // Deleting a field and adding one are changes too.
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/v1/documents/${id}/fields/${field.id}`, headers })).statusCode, 200);
    assert.equal((await get(id)).json().data.fields.length, 29);
  });

  it('a publish that finds nothing to publish still clears the flag, under a new tag', async () => {
    const id = await newDocument(3);
    const field = (await get(id)).json().data.fields[0];
    assert.equal((await ctx.app.inject({ method: 'POST', url: `/api/v1/documents/${id}/publish`, headers })).statusCode, 201);
    for (const label of ['B', field.label]) {
      const put = await ctx.app.inject({ method: 'PUT', url: `/api/v1/documents/${id}/fields/${field.id}`, headers, payload: { label } });
      assert.equal(put.statusCode, 200, put.body);
    }
    const changed = await get(id);
    assert.equal(changed.json().data.hasUnpublishedChanges, true);
    const publish = await ctx.app.inject({ method: 'POST', url: `/api/v1/documents/${id}/publish`, headers });
    assert.equal(publish.statusCode, 409, publish.body);
    assert.equal(publish.json().code, 'no_changes');
    const after = await get(id, { 'if-none-match': String(changed.headers.etag) });
    assert.equal(after.statusCode, 200, 'the tag moved with the flag');
    assert.equal(after.json().data.hasUnpublishedChanges, false);
    // The same through PUT: its answer carries the state and tag a read then gives.
    for (const label of ['C', field.label]) await ctx.app.inject({ method: 'PUT', url: `/api/v1/documents/${id}/fields/${field.id}`, headers, payload: { label } });
    const put = await ctx.app.inject({ method: 'PUT', url: `/api/v1/documents/${id}`, headers, payload: { status: 'published' } });
    assert.equal(put.statusCode, 200, put.body);
    assert.equal(put.json().data.hasUnpublishedChanges, false);
    const read = await get(id);
    assert.equal(put.json().data.updatedAt, read.json().data.updatedAt);
    assert.equal(put.headers.etag, read.headers.etag);
  });

  it('the downloadUrl is made at each read: a later second gets its own, compressed as well', async () => {
    const id = await newDocument(40);
    const first = await get(id, { 'accept-encoding': 'br' });
    now += 2000;
    const later = await get(id, { 'accept-encoding': 'br' });
    const urlOf = (res: typeof first) => JSON.parse(zlib.brotliDecompressSync(res.rawPayload).toString()).data.downloadUrl as string;
    const expiresOf = (url: string) => Number(new URL(url).searchParams.get('expires'));
    assert.equal(expiresOf(urlOf(later)) - expiresOf(urlOf(first)), 2);
    assert.equal(urlOf(later), (await get(id)).json().data.downloadUrl);
    assert.equal(later.headers.etag, first.headers.etag);
  });

  it('lists documents as the other routes answer them, page sizes as stored, also for 10,000 pages', async () => {
    const lister = bearer(await ctx.key(ALL));
    const body = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }, { width: 595, height: 842 }]), filename: 'two "pages".pdf' }]);
    const made = await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...lister, ...body.headers }, payload: body.payload });
    assert.equal(made.statusCode, 201, made.body);
    const id = made.json().data.id as string;
    const long = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'long.pdf' }]);
    const longId = (await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...lister, ...long.headers }, payload: long.payload })).json().data.id as string;
    const pages = Array.from({ length: 10_000 }, (_, i) => ({ width: 612 + (i % 3), height: 792 }));
    await ctx.store.db.updateTable('documents').set({ page_count: 10_000, page_dimensions: JSON.stringify(pages) }).where('id', '=', longId).execute();
    const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/documents?limit=10', headers: lister });
    assert.equal(list.statusCode, 200, list.body);
    assert.match(String(list.headers['content-type']), /^application\/json/);
    const { data, meta } = list.json();
    assert.deepEqual(meta, { total: 2, page: 1, limit: 10 });
    assert.deepEqual(data.map((d: { id: string }) => d.id), [longId, id]);
    for (const item of data) {
      const { fields: _fields, ...read } = (await get(item.id, {}, lister)).json().data;
      assert.deepEqual(item, read);
    }
    // As the upload answered it (the schema's serialiser), but for the downloadUrl made at each read.
    const { downloadUrl: _a, ...listed } = data[1];
    const { downloadUrl: _b, ...uploaded } = made.json().data;
    assert.deepEqual(listed, uploaded);
    assert.deepEqual(data[1].pageDimensions, [{ width: 612, height: 792 }, { width: 595, height: 842 }]);
    assert.deepEqual(data[0].pageDimensions, pages);
    assert.equal(data[0].pageCount, 10_000);
  });

  it("what is kept of a document answers no other workspace, and nothing once it is deleted", async () => {
    const id = await newDocument(20);
    assert.equal((await get(id, { 'accept-encoding': 'br' })).statusCode, 200);
    const stranger = bearer(await ctx.key(ALL));
    for (const extra of [{}, { 'accept-encoding': 'br' }] as Record<string, string>[]) {
      const res = await get(id, extra, stranger);
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.json().code, 'not_found');
    }
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/v1/documents/${id}`, headers })).statusCode, 200);
    assert.equal((await get(id, { 'accept-encoding': 'br' })).statusCode, 404);
  });
});
