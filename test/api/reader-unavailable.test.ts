import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PdfAnalyzer } from '../../src/files/pdf.js';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { filesUnder, makePdf, multipart } from '../helpers/files.js';

const DOCS = '/api/v1/documents';

/**
 * An upload that no PDF reader can take (its helper program stops while starting, as one would
 * that cannot be run): `503 unavailable` with `Retry-After`, in the error envelope, nothing kept,
 * an Idempotency-Key let go. The file is not at fault (API.md lists 503 for a service that cannot
 * take the request just now), so it is not 422.
 */
describe('documents: the PDF reader unavailable', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let dir: string;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-helper-'));
    const helper = path.join(dir, 'helper.mjs');
    fs.writeFileSync(helper, 'process.exit(3);\n');
    ctx = await createTestContext({ pdf: new PdfAnalyzer({ helperScript: helper }) });
    headers = bearer(await ctx.key(['documents:read', 'documents:write'], 'reader-down'));
  });
  after(async () => {
    await ctx.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 unavailable with Retry-After, keeps nothing, and lets the Idempotency-Key go', async () => {
    const pdf = await makePdf([{ width: 612, height: 792 }]);
    const blobsBefore = await ctx.storedBlobs();
    for (let attempt = 0; attempt < 2; attempt++) {
      const body = multipart([{ name: 'file', data: pdf, filename: 'contract.pdf' }]);
      const res = await ctx.app.inject({ method: 'POST', url: DOCS, headers: { ...headers, ...body.headers, 'idempotency-key': 'upload-1' }, payload: body.payload });
      // The second attempt runs again (not replayed, not 409): a 5xx lets the key go.
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.headers['retry-after'], '1');
      assert.equal(res.headers['idempotent-replayed'], undefined);
      const error = res.json();
      assert.equal(error.code, 'unavailable');
      assert.match(error.hint, /cannot read uploads just now .*nothing was stored/);
    }
    const list = await ctx.app.inject({ method: 'GET', url: DOCS, headers });
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual(list.json().data, [], 'no document');
    assert.deepEqual(await ctx.storedBlobs(), blobsBefore, 'nothing in the store, no upload, no journal row');
    assert.deepEqual(filesUnder(path.join(ctx.dataDir, 'tmp')), [], 'no staged file');
  });
});
