import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BlobStore } from '../src/blobs/store.js';
import { systemClock } from '../src/domain/clock.js';
import { deleteDocument } from '../src/services/delete-document.js';
import type { Deps } from '../src/services/deps.js';
import { journal } from '../src/store/blob-locks.js';
import { createKey } from '../src/store/keys.js';
import { createTestBlobs, createTestDatabase, TEST_DB, type TestBlobs, type TestDatabase } from './helpers/context.js';
import { filesUnder, makePdf } from './helpers/files.js';
import { freePort, waitFor } from './helpers/net.js';

const MAIN = path.resolve('dist/src/main.js');

/**
 * SIGKILL in the middle of an upload and of permanent deletes, on each blob store (disk and s3
 * always, postgres on the PostgreSQL run): once the server is started again and has swept, no
 * row points at a missing file and no stored file is unreferenced.
 */
const KINDS = (['disk', 's3', 'postgres'] as const).filter((kind) => kind !== 'postgres' || TEST_DB === 'postgres');

for (const kind of KINDS) {
  describe(`a server killed in the middle of an upload and of deletes (${kind} store)`, () => {
    let database: TestDatabase;
    let dataDir: string;
    let test: TestBlobs;
    let env: NodeJS.ProcessEnv;
    let key: string;

    before(async () => {
      database = await createTestDatabase();
      const { databaseUrl, sqlitePath } = database.location;
      dataDir = databaseUrl ? fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-crash-')) : path.dirname(sqlitePath);
      test = await createTestBlobs(kind, dataDir, database.store);
      env = { PATH: process.env.PATH, LOG_LEVEL: 'warn', DATA_DIR: dataDir, SOFFICE_PATH: 'off', ...test.env, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
      key = (await createKey(database.store.db, { workspace: 'crash', name: 'crash', grants: ['documents:write', 'documents:read', 'documents:delete'], expiresAt: null })).key;
    });
    after(async () => {
      await test.close();
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    async function startServer(): Promise<{ child: ChildProcess; port: number; exited: Promise<unknown> }> {
      const port = await freePort();
      const child = spawn(process.execPath, [MAIN, 'serve', '--no-worker'], { env: { ...env, PORT: String(port) }, stdio: 'ignore' });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
      return { child, port, exited };
    }

    async function upload(port: number, pdf: Buffer): Promise<{ id: string; sha256: string }> {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(pdf)]), 'doc.pdf');
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/documents`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
      assert.equal(res.status, 201);
      return ((await res.json()) as { data: { id: string; sha256: string } }).data;
    }

    async function stored(): Promise<string[]> {
      const all: string[] = [];
      for await (const sha of test.blobs.list()) all.push(sha);
      return all.sort();
    }

    /** Uploads left in the store uncommitted (chunks, objects under `uploads/`, listable multipart uploads). */
    async function uploadsInStore(): Promise<string[]> {
      const all: string[] = [];
      for await (const id of test.blobs.listUploads()) all.push(id);
      return all.sort();
    }

    /** Every row's file is stored, every stored file has a row, no upload is left in the store, and both journals are settled. */
    async function consistent(): Promise<number> {
      const rows = await database.store.db.selectFrom('documents').select(['sha256']).execute();
      const referenced = [...new Set(rows.map((r) => r.sha256))].sort();
      for (const sha of referenced) assert.ok(await test.blobs.stat(sha), `a row points at the missing file ${sha}`);
      assert.deepEqual(await stored(), referenced, 'no stored file without a row');
      assert.deepEqual(await uploadsInStore(), [], 'no upload left in the store');
      assert.deepEqual(await database.store.db.selectFrom('blob_checks').selectAll().execute(), [], 'the journal is settled');
      assert.deepEqual(await database.store.db.selectFrom('blob_uploads').selectAll().execute(), [], 'the upload journal is settled');
      return rows.length;
    }

    it('leaves no dangling row, unreferenced file or staged file once it is started again', async () => {
      const first = await startServer();
      // Documents to delete: five, each of its own bytes.
      const docs = [];
      for (let i = 0; i < 5; i++) docs.push(await upload(first.port, await makePdf([{ width: 300 + i, height: 400 }])));

      // A 30 MB upload, of which only the first 8 MB arrive before the server dies, while the
      // permanent deletes of the five documents are under way.
      const boundary = 'crashboundary';
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n`);
      const req = http.request({
        host: '127.0.0.1',
        port: first.port,
        method: 'POST',
        path: '/api/v1/documents',
        headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + 30 * 1024 * 1024 },
      });
      req.on('error', () => {});
      req.write(head);
      req.write(Buffer.concat([Buffer.from('%PDF-1.7\n'), crypto.randomBytes(8 * 1024 * 1024)]));
      const tmp = path.join(dataDir, 'tmp');
      await waitFor(async () => filesUnder(tmp).some((f) => fs.statSync(path.join(tmp, f)).size > 1024 * 1024));
      // Streaming stores: until the store holds part of it (s3: its multipart upload started by the first 5 MiB part).
      if (kind === 'postgres') await waitFor(async () => (await uploadsInStore()).length > 0);
      if (kind === 's3') await waitFor(async () => Boolean((await database.store.db.selectFrom('blob_uploads').select('ref').executeTakeFirst())?.ref));
      const deletes = docs.map((d) =>
        fetch(`http://127.0.0.1:${first.port}/api/v1/documents/${d.id}?permanent=true`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } }).catch(() => null),
      );
      // Killed as soon as the first delete has answered: the others are anywhere in between.
      await Promise.race(deletes);
      first.child.kill('SIGKILL');
      await first.exited;
      req.destroy();
      await Promise.all(deletes);
      assert.equal(filesUnder(tmp).length, 1, 'the killed upload left its staged file behind');
      if (kind !== 'disk') {
        // It was streaming into the store too: its journal row is there, and (postgres) its chunks.
        const journal = await database.store.db.selectFrom('blob_uploads').select(['id', 'ref']).execute();
        assert.equal(journal.length, 1, 'the killed upload\'s journal row');
        if (kind === 'postgres') assert.deepEqual(await uploadsInStore(), [journal[0]!.id], 'its chunks, uncommitted');
        if (kind === 's3') assert.ok(journal[0]!.ref, 'its multipart upload was started and its id kept');
      }

      // The exact crash points, as a SIGKILL there leaves them: a file put with its journal entry
      // but no row (between an upload's put and its row), and a row deleted with its journal
      // entry but its file still stored (between a delete's commit and its file's removal).
      const orphan = Buffer.from('orphan blob content');
      const orphanSha = crypto.createHash('sha256').update(orphan).digest('hex');
      await journal(database.store.db, [orphanSha], 'upload');
      const staged = path.join(dataDir, 'orphan');
      fs.writeFileSync(staged, orphan);
      await test.blobs.put(staged, orphanSha, orphan.length);
      fs.rmSync(staged, { force: true });
      const second = await startServer();
      const kept = await upload(second.port, await makePdf([{ width: 612, height: 792 }]));
      const doomed = await upload(second.port, await makePdf([{ width: 611, height: 791 }]));
      second.child.kill('SIGKILL');
      await second.exited;
      const workspace = (await database.store.db.selectFrom('documents').select('workspace_id').where('id', '=', doomed.id).executeTakeFirstOrThrow()).workspace_id;
      // The delete use case itself, with a store that dies before removing the file.
      const dying: BlobStore = Object.assign(Object.create(test.blobs) as BlobStore, {
        delete: async () => {
          throw new Error('killed before the file was removed');
        },
      });
      let cleanupError: unknown = null;
      await deleteDocument({ store: database.store, blobs: dying, clock: systemClock } as unknown as Deps, { keyId: 'k', workspaceId: workspace, grants: new Set(), expiresAt: null }, {
        documentId: doomed.id,
        permanent: true,
        onCleanupError: (error) => (cleanupError = error),
      });
      assert.match(String(cleanupError), /killed/);
      assert.ok(await test.blobs.stat(doomed.sha256), 'the deleted row\'s file is still there, as after a crash');

      if (TEST_DB === 'postgres') {
        // With several servers on PostgreSQL a young journal entry may be another server's upload
        // in flight: only entries older than the grace period (10 minutes) are swept there.
        await database.store.db.updateTable('blob_checks').set({ created_at: new Date(Date.now() - 60 * 60_000).toISOString() }).execute();
        // And an upload's journal row only once it is older than the request timeout and the grace period.
        await database.store.db.updateTable('blob_uploads').set({ created_at: new Date(Date.now() - 24 * 60 * 60_000).toISOString() }).execute();
      }

      const third = await startServer();
      try {
        assert.deepEqual(filesUnder(tmp), [], 'staged files of the dead process are gone');
        const rows = await consistent();
        // s3rver can neither list nor abort multipart uploads (S3 can: the sweep aborted the
        // killed upload's by the id its journal row kept): the stand-in keeps that one's parts.
        assert.ok(test.openMultipartUploads().length <= 1, `s3rver keeps only the killed upload's parts: ${test.openMultipartUploads().join(', ')}`);
        assert.ok(!(await stored()).includes(orphanSha), 'the orphan is gone');
        assert.ok(!(await stored()).includes(doomed.sha256), 'the deleted document\'s file is gone');
        assert.ok((await stored()).includes(kept.sha256));
        // And the server works: a real upload lands whole.
        await upload(third.port, await makePdf([{ width: 500, height: 500 }]));
        assert.equal(await consistent(), rows + 1);
      } finally {
        third.child.kill('SIGTERM');
        await third.exited;
      }
    });
  });
}
