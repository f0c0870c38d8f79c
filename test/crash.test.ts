import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/store/keys.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/context.js';
import { filesUnder, makePdf } from './helpers/files.js';
import { freePort, waitFor } from './helpers/net.js';

const MAIN = path.resolve('dist/src/main.js');

describe('a server killed in the middle of an upload', () => {
  let database: TestDatabase;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let key: string;

  before(async () => {
    database = await createTestDatabase();
    const { databaseUrl, sqlitePath } = database.location;
    dataDir = databaseUrl ? fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-crash-')) : path.dirname(sqlitePath);
    env = { PATH: process.env.PATH, LOG_LEVEL: 'warn', DATA_DIR: dataDir, SOFFICE_PATH: 'off', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
    key = (await createKey(database.store.db, { workspace: 'crash', name: 'crash', grants: ['documents:write', 'documents:read'], expiresAt: null })).key;
  });
  after(async () => {
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function startServer(): Promise<{ child: ChildProcess; port: number }> {
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN, 'serve'], { env: { ...env, PORT: String(port) }, stdio: 'ignore' });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
    return { child, port };
  }

  async function documentRows(): Promise<number> {
    const r = await database.store.db.selectFrom('documents').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  it('leaves no row, blob or temporary file once it is started again', async () => {
    const first = await startServer();
    const exited = new Promise((resolve) => first.child.on('exit', resolve));

    // A 30 MB upload, of which only the first 8 MB arrive before the server dies.
    const boundary = 'crashboundary';
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n`);
    const total = head.length + 30 * 1024 * 1024;
    const req = http.request({
      host: '127.0.0.1',
      port: first.port,
      method: 'POST',
      path: '/api/v1/documents',
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': total },
    });
    req.on('error', () => {});
    req.write(head);
    req.write(Buffer.concat([Buffer.from('%PDF-1.7\n'), crypto.randomBytes(8 * 1024 * 1024)]));
    const tmp = path.join(dataDir, 'tmp');
    await waitFor(async () => filesUnder(tmp).some((f) => fs.statSync(path.join(tmp, f)).size > 1024 * 1024));
    first.child.kill('SIGKILL');
    await exited;
    req.destroy();
    assert.equal(filesUnder(tmp).length, 1, 'the killed upload left its temporary file behind');

    // A blob moved into place just before a crash, whose row was never written.
    const orphan = Buffer.from('orphan blob content');
    const orphanSha = crypto.createHash('sha256').update(orphan).digest('hex');
    const orphanPath = path.join(dataDir, 'blobs', orphanSha.slice(0, 2), orphanSha.slice(2, 4), orphanSha);
    fs.mkdirSync(path.dirname(orphanPath), { recursive: true });
    fs.writeFileSync(orphanPath, orphan);
    if (TEST_DB === 'postgres') {
      // With several servers on PostgreSQL a young unreferenced blob may be another server's
      // upload in flight: only blobs older than the grace period are swept there.
      const old = new Date(Date.now() - 60 * 60_000);
      fs.utimesSync(orphanPath, old, old);
    }

    const second = await startServer();
    try {
      assert.deepEqual(filesUnder(tmp), [], 'temporary files of the dead process are gone');
      assert.deepEqual(filesUnder(path.join(dataDir, 'blobs')), [], 'the orphan blob is gone');
      assert.equal(await documentRows(), 0);

      // And the server works: a real upload lands whole.
      const pdf = await makePdf([{ width: 612, height: 792 }]);
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(pdf)]), 'after.pdf');
      const res = await fetch(`http://127.0.0.1:${second.port}/api/v1/documents`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
      assert.equal(res.status, 201);
      assert.equal(await documentRows(), 1);
      assert.equal(filesUnder(path.join(dataDir, 'blobs')).length, 1);
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((resolve) => second.child.on('exit', resolve));
    }
  });
});
