import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DiskBlobStore } from '../../src/blobs/disk.js';
import type { TempBlob } from '../../src/blobs/store.js';
import { sweepBlobs } from '../../src/blobs/sweep.js';
import { removeUnreferencedBlobs } from '../../src/store/blob-locks.js';
import { referencedBlobs } from '../../src/store/blob-locks.js';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { filesUnder, makePdf, multipart } from '../helpers/files.js';

/** A disk blob store that stops after committing a file until the test lets it go on. */
class GatedBlobs extends DiskBlobStore {
  gate: { reached: () => void; open: Promise<void> } | null = null;

  override async commit(temp: TempBlob, sha256: string): Promise<void> {
    await super.commit(temp, sha256);
    const gate = this.gate;
    if (gate) {
      gate.reached();
      await gate.open;
    }
  }

  /** Closes the gate; resolves `reached` when an upload is held there; call `open()` to let it go. */
  close(): { reached: Promise<void>; open: () => void } {
    let reached!: () => void;
    let open!: () => void;
    const reachedP = new Promise<void>((r) => (reached = r));
    const openP = new Promise<void>((r) => (open = r));
    this.gate = { reached, open: openP };
    return { reached: reachedP, open: () => ((this.gate = null), open()) };
  }
}

describe('an upload commits its file before the row\'s transaction', () => {
  let ctx: TestContext;
  let blobs: GatedBlobs;
  let headers: Record<string, string>;

  before(async () => {
    ctx = await createTestContext({ makeBlobs: (dir) => (blobs = new GatedBlobs(dir)) });
    headers = bearer(await ctx.key(['documents:read', 'documents:write', 'documents:delete', 'forms:write']));
  });
  after(() => ctx.close());

  function upload(pdf: Buffer) {
    const body = multipart([{ name: 'file', data: pdf, filename: 'a.pdf' }]);
    return ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
  }

  it('other writes go on while an upload\'s file is being committed (no write lock held across the fsync)', async () => {
    const gate = blobs.close();
    const pending = upload(await makePdf([{ width: 612, height: 792 }]));
    await gate.reached;
    // The upload is held after its file is in place and before its row: a write of another kind must not wait for it.
    const write = ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers: { ...headers, 'content-type': 'application/json' }, payload: { title: 'Meanwhile' } });
    const winner = await Promise.race([write.then(() => 'write'), new Promise((r) => setTimeout(() => r('timeout'), 2000))]);
    gate.open();
    assert.equal(winner, 'write');
    assert.equal((await write).statusCode, 201);
    assert.equal((await pending).statusCode, 201);
  });

  it('a permanent delete racing an upload of the same bytes never removes the file the new document needs', async () => {
    const pdf = await makePdf([{ width: 300, height: 300 }]);
    const first = await upload(pdf);
    assert.equal(first.statusCode, 201);
    const firstId = first.json().data.id;
    // A second upload of the same content: its commit finds the file and is held before its row.
    const gate = blobs.close();
    const second = upload(pdf);
    await gate.reached;
    const deleted = ctx.app.inject({ method: 'DELETE', url: `/api/v1/documents/${firstId}?permanent=true`, headers });
    // The delete removes the first row, then waits for the hash's lock before looking at the file.
    await new Promise((r) => setTimeout(r, 200));
    gate.open();
    assert.equal((await deleted).statusCode, 200);
    const secondRes = await second;
    assert.equal(secondRes.statusCode, 201);
    const file = await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${secondRes.json().data.id}/file`, headers });
    assert.equal(file.statusCode, 200);
    assert.deepEqual(file.rawPayload, pdf);
  });

  it('the periodic sweep removes an old unreferenced blob, spares a young one and every referenced one', async () => {
    const dir = path.join(ctx.dataDir, 'blobs');
    const before = new Set(filesUnder(dir));
    const put = (content: string, ageMs: number) => {
      const sha = crypto.createHash('sha256').update(content).digest('hex');
      const file = blobs.pathOf(sha);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, content);
      const at = new Date(Date.now() - ageMs);
      fs.utimesSync(file, at, at);
      return sha;
    };
    const old = put('crashed upload, an hour ago', 3_600_000);
    const young = put('upload in flight', 1000);
    const recheck = async (sha: string) => (await removeUnreferencedBlobs(ctx.store, blobs, [sha])).length > 0;
    const swept = await sweepBlobs(blobs, () => referencedBlobs(ctx.store.db), 600_000, Date.now(), recheck);
    assert.equal(swept.blobs, 1);
    assert.ok(!fs.existsSync(blobs.pathOf(old)));
    assert.ok(fs.existsSync(blobs.pathOf(young)));
    for (const file of before) assert.ok(fs.existsSync(path.join(dir, file)), 'a referenced blob was removed');
    // The recheck refuses to remove a blob a row refers to, even when asked to.
    const referenced = [...(await referencedBlobs(ctx.store.db))];
    assert.ok(referenced.length > 0);
    assert.deepEqual(await removeUnreferencedBlobs(ctx.store, blobs, referenced), []);
  });
});
