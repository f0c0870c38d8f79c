import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/store/keys.js';
import { createTestBlobs, createTestDatabase, TEST_DB, TEST_REDIS_URL, type TestBlobs, type TestDatabase } from './helpers/context.js';
import { filesUnder } from './helpers/files.js';
import { freePort, waitFor } from './helpers/net.js';

const MAIN = path.resolve('dist/src/main.js');
const CORPUS_PDF = path.resolve(import.meta.dirname, '../../shared/corpus/forms/irs-f1310-offset.pdf');

/**
 * Two `serve` processes with their own DATA_DIR (two machines) and one `worker`, sharing
 * PostgreSQL (and Redis, when the run has it), with the files in PostgreSQL and in S3 (s3rver):
 * upload on A; download, parse and delete through B and the worker; nothing left anywhere.
 */
const skip = TEST_DB === 'postgres' ? false : 'needs PostgreSQL (FORMSIGN_TEST_DB=postgres)';

for (const kind of ['postgres', 's3'] as const) {
  describe(`two servers and a worker on other machines share the stored files (${kind})`, { skip }, () => {
    let database: TestDatabase;
    let test: TestBlobs;
    let key: string;
    const dirs: string[] = [];
    const children: ChildProcess[] = [];
    let a: string;
    let b: string;
    let stopping = false;
    /** Processes that ended before the test stopped them, with the end of their output. */
    const died: string[] = [];

    function start(args: string[], dataDir: string, port?: number): ChildProcess {
      const env = {
        PATH: process.env.PATH,
        LOG_LEVEL: 'warn',
        DATA_DIR: dataDir,
        SOFFICE_PATH: 'off',
        DATABASE_URL: database.location.databaseUrl!,
        ...(TEST_REDIS_URL ? { REDIS_URL: TEST_REDIS_URL } : {}),
        ...test.env,
        ...(port ? { PORT: String(port) } : {}),
      };
      const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      const name = `${args[0]} (${path.basename(dataDir)})`;
      let output = '';
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      child.on('exit', (code, signal) => {
        if (!stopping) died.push(`${name} exited (${code ?? signal}):\n${output.slice(-4000)}`);
      });
      children.push(child);
      return child;
    }

    before(async () => {
      database = await createTestDatabase();
      for (let i = 0; i < 3; i++) dirs.push(fs.mkdtempSync(path.join(os.tmpdir(), `formsign-machine-${i}-`)));
      test = await createTestBlobs(kind, dirs[2]!, database.store);
      key = (await createKey(database.store.db, { workspace: 'two', name: 'two', grants: ['documents:read', 'documents:write', 'documents:delete', 'documents:parse_ai'], expiresAt: null })).key;
      const [portA, portB] = [await freePort(), await freePort()];
      start(['serve', '--no-worker'], dirs[0]!, portA);
      start(['serve', '--no-worker'], dirs[1]!, portB);
      start(['worker'], dirs[2]!);
      a = `http://127.0.0.1:${portA}/api/v1`;
      b = `http://127.0.0.1:${portB}/api/v1`;
      for (const base of [a, b]) await waitFor(async () => (await fetch(base.replace('/api/v1', '/healthz'))).ok);
    });
    after(async () => {
      stopping = true;
      for (const child of children) child.kill('SIGTERM');
      await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.on('exit', r)) : null)));
      await test.close();
      await database.drop();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    });

    const auth = () => ({ authorization: `Bearer ${key}` });
    async function json(res: Response, status: number) {
      const body = (await res.json()) as { data: any };
      assert.equal(res.status, status, JSON.stringify(body));
      return body.data;
    }
    async function parse(base: string, id: string) {
      const job = await json(await fetch(`${base}/documents/${id}/parse-jobs`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ applyMode: 'preview', engine: 'layout' }) }), 202);
      let current = job;
      await waitFor(async () => {
        assert.deepEqual(died, []);
        current = await json(await fetch(`${a}/documents/${id}/parse-jobs/${job.id}`, { headers: auth() }), 200);
        return current.status === 'completed' || current.status === 'failed';
      }, 90_000, 200).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}; job ${JSON.stringify(current)}; ${died.join('\n') || 'every process still runs'}`);
      });
      return current;
    }

    it('upload on A; download (with the key and by downloadUrl), parse and permanent delete through B and the worker', async () => {
      const pdf = fs.readFileSync(CORPUS_PDF);
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(pdf)]), 'f1310.pdf');
      const doc = await json(await fetch(`${a}/documents`, { method: 'POST', headers: auth(), body: form }), 201);

      const file = await fetch(`${b}/documents/${doc.id}/file`, { headers: auth() });
      assert.equal(file.status, 200);
      assert.ok(Buffer.from(await file.arrayBuffer()).equals(pdf), 'B serves the bytes uploaded on A');
      const viaB = await json(await fetch(`${b}/documents/${doc.id}`, { headers: auth() }), 200);
      const signed = await fetch(viaB.downloadUrl);
      assert.equal(signed.status, 200, 'the downloadUrl works without the key');
      assert.ok(Buffer.from(await signed.arrayBuffer()).equals(pdf));

      const job = await parse(b, doc.id);
      assert.equal(job.status, 'completed', JSON.stringify(job.error));
      assert.equal(job.result.fields.length, 27, 'the worker read the whole file');

      assert.equal((await fetch(`${b}/documents/${doc.id}?permanent=true`, { method: 'DELETE', headers: auth() })).status, 200);
      assert.equal(await test.blobs.stat(doc.sha256), null, 'no file in the shared store');
      const left: string[] = [];
      for await (const sha of test.blobs.list()) left.push(sha);
      assert.deepEqual(left, []);
      for (const dir of dirs) assert.deepEqual(filesUnder(path.join(dir, 'blobs')), [], `nothing under ${dir}/blobs`);
      for (const dir of dirs) assert.deepEqual(filesUnder(path.join(dir, 'tmp')), [], `nothing staged under ${dir}/tmp`);
    });

    it('a parse job whose file is gone from the store fails at once as file_unavailable, not as a detection failure', async () => {
      const pdf = fs.readFileSync(CORPUS_PDF);
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(pdf)]), 'f1310.pdf');
      const doc = await json(await fetch(`${a}/documents`, { method: 'POST', headers: auth(), body: form }), 201);
      await test.blobs.delete(doc.sha256);
      const job = await parse(b, doc.id);
      assert.equal(job.status, 'failed');
      assert.equal(job.error.code, 'file_unavailable');
      assert.match(job.error.message, /missing/);
      const row = await database.store.db.selectFrom('jobs').select(['attempts']).where('id', '=', job.id).executeTakeFirstOrThrow();
      assert.equal(Number(row.attempts), 1, 'not retried: the file will not come back');
      // And the file route says the same: 500 file_unavailable, in the envelope, logged.
      const missing = await fetch(`${b}/documents/${doc.id}/file`, { headers: auth() });
      assert.equal(missing.status, 500);
      const body = (await missing.json()) as { success: boolean; code: string; hint: string };
      assert.equal(body.success, false);
      assert.equal(body.code, 'file_unavailable');
      assert.match(body.hint, /missing/);
    });
  });
}
