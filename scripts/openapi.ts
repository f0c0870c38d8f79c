/**
 * Prints the OpenAPI document the service serves at GET /api/v1/openapi.json, without starting a
 * server (the app is built on a throw-away SQLite file). clients/typescript/generate.mjs uses it.
 *
 *   node --import tsx scripts/openapi.ts > openapi.json
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { DiskBlobStore } from '../src/blobs/disk.js';
import { PdfAnalyzer } from '../src/files/pdf.js';
import { MemoryRateLimiter } from '../src/limits/memory.js';
import { createStore } from '../src/store/db.js';

export async function openApiDocument(): Promise<unknown> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-openapi-'));
  const store = createStore({ databaseUrl: null, sqlitePath: path.join(dir, 'formsign.sqlite') });
  const pdf = new PdfAnalyzer();
  const app = await buildApp({ store, limiter: new MemoryRateLimiter(100), blobs: new DiskBlobStore(dir), pdf, libreOffice: null, maxUploadBytes: 52_428_800, logLevel: 'silent' });
  try {
    await app.ready();
    return JSON.parse((await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).body);
  } finally {
    await app.close();
    await pdf.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(await openApiDocument(), null, 2)}\n`);
}
