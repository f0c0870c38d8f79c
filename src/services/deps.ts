import type { Staging } from '../blobs/staging.js';
import type { BlobStore } from '../blobs/store.js';
import type { Clock } from '../domain/clock.js';
import type { AnalyzeDeps } from '../files/analyze.js';
import type { JobQueue } from '../jobs/queue.js';
import type { Store } from '../store/db.js';
import type { Principal } from '../store/keys.js';
import type { LookupFn, OutboundPolicy } from '../webhooks/safety.js';
import type { Caches } from './caches.js';

export type { Principal };

/** The parse-job queue and this process's worker, if any. */
export interface ParseJobDeps {
  queue: JobQueue;
  /** Tells this process's worker (if it runs one) that a job is waiting. */
  wake(): void;
  /** Whether an AI engine is configured (AI_BASE_URL …). */
  aiConfigured: boolean;
}

/** Webhooks: what receivers may be, name resolution (tests), and this process's dispatcher to wake. */
export interface WebhookDeps {
  policy: OutboundPolicy;
  lookup?: LookupFn;
  /** Tells this process's dispatcher (if it runs one) that a delivery was queued. */
  wake(): void;
}

/**
 * What every use case may use: one object, built once by `buildApp` and handed to every route
 * module and every service (`(deps, principal, input)`).
 */
export interface Deps extends AnalyzeDeps {
  store: Store;
  blobs: BlobStore;
  /** Local staging of uploads (under DATA_DIR/tmp), whatever the blob store. */
  staging: Staging;
  /** The one clock: every time a use case takes comes from here. */
  clock: Clock;
  maxUploadBytes: number;
  /** Bytes of revision snapshots one workspace may store (see `PublishOptions.budgetBytes`). */
  revisionBytesPerWorkspace?: number;
  jobs: ParseJobDeps;
  /** Per-server caches of derived values (compiled logic, content as JSON). */
  caches: Caches;
  webhooks: WebhookDeps;
}
