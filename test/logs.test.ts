import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/store/keys.js';
import { createTestDatabase, type TestDatabase } from './helpers/context.js';
import { makePdf, multipart } from './helpers/files.js';
import { freePort, waitFor } from './helpers/net.js';
import { rawRequest } from './helpers/raw-http.js';

const MAIN = path.resolve('dist/src/main.js');

describe('no key, Authorization, cookie or body in the log, at LOG_LEVEL=trace (the built server and CLI)', () => {
  let database: TestDatabase;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let child: ChildProcess;
  let port: number;
  let log = '';
  let key: string;

  before(async () => {
    database = await createTestDatabase();
    const { databaseUrl, sqlitePath } = database.location;
    dataDir = databaseUrl ? fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-logs-')) : path.dirname(sqlitePath);
    env = { PATH: process.env.PATH, LOG_LEVEL: 'trace', DATA_DIR: dataDir, SOFFICE_PATH: 'off', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
    key = (await createKey(database.store.db, { workspace: 'logs', name: 'logs', grants: ['documents:read', 'documents:write', 'forms:write', 'forms:read'], expiresAt: null })).key;
    port = await freePort();
    child = spawn(process.execPath, [MAIN, 'serve', '--no-worker'], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
  });
  after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('JSON requests, an upload, a bad key, a malformed request and `keys create` leave no secret in any log line', async () => {
    const base = `http://127.0.0.1:${port}/api/v1`;
    const auth = { authorization: `Bearer ${key}`, cookie: 'session=COOKIE-MARKER-1234' };
    const list = await fetch(`${base}/forms`, { headers: auth });
    assert.equal(list.status, 200);
    const created = await fetch(`${base}/forms`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'BODY-MARKER-5678' }) });
    assert.equal(created.status, 201);
    const body = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'a.pdf' }]);
    const uploaded = await fetch(`${base}/documents`, { method: 'POST', headers: { ...auth, ...body.headers }, body: new Uint8Array(body.payload) });
    assert.equal(uploaded.status, 201, await uploaded.clone().text());
    // A signed download URL works without a key until it expires: its use must not log it.
    const downloadUrl = ((await uploaded.json()) as { data: { downloadUrl: string } }).data.downloadUrl;
    const signature = new URL(downloadUrl).searchParams.get('signature')!;
    assert.ok(signature.length >= 16, downloadUrl);
    assert.equal((await fetch(downloadUrl)).status, 200);
    // A refused upload (not a PDF) is logged with its error.
    const bad = multipart([{ name: 'file', data: 'not a pdf', filename: 'a.pdf' }]);
    assert.equal((await fetch(`${base}/documents`, { method: 'POST', headers: { ...auth, ...bad.headers }, body: new Uint8Array(bad.payload) })).status, 415);
    const wrongKey = `fsk_${'Z'.repeat(43)}`;
    assert.equal((await fetch(`${base}/forms`, { headers: { authorization: `Bearer ${wrongKey}` } })).status, 401);
    assert.equal((await fetch(`${base}/forms`, { headers: { authorization: `Bearer not-a-key-SECRETTOKEN` } })).status, 401);
    // A request line Node refuses, carrying a key: the parser's error holds the raw bytes.
    const malformed = await rawRequest(port, `GET /api/v1/forms /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    assert.equal(malformed.status, 400);

    const cli = spawnSync(process.execPath, [MAIN, 'keys', 'create', '--workspace', 'logs', '--name', 'cli', '--grants', 'forms:read'], { env, encoding: 'utf8' });
    assert.equal(cli.status, 0, cli.stderr);
    const cliKey = cli.stdout.trim().split('\n').pop()!;
    assert.match(cliKey, /^fsk_/);
    // The key is printed once, as the last line of stdout, and nowhere else.
    assert.equal(cli.stdout.split('fsk_').length - 1, 1);
    assert.doesNotMatch(cli.stderr, /fsk_/);
    // The new key is used once, so that it passes through the server's log path too.
    assert.equal((await fetch(`${base}/forms`, { headers: { authorization: `Bearer ${cliKey}` } })).status, 200);

    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    // Trace logging did happen (the multipart plugin's trace of its busboy options, with the headers in it).
    assert.match(log, /Providing options to busboy/);
    assert.match(log, /"level":10/);
    assert.match(log, /signature=\[redacted\]/, 'the download was logged, its signature redacted');
    for (const secret of ['fsk_', key.slice(4), cliKey.slice(4), wrongKey.slice(4), 'SECRETTOKEN', 'COOKIE-MARKER', 'BODY-MARKER', signature]) {
      assert.ok(!log.includes(secret), `the log holds ${secret}: ${log.split('\n').find((l) => l.includes(secret))}`);
    }
    assert.doesNotMatch(log, /"authorization":"(?!\[redacted\])/i);
    assert.doesNotMatch(log, /bearer (?!\[redacted\])/i);
  });
});
