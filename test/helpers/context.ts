import { systemClock, type Clock } from '../../src/domain/clock.js';
import type { AiConfig } from '../../src/detect/ai.js';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp, type HttpLimits } from '../../src/app.js';
import { createBlobStore } from '../../src/blobs/factory.js';
import { Staging } from '../../src/blobs/staging.js';
import type { BlobStore } from '../../src/blobs/store.js';
import type { BlobConfig, S3Config } from '../../src/config.js';
import { startTestS3, type TestS3 } from './s3.js';
import { findSoffice, LibreOfficeConverter } from '../../src/files/libreoffice.js';
import { PdfAnalyzer } from '../../src/files/pdf.js';
import { normalizeGrant, type Permission } from '../../src/domain/grants.js';
import type { RateLimiter } from '../../src/limits/limiter.js';
import { MemoryRateLimiter } from '../../src/limits/memory.js';
import { RedisRateLimiter } from '../../src/limits/redis.js';
import { createStore, type Store } from '../../src/store/db.js';
import { DEFAULT_QUEUE_OPTIONS, JobQueue, type QueueOptions } from '../../src/jobs/queue.js';
import { ParseWorker, type WorkerOptions } from '../../src/jobs/worker.js';
import { createKey } from '../../src/store/keys.js';
import { migrate } from '../../src/store/migrations.js';
import { parseJobSettled } from '../../src/services/parse-jobs/events.js';
import { WebhookDispatcher, type DispatcherOptions } from '../../src/webhooks/dispatcher.js';
import type { LookupFn, OutboundPolicy } from '../../src/webhooks/safety.js';

/**
 * Test databases are real: a fresh SQLite file, or (FORMSIGN_TEST_DB=postgres) a fresh PostgreSQL
 * database created for the test and dropped after it. With FORMSIGN_TEST_REDIS_URL set, the rate
 * limiter is the Redis one, under a key prefix of the test's own.
 */
export const TEST_DB = process.env.FORMSIGN_TEST_DB === 'postgres' ? 'postgres' : 'sqlite';
export const TEST_REDIS_URL = process.env.FORMSIGN_TEST_REDIS_URL ?? null;
const ADMIN_URL = process.env.FORMSIGN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * The blob store of the tests (FORMSIGN_TEST_BLOB_STORE): `disk` (the default), `postgres` (needs
 * FORMSIGN_TEST_DB=postgres) or `s3` (an s3rver started by the test, see helpers/s3.ts).
 */
export const TEST_BLOB_STORE = (process.env.FORMSIGN_TEST_BLOB_STORE ?? 'disk') as 'disk' | 'postgres' | 's3';
if (!['disk', 'postgres', 's3'].includes(TEST_BLOB_STORE)) throw new Error('FORMSIGN_TEST_BLOB_STORE must be disk, postgres or s3');
if (TEST_BLOB_STORE === 'postgres' && TEST_DB !== 'postgres') throw new Error('FORMSIGN_TEST_BLOB_STORE=postgres needs FORMSIGN_TEST_DB=postgres');

export interface TestBlobs {
  blobs: BlobStore;
  /** The settings a spawned `formsign` process needs to use the same store (BLOB_STORE, S3_*). */
  env: Record<string, string>;
  /** Multipart uploads the s3rver stand-in still keeps (it cannot list or abort them); `[]` for other stores. */
  openMultipartUploads(): string[];
  /** The bucket's settings, for `s3`. */
  s3Config: S3Config | null;
  close(): Promise<void>;
}

/** A blob store of `kind` for a test (a fresh s3rver bucket for `s3`). */
export async function createTestBlobs(kind: 'disk' | 'postgres' | 's3', dataDir: string, store: Store): Promise<TestBlobs> {
  let s3: TestS3 | null = null;
  let config: BlobConfig = { kind: kind as 'disk' | 'postgres' };
  if (kind === 's3') {
    s3 = await startTestS3();
    config = { kind: 's3', ...s3.config };
  }
  const blobs = await createBlobStore(config, { dataDir, db: store.db, pgPool: store.pgPool, dialect: store.dialect });
  return {
    blobs,
    env: s3 ? s3.env : { BLOB_STORE: kind },
    openMultipartUploads: () => s3?.openMultipartUploads() ?? [],
    s3Config: s3?.config ?? null,
    async close() {
      await blobs.close();
      await s3?.close();
    },
  };
}

/** LibreOffice for tests: off unless FORMSIGN_TEST_SOFFICE is `auto` (find it) or a path. */
export const TEST_SOFFICE = process.env.FORMSIGN_TEST_SOFFICE ?? 'off';
let sofficeBin: string | null | undefined;
export function testLibreOffice(): LibreOfficeConverter | null {
  if (TEST_SOFFICE === 'off') return null;
  sofficeBin ??= TEST_SOFFICE === 'auto' ? findSoffice() : TEST_SOFFICE;
  if (!sofficeBin) throw new Error('FORMSIGN_TEST_SOFFICE is set but soffice is not installed');
  return new LibreOfficeConverter(sofficeBin);
}

export interface TestDatabase {
  store: Store;
  /** The URL or file a separate process can open. */
  location: { databaseUrl: string | null; sqlitePath: string };
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  if (TEST_DB === 'postgres') {
    const name = `formsign_t_${crypto.randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    const store = createStore({ databaseUrl: url.toString(), sqlitePath: '' });
    await migrate(store);
    return {
      store,
      location: { databaseUrl: url.toString(), sqlitePath: '' },
      async drop() {
        await store.close();
        const again = new pg.Client({ connectionString: ADMIN_URL });
        await again.connect();
        await again.query(`drop database if exists ${name} with (force)`);
        await again.end();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-test-'));
  const sqlitePath = path.join(dir, 'formsign.sqlite');
  const store = createStore({ databaseUrl: null, sqlitePath });
  await migrate(store);
  return {
    store,
    location: { databaseUrl: null, sqlitePath },
    async drop() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function createTestLimiter(limit: number, prefix = `formsign:test:${crypto.randomUUID()}:`): RateLimiter {
  if (TEST_REDIS_URL) return new RedisRateLimiter({ limit, url: TEST_REDIS_URL, keyPrefix: prefix });
  return new MemoryRateLimiter(limit);
}

export interface TestContext {
  app: FastifyInstance;
  blobs: BlobStore;
  staging: Staging;
  /** The settings a spawned `formsign` process needs to use this context's blob store. */
  blobEnv: Record<string, string>;
  /**
   * Every hash in the blob store (sorted), then what uploads left there uncommitted (`upload:<id>`)
   * and rows of the upload journal (`journal:<id>`): nothing of those once every upload has answered.
   */
  storedBlobs(): Promise<string[]>;
  /** Multipart uploads the s3rver stand-in still keeps (it can neither list nor abort them); `[]` for other stores. */
  openMultipartUploads(): string[];
  /** Where this context's blobs live (`blobs/`, `tmp/`). */
  dataDir: string;
  /** The app's PDF reader (its queue of files waiting to be read). */
  pdf: PdfAnalyzer;
  store: Store;
  database: TestDatabase;
  limiter: RateLimiter;
  queue: JobQueue;
  worker: ParseWorker | null;
  /** The webhook dispatcher running in the test process (`options.webhooks.deliver`), if any. */
  dispatcher: WebhookDispatcher | null;
  /** A new key in `workspace` (default: a fresh workspace) holding `grants` in any spelling. */
  key(grants: string[], workspace?: string, expiresAt?: string | null): Promise<string>;
  close(): Promise<void>;
}

export interface ContextOptions {
  rateLimit?: number;
  now?: () => number;
  /** The service's one clock (default: the system's; `now` alone sets it too). */
  clock?: Clock;
  database?: TestDatabase;
  limiter?: RateLimiter;
  keyCacheTtlMs?: number;
  maxUploadBytes?: number;
  /** Bytes of revision snapshots one workspace may store (default: the service's default). */
  revisionBytesPerWorkspace?: number;
  /** A LibreOffice binary for DOCX renditions; default: none (FORMSIGN_TEST_SOFFICE=auto finds it). */
  libreOffice?: LibreOfficeConverter | null;
  /** Run a parse-job worker in the test process (as `serve` does). */
  worker?: boolean;
  /** The worker's detection (default: the detection thread). */
  detect?: WorkerOptions['detect'];
  /** Queue settings (lease, attempts, backoff) for the parse jobs. */
  queue?: Partial<QueueOptions>;
  aiConfigured?: boolean;
  /** The AI engine's endpoint for the worker (and `aiConfigured` unless given). */
  ai?: AiConfig | null;
  /** Where stored files go (default: a temporary directory removed on close). */
  dataDir?: string;
  /** The blob store (default: FORMSIGN_TEST_BLOB_STORE's, on `dataDir`; tests put a gate in it). */
  makeBlobs?: (dataDir: string, store: Store) => BlobStore;
  /** Timeouts, the least body rate and the upload slots (default: the service's defaults). */
  http?: Partial<HttpLimits>;
  /**
   * Webhooks: the outbound policy (default: http and private addresses allowed, as receivers in
   * tests listen on 127.0.0.1), name resolution, and whether a dispatcher delivers in the test
   * process (`deliver`, with its options; polls every 20 ms).
   */
  webhooks?: { policy?: OutboundPolicy; lookup?: LookupFn; deliver?: boolean | Partial<DispatcherOptions> };
  /** `GET /metrics` (default: off, as in the service). */
  metrics?: { enabled: boolean; token: string | null };
  /** An Idempotency-Key claim's lease (default: the service's, a minute). */
  idempotencyLeaseMs?: number;
  /** The PDF reader (default: the service's; a test gives one with a stand-in helper program). Closed with the context. */
  pdf?: PdfAnalyzer;
}

export async function createTestContext(options: ContextOptions = {}): Promise<TestContext> {
  const database = options.database ?? (await createTestDatabase());
  const limiter = options.limiter ?? createTestLimiter(options.rateLimit ?? 1_000_000);
  if (limiter instanceof RedisRateLimiter) await limiter.ready();
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-data-'));
  const testBlobs = options.makeBlobs ? null : await createTestBlobs(TEST_BLOB_STORE, dataDir, database.store);
  const blobs = options.makeBlobs?.(dataDir, database.store) ?? testBlobs!.blobs;
  const staging = new Staging(path.join(dataDir, 'tmp'));
  const pdf = options.pdf ?? new PdfAnalyzer();
  const clock: Clock = options.clock ?? (options.now ? { now: options.now } : systemClock);
  const queue = new JobQueue(database.store, { ...DEFAULT_QUEUE_OPTIONS, now: () => clock.now(), settled: parseJobSettled, ...options.queue });
  let worker: ParseWorker | null = null;
  let dispatcher: WebhookDispatcher | null = null;
  const policy = options.webhooks?.policy ?? { allowHttp: true, allowPrivate: true };
  const app = await buildApp({
    store: database.store,
    limiter,
    blobs,
    staging,
    pdf,
    libreOffice: options.libreOffice === undefined ? testLibreOffice() : options.libreOffice,
    maxUploadBytes: options.maxUploadBytes ?? 52_428_800,
    revisionBytesPerWorkspace: options.revisionBytesPerWorkspace,
    logLevel: (process.env.FORMSIGN_TEST_LOG as 'silent') ?? 'silent',
    clock,
    keyCacheTtlMs: options.keyCacheTtlMs,
    http: options.http,
    metrics: options.metrics,
    idempotencyLeaseMs: options.idempotencyLeaseMs,
    jobs: { queue, wake: () => worker?.wake(), aiConfigured: options.aiConfigured ?? Boolean(options.ai) },
    webhooks: { policy, lookup: options.webhooks?.lookup, wake: () => dispatcher?.wake() },
  });
  await app.ready();
  const deliver = options.webhooks?.deliver;
  if (deliver) {
    dispatcher = new WebhookDispatcher({ store: database.store, log: app.log, policy, lookup: options.webhooks?.lookup, pollMs: 20, ...(deliver === true ? {} : deliver) });
    dispatcher.start();
  }
  if (options.worker) {
    worker = new ParseWorker({ store: database.store, queue, blobs, log: app.log, pollMs: 50, detect: options.detect, ai: options.ai ?? null, clock });
    worker.start();
  }
  return {
    app,
    store: database.store,
    database,
    limiter,
    blobs,
    staging,
    pdf,
    blobEnv: testBlobs?.env ?? { BLOB_STORE: blobs.kind },
    openMultipartUploads: () => testBlobs?.openMultipartUploads() ?? [],
    async storedBlobs() {
      const all: string[] = [];
      for await (const sha256 of blobs.list()) all.push(sha256);
      all.sort();
      for await (const id of blobs.listUploads()) all.push(`upload:${id}`);
      for (const { id } of await database.store.db.selectFrom('blob_uploads').select('id').orderBy('id').execute()) all.push(`journal:${id}`);
      return all;
    },
    dataDir,
    queue,
    get worker() {
      return worker;
    },
    get dispatcher() {
      return dispatcher;
    },
    async key(grants, workspace = `ws-${crypto.randomBytes(4).toString('hex')}`, expiresAt = null) {
      const permissions = grants.map((g) => {
        const p = normalizeGrant(g);
        if (!p) throw new Error(`unknown grant ${g}`);
        return p;
      }) as Permission[];
      const { key } = await createKey(database.store.db, { workspace, name: 'test', grants: permissions, expiresAt });
      return key;
    },
    async close() {
      await worker?.stop(1000);
      await dispatcher?.stop(1000);
      await app.close();
      await pdf.close();
      await limiter.close();
      await (testBlobs ? testBlobs.close() : blobs.close());
      if (!options.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
      if (!options.database) await database.drop();
    },
  };
}

export function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}
