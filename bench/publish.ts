/**
 * Publishing a form of 2,000 questions, 200 sections and 2,000 rules, and reading its revision
 * back, against the baseline of reading the same draft once (`GET /api/v1/forms/{id}`), measured
 * side by side in one run through the whole request path (`app.inject`: key, rate limit,
 * validation, database, serialisation; no socket).
 *
 *   npm run bench:publish                              # SQLite
 *   FORMSIGN_TEST_DB=postgres npm run bench:publish    # PostgreSQL (FORMSIGN_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InjectOptions } from 'fastify';
import { buildApp } from '../src/app.js';
import { DiskBlobStore } from '../src/blobs/disk.js';
import { PdfAnalyzer } from '../src/files/pdf.js';
import { MemoryRateLimiter } from '../src/limits/memory.js';
import { createForm } from '../src/store/forms.js';
import { createKey } from '../src/store/keys.js';
import { createTestDatabase, TEST_DB } from '../test/helpers/context.js';
import { insertFormContent, makeForm } from './form-fixture.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);

const database = await createTestDatabase();
const { store } = database;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-bench-publish-'));
const pdf = new PdfAnalyzer();
const app = await buildApp({
  store, limiter: new MemoryRateLimiter(1_000_000_000), blobs: new DiskBlobStore(dataDir), pdf, libreOffice: null, maxUploadBytes: 1, logLevel: 'silent',
});
try {
  const { key, info } = await createKey(store.db, { workspace: 'bench', name: 'bench', grants: ['forms:read', 'forms:write', 'revisions:read'], expiresAt: null });
  const headers = { authorization: `Bearer ${key}` };
  const created = await createForm(store.db, info.workspaceId, { title: 'Large form' }, new Date().toISOString());
  const fixture = makeForm(1);
  const idOf = await insertFormContent(store, created.id, fixture.form);
  const answers = Object.fromEntries(Object.entries(fixture.answers).map(([k, v]) => [idOf(k), v]));
  const url = `/api/v1/forms/${created.id}`;

  async function timed(request: InjectOptions, status: number): Promise<{ ms: number; body: string }> {
    const t = performance.now();
    const res = await app.inject(request);
    const ms = performance.now() - t;
    if (res.statusCode !== status) throw new Error(`${JSON.stringify(request)} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    return { ms, body: res.body };
  }
  const read = () => timed({ method: 'GET', url, headers }, 200);
  // Each publish needs a change: a new title, made outside the timing.
  const change = (i: number) => timed({ method: 'PUT', url, headers, payload: { title: `Large form ${i}` } }, 200);
  const publish = (summary?: string) => timed({ method: 'POST', url: `${url}/publish`, headers, payload: summary ? { changesSummary: summary } : {} }, 201);

  // Warm-up: the first publish (no previous revision), and a few of each.
  const draftBytes = (await read()).body.length;
  await publish();
  for (let i = 0; i < 3; i++) {
    await read();
    await change(-i - 1);
    await publish();
  }
  const reads: number[] = [];
  const generated: number[] = [];
  const given: number[] = [];
  const revisionReads: number[] = [];
  let revisionBytes = 0;
  for (let i = 0; i < ROUNDS; i++) {
    reads.push((await read()).ms);
    await change(i);
    const res = i % 2 ? await publish('Bench edit') : await publish();
    (i % 2 ? given : generated).push(res.ms);
    const version = JSON.parse(res.body).data.revision.version as number;
    const back = await timed({ method: 'GET', url: `${url}/revisions/${version}`, headers }, 200);
    revisionReads.push(back.ms);
    revisionBytes = back.body.length;
  }
  // Evaluation against the draft (loaded and compiled per call) and against a revision (compiled
  // once, kept: revisions never change).
  const draftEvaluations: number[] = [];
  const revisionEvaluations: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    draftEvaluations.push((await timed({ method: 'POST', url: `${url}/evaluate`, headers, payload: { answers } }, 200)).ms);
    revisionEvaluations.push((await timed({ method: 'POST', url: `${url}/evaluate`, headers, payload: { answers, version: 1 } }, 200)).ms);
  }
  const base = median(reads);
  const line = (label: string, samples: number[]) =>
    console.log(`  ${label.padEnd(58)} ${median(samples).toFixed(1).padStart(7)} ms   ${(median(samples) / base).toFixed(2)} × the read`);
  console.log(`publish and revisions, ${TEST_DB}, Node ${process.version}, ${os.cpus().length} cores; 2,000 questions, 200 sections, 2,000 rules; medians of ${ROUNDS} rounds`);
  line(`GET /forms/{id} (baseline; ${(draftBytes / 1e6).toFixed(2)} MB)`, reads);
  line('POST /forms/{id}/publish, summary generated from the diff', generated);
  line('POST /forms/{id}/publish, summary given', given);
  line(`GET /forms/{id}/revisions/{version} (${(revisionBytes / 1e6).toFixed(2)} MB)`, revisionReads);
  line('POST /forms/{id}/evaluate, the draft', draftEvaluations);
  line('POST /forms/{id}/evaluate, version 1', revisionEvaluations);
  const worst = Math.max(median(generated), median(given)) / base;
  console.log(`goal: publish ≤ 5 × the read: ${worst.toFixed(2)} × ${worst <= 5 ? '(met)' : '(NOT met)'}`);
} finally {
  await app.close();
  await pdf.close();
  await database.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
