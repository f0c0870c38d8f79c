import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import os from 'node:os';
import type { Kysely } from 'kysely';
import type { BlobStore, BlobUpload, ByteRange, PresignOptions, StartUploadOptions } from '../../src/blobs/store.js';
import { journal, removeUnreferencedBlobs, sweepBlobJournal } from '../../src/store/blob-locks.js';
import { bearer, createTestBlobs, createTestContext, createTestDatabase, TEST_BLOB_STORE, type TestBlobs, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';

/** A blob store (the tests' own kind) that stops after putting or committing a file until the test lets it go on. */
class GatedBlobs implements BlobStore {
  gate: { reached: () => void; open: Promise<void> } | null = null;
  constructor(readonly inner: BlobStore) {}
  get kind() {
    return this.inner.kind;
  }

  private async gated(): Promise<void> {
    const gate = this.gate;
    if (gate) {
      gate.reached();
      await gate.open;
    }
  }

  async put(file: string, sha256: string, size: number): Promise<void> {
    await this.inner.put(file, sha256, size);
    await this.gated();
  }
  prepare(file: string) {
    return this.inner.prepare(file);
  }
  startUpload(id: string, options: StartUploadOptions): BlobUpload | null {
    const writer = this.inner.startUpload(id, options);
    if (!writer) return null;
    return {
      write: (chunk) => writer.write(chunk),
      end: () => writer.end(),
      abort: () => writer.abort(),
      commit: async (sha256: string, size: number, db: Kysely<any>) => {
        await writer.commit(sha256, size, db);
        await this.gated();
      },
    };
  }
  discardUpload(id: string, ref: string | null, db: Kysely<any>) {
    return this.inner.discardUpload(id, ref, db);
  }
  listUploads() {
    return this.inner.listUploads();
  }
  open(sha256: string, range?: ByteRange) {
    return this.inner.open(sha256, range);
  }
  stat(sha256: string) {
    return this.inner.stat(sha256);
  }
  delete(sha256: string) {
    return this.inner.delete(sha256);
  }
  list() {
    return this.inner.list();
  }
  sweepPartial(olderThan: number) {
    return this.inner.sweepPartial(olderThan);
  }
  presign(sha256: string, options: PresignOptions) {
    return this.inner.presign(sha256, options);
  }
  check() {
    return this.inner.check();
  }
  close() {
    return this.inner.close();
  }

  /** Closes the gate; resolves `reached` when an upload is held there; call `open()` to let it go. */
  hold(): { reached: Promise<void>; open: () => void } {
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
  let inner: TestBlobs;
  let headers: Record<string, string>;

  before(async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-gated-'));
    const database = await createTestDatabase();
    inner = await createTestBlobs(TEST_BLOB_STORE, dataDir, database.store);
    blobs = new GatedBlobs(inner.blobs);
    ctx = await createTestContext({ database, dataDir, makeBlobs: () => blobs });
    headers = bearer(await ctx.key(['documents:read', 'documents:write', 'documents:delete', 'forms:write']));
  });
  after(async () => {
    await ctx.close();
    await inner.close().catch(() => {});
    await ctx.database.drop();
    fs.rmSync(ctx.dataDir, { recursive: true, force: true });
  });

  function upload(pdf: Buffer) {
    const body = multipart([{ name: 'file', data: pdf, filename: 'a.pdf' }]);
    return ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
  }

  it('other writes go on while an upload\'s file is being committed (no write lock held across the fsync)', async () => {
    const gate = blobs.hold();
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
    const gate = blobs.hold();
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

  it('the sweep settles old journal entries (an orphan goes, a referenced file stays) and spares young ones', async () => {
    const before = await ctx.storedBlobs();
    const put = async (content: string) => {
      const sha = crypto.createHash('sha256').update(content).digest('hex');
      const temp = await ctx.staging.createTemp();
      fs.writeFileSync(temp.path, content);
      await blobs.put(temp.path, sha, Buffer.byteLength(content));
      await temp.discard();
      return sha;
    };
    // As a crash leaves them: a file put, its journal entry, no row.
    const old = await put('crashed upload, an hour ago');
    const young = await put('upload in flight');
    const [referenced] = before;
    assert.ok(referenced, 'an earlier test stored a document');
    await journal(ctx.store.db, [old, referenced!], 'upload');
    await ctx.store.db.updateTable('blob_checks').set({ created_at: new Date(Date.now() - 3_600_000).toISOString() }).execute();
    await journal(ctx.store.db, [young], 'upload');
    const swept = await sweepBlobJournal(ctx.store, blobs, 600_000);
    assert.deepEqual(swept, { checked: 2, removed: 1 });
    assert.deepEqual(await ctx.storedBlobs(), [...before, young].sort(), 'the old orphan is gone; the referenced and the young one stay');
    const left = await ctx.store.db.selectFrom('blob_checks').select('sha256').execute();
    assert.deepEqual(left.map((r) => r.sha256), [young], 'settled entries are gone');
    // The young one, once old, goes too; a delete's check never removes a file a row refers to.
    assert.deepEqual(await sweepBlobJournal(ctx.store, blobs, 0, Date.now() + 1000), { checked: 1, removed: 1 });
    assert.deepEqual(await removeUnreferencedBlobs(ctx.store, blobs, before), []);
    assert.deepEqual(await ctx.storedBlobs(), before);
  });
});
