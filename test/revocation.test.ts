import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/store/keys.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/context.js';
import { freePort, waitFor } from './helpers/net.js';

const MAIN = path.resolve('dist/src/main.js');

// One server on SQLite (the embedded deployment); two servers sharing PostgreSQL.
describe(`a key revoked by the CLI is refused by the very next request on every running server (${TEST_DB})`, () => {
  let database: TestDatabase;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  const servers: Array<{ child: ChildProcess; port: number }> = [];

  before(async () => {
    database = await createTestDatabase();
    const { databaseUrl, sqlitePath } = database.location;
    dataDir = databaseUrl ? fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-revoke-')) : path.dirname(sqlitePath);
    env = { PATH: process.env.PATH, LOG_LEVEL: 'warn', DATA_DIR: dataDir, SOFFICE_PATH: 'off', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
    for (let i = 0; i < (TEST_DB === 'postgres' ? 2 : 1); i++) {
      const port = await freePort();
      const child = spawn(process.execPath, [MAIN, 'serve', '--no-worker'], { env: { ...env, PORT: String(port) }, stdio: 'ignore' });
      servers.push({ child, port });
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok);
    }
  });
  after(async () => {
    for (const { child } of servers) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('revoked in another process: 401 invalid_api_key at once, though the key was just verified and remembered', async () => {
    for (let round = 0; round < 3; round++) {
      const { key, info } = await createKey(database.store.db, { workspace: 'revoke', name: `r${round}`, grants: ['forms:read'], expiresAt: null });
      const get = (port: number) => fetch(`http://127.0.0.1:${port}/api/v1/forms`, { headers: { authorization: `Bearer ${key}` } });
      // Verified, then served from each server's memory of the key.
      for (const { port } of servers) for (let i = 0; i < 3; i++) assert.equal((await get(port)).status, 200);
      const cli = spawnSync(process.execPath, [MAIN, 'keys', 'revoke', info.id], { env, encoding: 'utf8' });
      assert.equal(cli.status, 0, cli.stderr);
      for (const { port } of servers) {
        const res = await get(port);
        assert.equal(res.status, 401, `server on ${port}, round ${round}`);
        const body = await res.json();
        assert.equal(body.code, 'invalid_api_key');
        assert.match(body.hint, /revoked/);
      }
    }
  });

  it('another key of the same workspace keeps working', async () => {
    const { key } = await createKey(database.store.db, { workspace: 'revoke', name: 'kept', grants: ['forms:read'], expiresAt: null });
    for (const { port } of servers) assert.equal((await fetch(`http://127.0.0.1:${port}/api/v1/forms`, { headers: { authorization: `Bearer ${key}` } })).status, 200);
  });
});
