import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { bearer, createTestContext, createTestDatabase, TEST_DB, type TestContext, type TestDatabase } from '../helpers/context.js';
import { multipart } from '../helpers/files.js';

const MAIN = path.resolve('dist/src/main.js');

/** A PDF of `pages` pages with one signature tag each: slow enough to kill a worker in the middle. */
async function taggedPdf(pages: number, salt: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 0; i < pages; i++) {
    const page = doc.addPage([612, 792]);
    for (let line = 0; line < 40; line++) page.drawText(`${salt} line ${line} of page ${i + 1}: some printed text to read`, { x: 50, y: 760 - line * 18, size: 9, font });
    page.drawText(`{{Signature ${i + 1};type=digital_signature;role=signer}}`, { x: 72, y: 40, size: 10, font });
  }
  return Buffer.from(await doc.save());
}

describe(`parse-job worker processes (${TEST_DB})`, () => {
  let database: TestDatabase;
  let dataDir: string;
  let ctx: TestContext;
  let headers: Record<string, string>;
  let env: NodeJS.ProcessEnv;
  const children = new Set<ChildProcess>();

  before(async () => {
    database = await createTestDatabase();
    const { databaseUrl, sqlitePath } = database.location;
    dataDir = databaseUrl ? fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-workers-')) : path.dirname(sqlitePath);
    // The API in this process without a worker of its own; workers are separate processes.
    // Sixteen uploads of one workspace at once set up a test below: more than the default share.
    ctx = await createTestContext({ database, dataDir, libreOffice: null, http: { uploadsPerWorkspace: 16 } });
    headers = bearer(await ctx.key(['documents:read', 'documents:write', 'documents:parse_ai'], 'workers'));
    env = { PATH: process.env.PATH, LOG_LEVEL: 'warn', DATA_DIR: dataDir, JOB_LEASE_MS: '1500', ...ctx.blobEnv, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
  });
  after(async () => {
    for (const child of children) child.kill('SIGKILL');
    await ctx.close();
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  function startWorker(extra: NodeJS.ProcessEnv = {}): { child: ChildProcess; exited: Promise<number | null> } {
    const child = spawn(process.execPath, [MAIN, 'worker'], { env: { ...env, ...extra }, stdio: ['ignore', 'ignore', 'inherit'] });
    children.add(child);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => (children.delete(child), resolve(code))));
    return { child, exited };
  }
  async function upload(data: Buffer): Promise<string> {
    const body = multipart([{ name: 'file', data, filename: 'long.pdf' }]);
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().data.id;
  }
  async function startJob(doc: string): Promise<string> {
    const res = await ctx.app.inject({ method: 'POST', url: `/api/v1/documents/${doc}/parse-jobs`, headers, payload: {} });
    assert.equal(res.statusCode, 202, res.body);
    return res.json().data.id;
  }
  const job = (id: string) => database.store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 60_000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const fieldCount = async (doc: string) =>
    Number((await database.store.db.selectFrom('document_fields').select((eb) => eb.fn.countAll().as('n')).where('document_id', '=', doc).executeTakeFirstOrThrow()).n);

  it('a worker killed mid-job: another completes the job once, and its fields are applied once', async () => {
    const pages = 150;
    const doc = await upload(await taggedPdf(pages, 'kill'));
    const first = startWorker();
    const id = await startJob(doc);
    await until('the first worker to take the job', async () => (await job(id)).status === 'processing');
    first.child.kill('SIGKILL');
    await first.exited;
    assert.notEqual((await job(id)).status, 'completed', 'killed before it finished');
    const second = startWorker();
    const done = await until('the job to finish', async () => {
      const row = await job(id);
      return row.status === 'completed' || row.status === 'failed' ? row : undefined;
    });
    assert.equal(done.status, 'completed', `${done.error_code}: ${done.error_message}`);
    assert.equal(Number(done.attempts), 2, 'taken again after the lease of the dead worker ran out');
    const applied = JSON.parse(done.applied!) as { createdFieldIds: string[] };
    assert.equal(applied.createdFieldIds.length, pages);
    assert.equal(await fieldCount(doc), pages, 'applied once');
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });

  it('SIGTERM: a job that does not finish within the grace is handed back, uncounted; a quick one finishes', async () => {
    const doc = await upload(await taggedPdf(150, 'term'));
    const worker = startWorker({ WORKER_STOP_GRACE_MS: '100' });
    const id = await startJob(doc);
    await until('the worker to take the job', async () => (await job(id)).status === 'processing');
    worker.child.kill('SIGTERM');
    assert.equal(await worker.exited, 0);
    const row = await job(id);
    assert.deepEqual([row.status, Number(row.attempts), row.lease_owner], ['pending', 0, null], 'handed back, the attempt not counted');

    // With a grace long enough for it (the default is meant for a quiet machine; a loaded CI
    // machine may need longer), the same kind of job is finished before the worker exits.
    const patient = startWorker({ WORKER_STOP_GRACE_MS: '120000' });
    await until('the job to be taken again', async () => (await job(id)).status === 'processing');
    patient.child.kill('SIGTERM');
    assert.equal(await patient.exited, 0);
    const finished = await job(id);
    assert.deepEqual([finished.status, Number(finished.attempts)], ['completed', 1]);
    assert.equal(await fieldCount(doc), 150);
  });

  it('two worker processes never run the same job', { skip: TEST_DB !== 'postgres' && 'several worker processes are a PostgreSQL deployment' }, async () => {
    const docs = await Promise.all(Array.from({ length: 16 }, async (_, i) => upload(await taggedPdf(3, `two-${i}`))));
    const workers = [startWorker(), startWorker()];
    const ids: string[] = [];
    for (const doc of docs) ids.push(await startJob(doc));
    await until('all jobs to complete', async () => {
      const rows = await database.store.db.selectFrom('jobs').select('status').where('id', 'in', ids).execute();
      return rows.every((r) => r.status === 'completed');
    });
    const rows = await database.store.db.selectFrom('jobs').select(['attempts', 'document_id']).where('id', 'in', ids).execute();
    assert.ok(rows.every((r) => Number(r.attempts) === 1), 'each job claimed exactly once');
    for (const doc of docs) assert.equal(await fieldCount(doc), 3, 'each document got its fields once');
    for (const w of workers) w.child.kill('SIGTERM');
    assert.deepEqual(await Promise.all(workers.map((w) => w.exited)), [0, 0]);
  });
});
