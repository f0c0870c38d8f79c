import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';

const ALL = ['documents:read', 'documents:write', 'documents:delete'];
const box = { pageNumber: 1, x: 0.1, y: 0.1, width: 0.2, height: 0.05 };

describe('document fields', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let pdf: Buffer;

  before(async () => {
    ctx = await createTestContext();
    headers = bearer(await ctx.key(ALL, 'fields'));
    pdf = await makePdf([{ width: 612, height: 792 }, { width: 612, height: 792 }, { width: 792, height: 612 }]);
  });
  after(() => ctx.close());

  async function newDocument(h = headers): Promise<string> {
    const body = multipart([{ name: 'file', data: pdf, filename: 'three-pages.pdf' }]);
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...h, ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().data.id;
  }
  const url = (doc: string, rest = '') => `/api/v1/documents/${doc}/fields${rest}`;
  const post = (doc: string, payload: unknown, h = headers) => ctx.app.inject({ method: 'POST', url: url(doc), headers: h, payload: payload as object });
  const bulk = (doc: string, fields: unknown[]) => ctx.app.inject({ method: 'POST', url: url(doc, '/bulk'), headers, payload: { fields } });
  const put = (doc: string, fid: string, payload: object) => ctx.app.inject({ method: 'PUT', url: url(doc, `/${fid}`), headers, payload });
  const orders = async (doc: string) =>
    (await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${doc}`, headers })).json().data.fields.map((f: { label: string; order: number }) => `${f.order}:${f.label}`);

  it('creates a field with defaults, accepting snake_case keys', async () => {
    const doc = await newDocument();
    const res = await post(doc, { type: 'digital_signature', page_number: 3, x: 0.1, y: 0.85, width: 0.35, height: 0.06, is_required: true, assignee_role: 'signer_1' });
    assert.equal(res.statusCode, 201, res.body);
    const field = res.json().data;
    assert.deepEqual(
      { ...field, id: undefined, createdAt: undefined, updatedAt: undefined },
      {
        id: undefined, documentId: doc, label: 'Signature', type: 'digital_signature', pageNumber: 3, x: 0.1, y: 0.85, width: 0.35, height: 0.06,
        isRequired: true, isReadOnly: false, assigneeRole: 'signer_1', defaultValue: null, direction: 'auto', options: {}, order: 0,
        createdAt: undefined, updatedAt: undefined,
      },
    );
    assert.equal(res.headers.location, url(doc, `/${field.id}`));
    const list = (await ctx.app.inject({ method: 'GET', url: url(doc), headers })).json();
    assert.deepEqual(list.meta, { total: 1, page: 1, limit: 20 });
    assert.deepEqual(list.data, [field]);
  });

  it('enforces the geometry, page, type and option rules, naming the key', async () => {
    const doc = await newDocument();
    const bad: Array<[object, RegExp]> = [
      [{ ...box, type: 'date', pageNumber: 4 }, /pageNumber: must be a page of the document, from 1 to 3/],
      [{ ...box, type: 'date', pageNumber: 0 }, /pageNumber: must be ≥ 1/],
      [{ ...box, type: 'date', pageNumber: 1.5 }, /pageNumber: must be an integer/],
      [{ ...box, type: 'date', x: -0.1 }, /x: must be ≥ 0/],
      [{ ...box, type: 'date', x: 1.2 }, /x: must be ≤ 1/],
      [{ ...box, type: 'date', width: 0 }, /width: must be > 0/],
      [{ ...box, type: 'date', height: 0 }, /height: must be > 0/],
      [{ ...box, type: 'date', height: -0.05 }, /height: must be > 0/],
      [{ ...box, type: 'date', x: 0.9, width: 0.2 }, /x: x \+ width must be ≤ 1/],
      [{ ...box, type: 'date', y: 0.97, height: 0.05 }, /y: y \+ height must be ≤ 1/],
      [{ ...box, type: 'date', x: '0.1' }, /x: must be a number/],
      [{ ...box, type: 'signature' }, /type: must be/],
      [{ pageNumber: 1, x: 0, y: 0, width: 0.1, height: 0.1 }, /type: is required/],
      [{ ...box, type: 'mcq' }, /options\.choices: is required for type mcq/],
      [{ ...box, type: 'dropdown', options: { choices: [] } }, /options\.choices: must have at least 1 item/],
      [{ ...box, type: 'dropdown', options: { choices: ['a', ' '] } }, /options\.choices\[1\]: must not be blank/],
      [{ ...box, type: 'dropdown', options: { choices: ['a', 'a'] } }, /options\.choices: must not repeat/],
      [{ ...box, type: 'date', options: { choices: ['a'] } }, /options\.choices: is only for the types/],
      [{ ...box, type: 'date', options: { colour: 'red' } }, /^options\.colour: unknown key/],
      [{ ...box, type: 'short_text', defaultValue: '__today__' }, /defaultValue: "__today__" is only for date fields/],
      [{ ...box, type: 'date', defaultValue: '31/12/2026' }, /defaultValue: must be a date YYYY-MM-DD/],
      [{ ...box, type: 'date', defaultValue: '2026-02-29' }, /defaultValue: must be a date YYYY-MM-DD/],
      [{ ...box, type: 'mcq', options: { choices: ['a', 'b'] }, defaultValue: 'c' }, /defaultValue: must be one of options\.choices/],
      [{ ...box, type: 'digital_signature', defaultValue: 'x' }, /defaultValue: a digital_signature field cannot have a default value/],
      [{ ...box, type: 'date', direction: 'up' }, /direction: must be one of|direction: must be/],
      [{ ...box, type: 'date', label: '  ' }, /label: must not be blank/],
      [{ ...box, type: 'date', colour: 'red' }, /^colour: unknown key/],
      [{ ...box, type: 'date', pageNumber: 1, page_number: 2 }, /pageNumber: given twice/],
      [{ ...box, type: 'date', order: -1 }, /order: must be ≥ 0/],
    ];
    for (const [payload, hint] of bad) {
      const res = await post(doc, payload);
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().code, 'validation_failed');
      assert.match(res.json().hint, hint, `${JSON.stringify(payload)} → ${res.json().hint}`);
    }
    assert.deepEqual(await orders(doc), []);
    const ok: object[] = [
      { ...box, type: 'date', defaultValue: '__today__' },
      { ...box, type: 'date', defaultValue: '2026-02-28' },
      { ...box, type: 'mcq', options: { choices: ['Yes', 'No'] }, defaultValue: 'No' },
      { ...box, type: 'multi_select', options: { choices: ['a', 'b'] } },
      { ...box, type: 'short_text', direction: 'rtl', label: 'اسم', defaultValue: 'x' },
      { pageNumber: 3, x: 0.7, y: 0.9, width: 0.3, height: 0.1, type: 'initials' },
      { pageNumber: 1, x: 0.7, y: 0.1, width: 0.1 + 0.2, height: 0.05, type: 'checkbox' },
    ];
    for (const payload of ok) assert.equal((await post(doc, payload)).statusCode, 201, JSON.stringify(payload));
  });

  it('bulk creates all or none, in order, naming the bad item', async () => {
    const doc = await newDocument();
    const items = Array.from({ length: 5 }, (_, i) => ({ ...box, type: 'short_text', label: `F${i}` }));
    const bad = await bulk(doc, [...items.slice(0, 3), { ...box, type: 'short_text', x: 1.5 }, items[4]]);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().hint, /^fields\[3\]\.x: must be ≤ 1/);
    const badPage = await bulk(doc, [...items.slice(0, 2), { ...box, type: 'date', pageNumber: 9 }]);
    assert.match(badPage.json().hint, /^fields\[2\]\.pageNumber: must be a page of the document/);
    const unknownKey = await bulk(doc, [items[0], { ...box, type: 'date', colour: 'red' }]);
    assert.equal(unknownKey.statusCode, 400);
    assert.match(unknownKey.json().hint, /^fields\[1\]\.colour: unknown key \(allowed: /, 'the unknown key is named by its own path');
    const snakeUnknown = await bulk(doc, [{ ...box, type: 'date', options: { colour_name: 'red' } }]);
    assert.match(snakeUnknown.json().hint, /^fields\[0\]\.options\.colour_name: unknown key/, 'as the client wrote it');
    assert.deepEqual(await orders(doc), []);
    const created = await bulk(doc, items);
    assert.equal(created.statusCode, 201);
    assert.deepEqual(created.json().data.map((f: { label: string; order: number }) => `${f.order}:${f.label}`), ['0:F0', '1:F1', '2:F2', '3:F3', '4:F4']);
    assert.equal((await bulk(doc, [])).json().hint, 'fields: must have at least 1 item');
    const tooMany = await bulk(doc, Array.from({ length: 501 }, () => ({ ...box, type: 'date' })));
    assert.equal(tooMany.statusCode, 400);
    assert.match(tooMany.json().hint, /fields: must have at most 500 items/);
    const fiveHundred = await bulk(doc, Array.from({ length: 500 }, (_, i) => ({ ...box, type: 'date', label: `D${i}` })));
    assert.equal(fiveHundred.statusCode, 201);
    assert.equal(fiveHundred.json().data[499].order, 504);
    assert.equal((await bulk(doc, [{ ...box, type: 'date', order: 1 }])).statusCode, 400, 'bulk items append; order is not taken');
  });

  it('keeps order dense: insert at a position, move, move past the end, delete', async () => {
    const doc = await newDocument();
    const id: Record<string, string> = {};
    for (const label of ['A', 'B', 'C']) id[label] = (await post(doc, { ...box, type: 'date', label })).json().data.id;
    id.X = (await post(doc, { ...box, type: 'date', label: 'X', order: 1 })).json().data.id;
    assert.deepEqual(await orders(doc), ['0:A', '1:X', '2:B', '3:C']);
    id.Z = (await post(doc, { ...box, type: 'date', label: 'Z', order: 99 })).json().data.id;
    assert.deepEqual(await orders(doc), ['0:A', '1:X', '2:B', '3:C', '4:Z']);
    assert.equal((await put(doc, id.A!, { order: 3 })).json().data.order, 3);
    assert.deepEqual(await orders(doc), ['0:X', '1:B', '2:C', '3:A', '4:Z']);
    await put(doc, id.Z!, { order: 0 });
    assert.deepEqual(await orders(doc), ['0:Z', '1:X', '2:B', '3:C', '4:A']);
    assert.equal((await put(doc, id.X!, { order: 1000 })).json().data.order, 4);
    assert.deepEqual(await orders(doc), ['0:Z', '1:B', '2:C', '3:A', '4:X']);
    const del = await ctx.app.inject({ method: 'DELETE', url: url(doc, `/${id.B}`), headers });
    assert.deepEqual(del.json(), { success: true, data: { id: id.B, deleted: true } });
    assert.deepEqual(await orders(doc), ['0:Z', '1:C', '2:A', '3:X']);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: url(doc, `/${id.B}`), headers })).statusCode, 404);
  });

  it('concurrent creates never share an order', async () => {
    const doc = await newDocument();
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => post(doc, { ...box, type: 'date', label: `P${i}`, ...(i % 3 === 0 ? { order: 0 } : {}) })));
    assert.ok(results.every((r) => r.statusCode === 201));
    const list = await orders(doc);
    assert.deepEqual(list.map((s: string) => Number(s.split(':')[0])), Array.from({ length: 30 }, (_, i) => i));
  });

  it('updates only the given keys, validates the merged field, and marks the draft changed', async () => {
    const doc = await newDocument();
    await ctx.store.db.updateTable('documents').set({ has_unpublished_changes: 0 }).where('id', '=', doc).execute();
    const field = (await post(doc, { ...box, type: 'dropdown', options: { choices: ['a', 'b'] } })).json().data;
    let draft = (await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${doc}`, headers })).json().data;
    assert.equal(draft.hasUnpublishedChanges, true);

    const moved = await put(doc, field.id, { x: 0.5, label: 'Pick one' });
    assert.equal(moved.statusCode, 200);
    assert.deepEqual({ ...moved.json().data, updatedAt: undefined }, { ...field, x: 0.5, label: 'Pick one', updatedAt: undefined });
    assert.match((await put(doc, field.id, { x: 0.9 })).json().hint, /x \+ width must be ≤ 1/);
    assert.match((await put(doc, field.id, { type: 'short_text' })).json().hint, /options\.choices: is only for the types/);
    assert.equal((await put(doc, field.id, { type: 'short_text', options: {} })).json().data.type, 'short_text');
    assert.match((await put(doc, field.id, { pageNumber: 7 })).json().hint, /pageNumber: must be a page/);
    assert.match((await put(doc, field.id, { id: 'x' })).json().hint, /^id: unknown key/);

    await ctx.store.db.updateTable('documents').set({ has_unpublished_changes: 0 }).where('id', '=', doc).execute();
    const before = (await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${doc}`, headers })).json().data;
    const same = await put(doc, field.id, { x: 0.5 });
    assert.equal(same.statusCode, 200);
    const after = (await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${doc}`, headers })).json().data;
    assert.equal(after.hasUnpublishedChanges, false, 'a PUT that changes nothing is not a change');
    assert.equal(after.updatedAt, before.updatedAt);
    assert.equal(same.json().data.updatedAt, before.fields[0].updatedAt);
    await ctx.app.inject({ method: 'DELETE', url: url(doc, `/${field.id}`), headers });
    draft = (await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${doc}`, headers })).json().data;
    assert.equal(draft.hasUnpublishedChanges, true);
  });

  it('refuses every field change on an archived document, and reads still work', async () => {
    const doc = await newDocument();
    const field = (await post(doc, { ...box, type: 'date' })).json().data;
    await ctx.app.inject({ method: 'PUT', url: `/api/v1/documents/${doc}`, headers, payload: { status: 'archived' } });
    for (const res of [
      await post(doc, { ...box, type: 'date' }),
      await bulk(doc, [{ ...box, type: 'date' }]),
      await put(doc, field.id, { x: 0.2 }),
      await ctx.app.inject({ method: 'DELETE', url: url(doc, `/${field.id}`), headers }),
    ]) {
      assert.equal(res.statusCode, 409);
      assert.equal(res.json().code, 'document_not_editable');
    }
    assert.equal((await ctx.app.inject({ method: 'GET', url: url(doc), headers })).json().meta.total, 1);
  });

  it("answers 404 for a field of another document or workspace, and for malformed ids", async () => {
    const a = await newDocument();
    const b = await newDocument();
    const field = (await post(a, { ...box, type: 'date' })).json().data;
    assert.equal((await put(b, field.id, { x: 0.2 })).statusCode, 404);
    assert.equal((await put(b, field.id, { x: 0.2 })).json().hint, 'Field not found');
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: url(b, `/${field.id}`), headers })).statusCode, 404);
    assert.equal((await put(a, 'not-an-id', { x: 0.2 })).statusCode, 404);
    const stranger = bearer(await ctx.key(ALL, 'stranger'));
    const res = await ctx.app.inject({ method: 'PUT', url: url(a, `/${field.id}`), headers: stranger, payload: { x: 0.2 } });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().hint, 'Document not found');
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: url(a, `/${field.id}`), headers: stranger })).statusCode, 404);
    const readOnly = bearer(await ctx.key(['documents:read'], 'fields'));
    const denied = await post(a, { ...box, type: 'date' }, readOnly);
    assert.equal(denied.statusCode, 403);
    assert.equal((await ctx.app.inject({ method: 'GET', url: url(a), headers: readOnly })).statusCode, 200);
  });
});
