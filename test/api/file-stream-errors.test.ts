import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { DiskBlobStore } from '../../src/blobs/disk.js';
import type { BlobStore } from '../../src/blobs/store.js';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';

// A stored file whose stream fails once the download has set the file's headers (a descriptor
// limit reached, a disk error): the answer is the contract's JSON envelope, not Fastify's own.
describe('a download whose file stream fails', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let failing = false;

  before(async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-stream-errors-'));
    const disk: BlobStore = new DiskBlobStore(dataDir);
    const open = disk.open.bind(disk);
    disk.open = async (sha256, range) => {
      if (!failing) return open(sha256, range);
      const stream = new Readable({
        read() {
          this.destroy(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' }));
        },
      });
      return { stream, size: 100 };
    };
    ctx = await createTestContext({ dataDir, makeBlobs: () => disk });
    headers = bearer(await ctx.key(['documents:read', 'documents:write']));
  });
  after(() => ctx.close());

  it('is a 500 internal_error in the JSON envelope, without the file headers', async () => {
    const body = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'a.pdf' }]);
    const up = await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
    assert.equal(up.statusCode, 201, up.body);
    const id = up.json().data.id as string;
    const fine = await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${id}/file`, headers });
    assert.equal(fine.statusCode, 200);
    assert.equal(fine.headers['content-type'], 'application/pdf');

    failing = true;
    const failed = await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${id}/file`, headers });
    assert.equal(failed.statusCode, 500, failed.body);
    assert.match(String(failed.headers['content-type']), /^application\/json/);
    assert.equal(failed.json().success, false);
    assert.equal(failed.json().code, 'internal_error');
    for (const name of ['content-disposition', 'etag', 'accept-ranges', 'content-range']) assert.equal(failed.headers[name], undefined, name);
  });
});
