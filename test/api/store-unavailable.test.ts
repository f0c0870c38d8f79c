import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { S3BlobStore, s3Unavailable } from '../../src/blobs/s3.js';
import { bearer, createTestContext, createTestDatabase, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';
import { startTestS3, type TestS3 } from '../helpers/s3.js';

describe('s3Unavailable: which errors of the S3 client mean the storage could not serve', () => {
  it('a lost or refused connection, a time limit and 500/502/503/504 do; 501, 4xx and others do not', () => {
    const status = (code: number, name = 'Error') => Object.assign(new Error(name), { name, $metadata: { httpStatusCode: code } });
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']) assert.equal(s3Unavailable(Object.assign(new Error(code), { code })), true, code);
    assert.equal(s3Unavailable(Object.assign(new Error('slow'), { name: 'TimeoutError' })), true);
    for (const code of [500, 502, 503, 504]) assert.equal(s3Unavailable(status(code)), true, String(code));
    assert.equal(s3Unavailable(status(503, 'SlowDown')), true);
    // 501: an operation the storage does not implement (s3rver's multipart listing), handled by the store.
    for (const code of [400, 403, 404, 405, 501]) assert.equal(s3Unavailable(status(code)), false, String(code));
    assert.equal(s3Unavailable(new Error('the staged file does not have its recorded size')), false);
    assert.equal(s3Unavailable(null), false);
  });
});

describe('an object storage that stops answering', () => {
  let ctx: TestContext;
  let s3: TestS3;
  let blobs: S3BlobStore;
  let headers: Record<string, string>;
  let stopped = false;

  before(async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-s3-down-'));
    const database = await createTestDatabase();
    s3 = await startTestS3();
    blobs = new S3BlobStore(s3.config);
    ctx = await createTestContext({ database, dataDir, makeBlobs: () => blobs });
    headers = bearer(await ctx.key(['documents:read', 'documents:write']));
  });
  after(async () => {
    await ctx.close();
    if (!stopped) await s3.close();
    await ctx.database.drop();
    fs.rmSync(ctx.dataDir, { recursive: true, force: true });
  });

  async function upload(pdf: Buffer) {
    const body = multipart([{ name: 'file', data: pdf, filename: 'a.pdf' }]);
    return ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
  }

  it('is answered 503 unavailable with Retry-After and the file storage named (not the database), and an upload meeting it stores nothing', async () => {
    const first = await upload(await makePdf([{ width: 612, height: 792 }]));
    assert.equal(first.statusCode, 201, first.body);
    const id = first.json().data.id as string;

    await s3.close();
    stopped = true;

    const file = await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${id}/file`, headers });
    assert.equal(file.statusCode, 503, file.body);
    assert.equal(file.json().code, 'unavailable');
    assert.match(file.json().hint, /file storage/);
    assert.doesNotMatch(file.json().hint, /database/);
    assert.equal(file.headers['retry-after'], '1');

    const second = await upload(await makePdf([{ width: 300, height: 400 }]));
    assert.equal(second.statusCode, 503, second.body);
    assert.equal(second.json().code, 'unavailable');
    assert.match(second.json().hint, /file storage/);

    // The database still answers: the refused upload left no document.
    const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/documents', headers });
    assert.equal(list.statusCode, 200);
    assert.deepEqual(
      list.json().data.map((d: { id: string }) => d.id),
      [id],
    );
  });
});
