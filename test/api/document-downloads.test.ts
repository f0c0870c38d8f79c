import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { largePdf, makePdf, multipart } from '../helpers/files.js';

const DOCS = '/api/v1/documents';

/** GET …/file with Range, ETag and If-None-Match, and the signed downloadUrl, on the tests' blob store (FORMSIGN_TEST_BLOB_STORE). */
describe('document downloads', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let now = Date.now();
  let pdf: Buffer;
  let doc: { id: string; sha256: string; downloadUrl: string; originalUrl: string };

  before(async () => {
    ctx = await createTestContext({ now: () => now });
    headers = bearer(await ctx.key(['documents:read', 'documents:write', 'documents:delete']));
    // Several MiB, so that a range crosses the PostgreSQL store's 1 MiB chunks.
    pdf = await largePdf(3 * 1024 * 1024);
    const body = multipart([{ name: 'file', data: pdf, filename: 'big.pdf' }]);
    const res = await ctx.app.inject({ method: 'POST', url: DOCS, headers: { ...headers, ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 201, res.body);
    doc = res.json().data;
  });
  after(() => ctx.close());

  const get = (url: string, extra: Record<string, string> = {}) => ctx.app.inject({ method: 'GET', url, headers: { ...headers, ...extra } });

  it('serves the whole file with a strong ETag; If-None-Match answers 304', async () => {
    const res = await get(doc.originalUrl);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers.etag, `"${doc.sha256}"`);
    assert.equal(res.headers['accept-ranges'], 'bytes');
    assert.ok(res.rawPayload.equals(pdf));
    const again = await get(doc.originalUrl, { 'if-none-match': `W/"x", "${doc.sha256}"` });
    assert.equal(again.statusCode, 304);
    assert.equal(again.rawPayload.length, 0);
    assert.equal((await get(doc.originalUrl, { 'if-none-match': '"other"' })).statusCode, 200);
  });

  it('serves byte ranges (across chunk boundaries, open-ended, suffix) and refuses one past the end with 416', async () => {
    const size = pdf.length;
    for (const [header, start, end] of [
      ['bytes=0-9', 0, 9],
      [`bytes=${1024 * 1024 - 5}-${2 * 1024 * 1024 + 5}`, 1024 * 1024 - 5, 2 * 1024 * 1024 + 5],
      [`bytes=${size - 100}-`, size - 100, size - 1],
      ['bytes=-7', size - 7, size - 1],
      [`bytes=10-${size + 1000}`, 10, size - 1],
    ] as const) {
      const res = await get(doc.originalUrl, { range: header });
      assert.equal(res.statusCode, 206, header);
      assert.equal(res.headers['content-range'], `bytes ${start}-${end}/${size}`);
      assert.ok(res.rawPayload.equals(pdf.subarray(start, end + 1)), header);
    }
    const past = await get(doc.originalUrl, { range: `bytes=${size}-` });
    assert.equal(past.statusCode, 416);
    assert.equal(past.json().code, 'range_not_satisfiable');
    assert.equal(past.headers['content-range'], `bytes */${size}`);
    // Several ranges, or an If-Range that no longer matches: the whole file.
    assert.equal((await get(doc.originalUrl, { range: 'bytes=0-1,5-6' })).statusCode, 200);
    assert.equal((await get(doc.originalUrl, { range: 'bytes=0-1', 'if-range': '"stale"' })).statusCode, 200);
  });

  it('a downloadUrl is absolute, made at each read, works without the key until it expires', async () => {
    const url = new URL(doc.downloadUrl);
    assert.match(url.protocol, /^https?:$/);
    if (ctx.blobs.kind === 's3') {
      // A presigned URL of the bucket: fetched from the object storage itself.
      const res = await fetch(doc.downloadUrl);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/pdf');
      assert.match(res.headers.get('content-disposition') ?? '', /big\.pdf/);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(pdf));
      return;
    }
    assert.equal(url.pathname, doc.originalUrl);
    const path = `${url.pathname}${url.search}`;
    const res = await ctx.app.inject({ method: 'GET', url: path });
    assert.equal(res.statusCode, 200, res.body);
    assert.ok(res.rawPayload.equals(pdf));
    // Ranges work through it too.
    const part = await ctx.app.inject({ method: 'GET', url: path, headers: { range: 'bytes=0-4' } });
    assert.equal(part.statusCode, 206);
    assert.equal(part.rawPayload.toString(), '%PDF-');
    // Each read makes a new one, valid for 15 minutes from then.
    now += 60_000;
    const later = (await get(`${DOCS}/${doc.id}`)).json().data.downloadUrl as string;
    assert.notEqual(later, doc.downloadUrl);
    assert.equal(Number(new URL(later).searchParams.get('expires')), Math.floor(now / 1000) + 900);
    // Past its time: refused.
    now += 15 * 60_000;
    const expired = await ctx.app.inject({ method: 'GET', url: path });
    assert.equal(expired.statusCode, 403);
    assert.equal(expired.json().code, 'invalid_signature');
    assert.match(expired.json().hint, /expired/);
    now -= 16 * 60_000;
  });

  it('refuses a tampered signed URL (signature, expiry or document) with 403 invalid_signature', async () => {
    if (ctx.blobs.kind === 's3') return; // presigned by the object storage, which checks its own signatures
    const url = new URL(doc.downloadUrl);
    const signature = url.searchParams.get('signature')!;
    const expires = url.searchParams.get('expires')!;
    const other = (await get(`${DOCS}?limit=1`)).json().data[0].id as string;
    const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
    for (const query of [
      `?expires=${expires}&signature=${flipped}`,
      `?expires=${Number(expires) + 3600}&signature=${signature}`,
      `?signature=${signature}`,
      `?expires=${expires}&signature=short`,
      // Malformed parts are tampering too, not a validation error, and a URL stripped of its
      // signature is not asked for a key.
      `?expires=${expires}x&signature=${signature}`,
      `?expires=-1&signature=${signature}`,
      `?expires=${expires}&signature=${signature}${'A'.repeat(80)}`,
      `?expires=${expires}`,
      `?expires=&signature=`,
    ]) {
      const res = await ctx.app.inject({ method: 'GET', url: `${doc.originalUrl}${query}` });
      assert.equal(res.statusCode, 403, query);
      assert.equal(res.json().code, 'invalid_signature');
    }
    // Another document's id under this signature: refused, and says nothing of that document.
    const moved = await ctx.app.inject({ method: 'GET', url: `${DOCS}/00000000-0000-7000-8000-000000000000/file${url.search}` });
    assert.equal(moved.statusCode, 403);
    assert.ok(other);
    // Without a signature the key is needed, as before.
    assert.equal((await ctx.app.inject({ method: 'GET', url: doc.originalUrl })).statusCode, 401);
  });

  it('a permanently deleted document\'s signed URL answers 404', async () => {
    if (ctx.blobs.kind === 's3') return;
    const pdf2 = await makePdf([{ width: 200, height: 200 }]);
    const body = multipart([{ name: 'file', data: pdf2, filename: 'gone.pdf' }]);
    const created = (await ctx.app.inject({ method: 'POST', url: DOCS, headers: { ...headers, ...body.headers }, payload: body.payload })).json().data;
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `${DOCS}/${created.id}?permanent=true`, headers })).statusCode, 200);
    const url = new URL(created.downloadUrl);
    const res = await ctx.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
    assert.equal(res.statusCode, 404);
    assert.equal((await ctx.storedBlobs()).includes(created.sha256), false);
  });

  it('a document whose stored file is missing answers 500 file_unavailable in the envelope (with the key and through its signed URL)', async () => {
    const lost = await makePdf([{ width: 210, height: 297 }]);
    const body = multipart([{ name: 'file', data: lost, filename: 'lost.pdf' }]);
    const created = (await ctx.app.inject({ method: 'POST', url: DOCS, headers: { ...headers, ...body.headers }, payload: body.payload })).json().data;
    // Lost outside formsign (an operator's mistake, a restored backup): formsign never leaves a row without its file.
    await ctx.blobs.delete(created.sha256);
    const withKey = await get(created.originalUrl);
    assert.equal(withKey.statusCode, 500);
    assert.equal(withKey.json().success, false);
    assert.equal(withKey.json().code, 'file_unavailable');
    assert.match(withKey.json().hint, /missing from the service's file store/);
    assert.doesNotMatch(withKey.json().hint, /[0-9a-f]{64}|\//, 'no hash, no path');
    if (ctx.blobs.kind !== 's3') {
      const url = new URL(created.downloadUrl);
      const signed = await ctx.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
      assert.equal(signed.statusCode, 500);
      assert.equal(signed.json().code, 'file_unavailable');
    }
  });
});
