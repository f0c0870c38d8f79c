import crypto from 'node:crypto';
import os from 'node:os';
import { sql, type Kysely, type Transaction } from 'kysely';
import { Agent, request } from 'undici';
import { newId } from '../domain/ids.js';
import type { Store } from '../store/db.js';
import type { Database } from '../store/schema.js';
import { checkedLookup, checkUrlShape, UnsafeTargetError, type LookupFn, type OutboundPolicy } from './safety.js';
import { signatureHeader } from './signature.js';

/** Waits before the retries (API.md, Webhooks): about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;
/** An endpoint whose attempts have all failed for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 86_400_000;
/** Response bytes read (the rest is not waited for) and stored. */
export const READ_LIMIT_BYTES = 65_536;
export const STORE_LIMIT_BYTES = 1024;
/** How long finished attempts wait to be written together. */
const FLUSH_GATHER_MS = 5;
/**
 * Claimed ahead per endpoint, as a multiple of the attempts it may have in flight: twice for any
 * endpoint, up to `FAST_AHEAD` times for one whose recent attempts took under `FAST_ATTEMPT_MS`
 * (the last of them still starts within a second or so, far inside its lease, and one claim,
 * a few milliseconds of database, serves many attempts).
 */
const AHEAD = 2;
const FAST_AHEAD = 8;
const FAST_ATTEMPT_MS = 100;
/** Endpoints whose attempt times are remembered (the oldest are forgotten past it). */
const SPEED_ENTRIES = 10_000;
/** Finished deliveries, their attempts and events are kept this long. */
export const RETENTION_MS = 30 * 86_400_000;

/** Where the dispatcher logs (pino's logger fits). */
export interface DispatcherLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface DispatcherOptions {
  store: Store;
  log: DispatcherLog;
  policy: OutboundPolicy;
  /** One attempt, connection to last byte read (default 10 s). */
  timeoutMs?: number;
  /** Attempts in flight in this process (default 64), to one endpoint (default 4), for one workspace (default 16). */
  concurrency?: number;
  perEndpoint?: number;
  perWorkspace?: number;
  /** Multiplies the retry schedule and the disabling period (default 1; tests run a day in a second). */
  retryScale?: number;
  /** How often an idle dispatcher looks for due deliveries (default 500 ms). */
  pollMs?: number;
  /** Name resolution (default the system's); tests resolve names their own way. */
  lookup?: LookupFn;
  /** Random in [0, 1) for the jitter (default Math.random). */
  random?: () => number;
}

interface Claimed {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  manual: number | string;
  scheduled_attempts: number | string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  enabled: number | string;
  failing_since: string | null;
  payload: string;
}

export interface AttemptOutcome {
  at: string;
  durationMs: number;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
}

/** The wait before retry `n` (1-based), with ±20 % jitter; `null` after the last. */
export function retryDelay(n: number, scale: number, random: () => number = Math.random): number | null {
  const base = RETRY_SCHEDULE_MS[n - 1];
  if (base === undefined) return null;
  return Math.round(base * scale * (0.8 + 0.4 * random()));
}

/**
 * Delivers webhook events from the outbox (`webhook_deliveries`), at least once.
 *
 * Due deliveries are claimed under a lease (twice the timeout plus 2 s): a worker that dies mid
 * attempt leaves the lease to run out, and the delivery is attempted again, by any worker, with
 * the same event id. Attempts run concurrently, at most `perEndpoint` to one endpoint, `perWorkspace`
 * for one workspace and `concurrency` in all, so a slow or dead receiver only ever holds its own
 * slots; a claim takes up to twice those numbers, eight times the per-endpoint one for an endpoint
 * that answers fast (the rest wait here for a slot, and start without a database round trip), and
 * outcomes are written in batches. Each attempt resolves the
 * receiver's name, checks every address (`safety.ts`) and connects to the checked address; no
 * redirect is followed; at most 64 KiB of the answer is read and 1 KiB stored.
 */
export class WebhookDispatcher {
  readonly owner = `${os.hostname()}-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly perWorkspace: number;
  private readonly scale: number;
  private readonly random: () => number;
  private readonly agent: Agent;
  private readonly inFlight = new Map<string, { endpoint: string; workspace: string; done: Promise<void> }>();
  /** Claimed here, not started yet (see `claim`). */
  private readonly ready: Array<Claimed & { claimedAt: number }> = [];
  private readonly writes = new Set<Promise<void>>();
  private claimWanted = true;
  private readonly stopAll = new AbortController();
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private lastPrune = 0;
  private readonly outcomes: Array<{ row: Claimed; outcome: AttemptOutcome; resolve: () => void; reject: (error: unknown) => void }> = [];
  private flushing: Promise<void> | null = null;
  private flushScheduled = false;
  /** Recent attempt duration per endpoint (ms, moving average), which sets how far ahead it is claimed. */
  private readonly speed = new Map<string, number>();

  constructor(private readonly options: DispatcherOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.concurrency = options.concurrency ?? 64;
    this.perEndpoint = options.perEndpoint ?? 4;
    this.perWorkspace = options.perWorkspace ?? 16;
    this.scale = options.retryScale ?? 1;
    this.random = options.random ?? Math.random;
    this.agent = new Agent({
      connect: { lookup: checkedLookup(options.policy, options.lookup), timeout: this.timeoutMs },
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      keepAliveTimeout: 4_000,
    });
  }

  private get leaseMs(): number {
    return 2 * this.timeoutMs + 2_000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Something was queued: look now rather than at the next poll. */
  wake(): void {
    this.claimWanted = true;
    this.wakeUp?.();
  }

  /**
   * Stops claiming; attempts in flight may finish within `graceMs`, then are cut off (their
   * deliveries go back to the queue: attempted again, maybe a second time, by whoever claims them).
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    const deadline = setTimeout(() => this.stopAll.abort(), graceMs);
    try {
      await Promise.all([...this.inFlight.values()].map((f) => f.done));
      while (this.writes.size > 0) await Promise.all([...this.writes]);
    } finally {
      clearTimeout(deadline);
      await this.agent.close().catch(() => {});
    }
  }

  /** Deliveries of one endpoint this process holds now, running and claimed (tests read it). */
  holding(endpoint: string): number {
    return this.held('endpoint_id', endpoint);
  }

  /** Attempts in flight now (the benchmark and tests read it). */
  get busy(): number {
    return this.inFlight.size;
  }

  private async run(): Promise<void> {
    const { log } = this.options;
    // Holding this many (running and waiting), it claims no more until some finish.
    const full = () => this.heldTotal() >= 2 * this.concurrency;
    while (this.running) {
      this.startReady();
      // How many were claimed, and whether the claim's scan was full (more may be due at once).
      let claimed = { count: 0, scanFull: false };
      if (this.claimWanted && !full()) {
        this.claimWanted = false;
        try {
          claimed = await this.claim();
        } catch (error) {
          log.error({ err: error }, 'could not claim webhook deliveries');
        }
        this.startReady();
      }
      if (Date.now() - this.lastPrune > 3_600_000) {
        this.lastPrune = Date.now();
        this.prune().catch((error: unknown) => log.warn({ err: error }, 'could not prune old webhook deliveries'));
      }
      if (!this.running) break;
      // The claim's scan was full: more may be due at once. Or a claim was asked for meanwhile.
      if (claimed.count > 0 && claimed.scanFull) this.claimWanted = true;
      if (this.claimWanted && !full()) continue;
      // Else wait for the poll, a finished attempt or something queued (never a busy loop).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.claimWanted = true;
          resolve();
        }, this.options.pollMs ?? 500);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = null;
    }
    // Claimed but not started: handed back at once rather than when their leases run out.
    const unstarted = this.ready.splice(0).map((r) => r.id);
    if (unstarted.length > 0) {
      await this.options.store.db.updateTable('webhook_deliveries').set({ lease_owner: null, lease_expires_at: null }).where('id', 'in', unstarted).where('lease_owner', '=', this.owner).execute().catch((error: unknown) => log.warn({ err: error }, 'could not hand back claimed webhook deliveries'));
    }
  }

  /** Deliveries this process holds (running or claimed and waiting), per endpoint, per workspace, in all. */
  private held(key: 'endpoint_id' | 'workspace_id', value: string, running = false): number {
    let n = 0;
    for (const f of this.inFlight.values()) if ((key === 'endpoint_id' ? f.endpoint : f.workspace) === value) n++;
    if (!running) for (const r of this.ready) if (r[key] === value) n++;
    return n;
  }

  /** Claimed here and not started, for one endpoint. */
  private waiting(endpoint: string): number {
    let n = 0;
    for (const r of this.ready) if (r.endpoint_id === endpoint) n++;
    return n;
  }

  /** How many of an endpoint's deliveries this process may hold (running and waiting). */
  private ahead(endpoint: string): number {
    const ms = this.speed.get(endpoint);
    return (ms !== undefined && ms < FAST_ATTEMPT_MS ? FAST_AHEAD : AHEAD) * this.perEndpoint;
  }

  private noteSpeed(endpoint: string, ms: number): void {
    const before = this.speed.get(endpoint);
    this.speed.delete(endpoint);
    if (this.speed.size >= SPEED_ENTRIES) this.speed.delete(this.speed.keys().next().value!);
    this.speed.set(endpoint, before === undefined ? ms : 0.8 * before + 0.2 * ms);
  }

  private heldTotal(): number {
    return this.inFlight.size + this.ready.length;
  }

  /**
   * Starts the claimed deliveries that the limits on attempts in flight allow, oldest claim first.
   * One claimed too long ago to finish within its lease is let go (its lease runs out and it is
   * claimed again): an attempt never runs past its lease.
   */
  private startReady(): void {
    const latest = Date.now() - (this.leaseMs - this.timeoutMs - 1_000);
    const stale: string[] = [];
    for (let i = 0; i < this.ready.length && this.inFlight.size < this.concurrency; ) {
      const row = this.ready[i]!;
      if (row.claimedAt < latest) {
        this.ready.splice(i, 1);
        stale.push(row.id);
        continue;
      }
      if (this.held('endpoint_id', row.endpoint_id, true) >= this.perEndpoint || this.held('workspace_id', row.workspace_id, true) >= this.perWorkspace) {
        i++;
        continue;
      }
      this.ready.splice(i, 1);
      const done = this.deliver(row).finally(() => {
        this.inFlight.delete(row.id);
        // Fewer of its endpoint's deliveries wait here than may run at once: look for more in the
        // database now, while those still run (a claim ahead of need, not after the slots idle).
        if (this.waiting(row.endpoint_id) < this.perEndpoint) this.claimWanted = true;
        // The freed slot is filled at once from what waits here, also while a claim is under way.
        if (this.running) this.startReady();
        this.wakeUp?.();
      });
      this.inFlight.set(row.id, { endpoint: row.endpoint_id, workspace: row.workspace_id, done });
    }
    // Too late to start within their leases (an endpoint that turned slow while many of its
    // deliveries waited here): handed back now, so any worker can claim them at once rather than
    // when the leases run out.
    if (stale.length > 0) this.releaseLeases(stale);
  }

  /**
   * Claims due deliveries, up to twice what may run at once per workspace and in all, and per
   * endpoint twice (eight times for a fast one, see `ahead`): the rest waits here and starts the
   * moment an attempt ends, and one claim serves several attempts. Answers how many were claimed,
   * and whether the scan of due deliveries came back full.
   *
   * On PostgreSQL the claim is one transaction of two statements (the candidates; the lease taken
   * and the claimed rows read back in one `update … returning` joined to their endpoints and
   * events) committed without waiting for the WAL flush (`synchronous_commit = off` for that
   * transaction only): a claim lost in a crash of the database server only means the delivery is
   * claimed again (docs/decisions.md, Webhooks).
   */
  private async claim(): Promise<{ count: number; scanFull: boolean }> {
    const { store } = this.options;
    return store.dialect === 'postgres' ? this.bookkeeping((trx) => this.claimIn(trx)) : this.claimIn(store.db);
  }

  private async claimIn(db: Kysely<Database>): Promise<{ count: number; scanFull: boolean }> {
    const { store } = this.options;
    const now = new Date().toISOString();
    const perEndpointLimit = FAST_AHEAD * this.perEndpoint;
    // At most that many due deliveries of each endpoint, oldest first, each endpoint read on its
    // own index range: a backlog of one endpoint never hides another's due deliveries, and the
    // cost of a claim does not grow with the backlog.
    const due = (columns: string) => sql`
        select ${sql.raw(columns)} from webhook_deliveries x
        where x.endpoint_id = e.id and x.status = 'pending' and x.next_attempt_at <= ${now}
          and (x.lease_expires_at is null or x.lease_expires_at < ${now})
        order by x.next_attempt_at, x.id limit ${perEndpointLimit}`;
    const scan = Math.max(this.concurrency * 4, 100);
    // PostgreSQL joins laterally (one index range per endpoint); SQLite, which has no LATERAL,
    // runs the correlated subquery once per endpoint.
    const candidates = await (store.dialect === 'postgres'
      ? sql<{ id: string; endpoint_id: string; workspace_id: string }>`
          select d.id, d.endpoint_id, d.workspace_id from webhook_endpoints e
          cross join lateral (${due('x.id, x.endpoint_id, x.workspace_id, x.next_attempt_at')}) d
          order by d.next_attempt_at, d.id limit ${scan}`
      : sql<{ id: string; endpoint_id: string; workspace_id: string }>`
          select d.id, d.endpoint_id, d.workspace_id from webhook_endpoints e
          join webhook_deliveries d on d.id in (${due('x.id')})
          order by d.next_attempt_at, d.id limit ${scan}`
    ).execute(db);
    const scanFull = candidates.rows.length >= scan;
    const perEndpoint = new Map<string, number>();
    const perWorkspace = new Map<string, number>();
    const chosen: string[] = [];
    for (const c of candidates.rows) {
      if (this.heldTotal() + chosen.length >= 2 * this.concurrency) break;
      const e = perEndpoint.get(c.endpoint_id) ?? this.held('endpoint_id', c.endpoint_id);
      const w = perWorkspace.get(c.workspace_id) ?? this.held('workspace_id', c.workspace_id);
      perEndpoint.set(c.endpoint_id, e);
      perWorkspace.set(c.workspace_id, w);
      if (e >= this.ahead(c.endpoint_id) || w >= 2 * this.perWorkspace) continue;
      perEndpoint.set(c.endpoint_id, e + 1);
      perWorkspace.set(c.workspace_id, w + 1);
      chosen.push(c.id);
    }
    if (chosen.length === 0) return { count: 0, scanFull };
    // Taken only if still due and unleased: another worker may have claimed some meanwhile.
    const claimedAt = Date.now();
    const lease = new Date(claimedAt + this.leaseMs).toISOString();
    let rows: Claimed[];
    if (store.dialect === 'postgres') {
      // Taken only if still due and unleased (another worker may have claimed some meanwhile),
      // and read back with what an attempt needs, in one statement.
      rows = (
        await sql<Claimed>`
          with taken as (
            update webhook_deliveries set lease_owner = ${this.owner}, lease_expires_at = ${lease}
            where id in (${sql.join(chosen)}) and status = 'pending' and (lease_expires_at is null or lease_expires_at < ${now})
            returning id, workspace_id, endpoint_id, event_id, manual, scheduled_attempts, next_attempt_at)
          select d.id, d.workspace_id, d.endpoint_id, d.event_id, d.manual, d.scheduled_attempts, e.url, e.secret,
                 e.previous_secret, e.previous_secret_expires_at, e.enabled, e.failing_since, v.payload
          from taken d join webhook_endpoints e on e.id = d.endpoint_id join webhook_events v on v.id = d.event_id
          order by d.next_attempt_at, d.id`.execute(db)
      ).rows;
    } else {
      // Taken only if still due and unleased: another worker may have claimed some meanwhile.
      const taken = await db
        .updateTable('webhook_deliveries')
        .set({ lease_owner: this.owner, lease_expires_at: lease })
        .where('id', 'in', chosen)
        .where('status', '=', 'pending')
        .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
        .returning('id')
        .execute();
      if (taken.length === 0) return { count: 0, scanFull };
      rows = (await db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
        .innerJoin('webhook_events as v', 'v.id', 'd.event_id')
        .select(['d.id', 'd.workspace_id', 'd.endpoint_id', 'd.event_id', 'd.manual', 'd.scheduled_attempts', 'e.url', 'e.secret', 'e.previous_secret', 'e.previous_secret_expires_at', 'e.enabled', 'e.failing_since', 'v.payload'])
        .where('d.id', 'in', taken.map((t) => t.id))
        .where('d.lease_owner', '=', this.owner)
        .orderBy('d.next_attempt_at')
        .orderBy('d.id')
        .execute()) as Claimed[];
    }
    for (const row of rows) this.ready.push({ ...row, claimedAt });
    return { count: rows.length, scanFull };
  }

  /** One attempt and its outcome, written in the background (the slot is free as soon as the attempt ends). */
  private async deliver(row: Claimed): Promise<void> {
    let outcome: AttemptOutcome;
    if (!Number(row.enabled) && !Number(row.manual)) {
      outcome = { at: new Date().toISOString(), durationMs: 0, responseStatus: null, responseBody: null, error: 'not sent: the endpoint is disabled' };
    } else {
      outcome = await this.attempt(row);
      this.noteSpeed(row.endpoint_id, outcome.durationMs);
    }
    if (this.stopAll.signal.aborted && outcome.responseStatus === null) {
      // Cut off by a stop: not the receiver's failure. Back to the queue as it was.
      this.releaseLeases([row.id]);
      return;
    }
    // If it cannot be written, the lease runs out and the delivery is attempted again.
    this.track(this.record(row, outcome));
  }

  /** Hands this worker's leases of pending deliveries back: any worker may claim them at once. */
  private releaseLeases(ids: string[]): void {
    const release = this.options.store.db
      .updateTable('webhook_deliveries')
      .set({ lease_owner: null, lease_expires_at: null })
      .where('id', 'in', ids)
      .where('lease_owner', '=', this.owner)
      .where('status', '=', 'pending')
      .execute();
    this.track(release.then(() => {}));
  }

  /** Writes still under way (`stop` waits for them). */
  private track(write: Promise<void>): void {
    const tracked = write.catch((error: unknown) => this.options.log.error({ err: error }, 'webhook delivery could not be recorded')).finally(() => this.writes.delete(tracked));
    this.writes.add(tracked);
  }

  /** One signed POST of the event's payload; never throws. */
  async attempt(row: Pick<Claimed, 'url' | 'secret' | 'previous_secret' | 'previous_secret_expires_at' | 'event_id' | 'payload'>): Promise<AttemptOutcome> {
    const started = Date.now();
    const at = new Date(started).toISOString();
    const finish = (responseStatus: number | null, responseBody: string | null, error: string | null): AttemptOutcome => ({
      at,
      durationMs: Date.now() - started,
      responseStatus,
      responseBody,
      error,
    });
    const signal = AbortSignal.any([AbortSignal.timeout(this.timeoutMs), this.stopAll.signal]);
    try {
      const url = checkUrlShape(row.url, this.options.policy);
      const timestamp = Math.floor(started / 1000);
      const secrets = [row.secret];
      if (row.previous_secret && row.previous_secret_expires_at && row.previous_secret_expires_at > at) secrets.push(row.previous_secret);
      const response = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'formsign-webhooks/1',
          'webhook-id': row.event_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, row.event_id, timestamp, row.payload),
        },
        body: row.payload,
      });
      const body = await readLimited(response.body as AsyncIterable<Buffer> & { destroy(): void });
      const status = response.statusCode;
      if (status >= 300 && status < 400) {
        const location = response.headers.location;
        return finish(status, body, `redirect not followed${location ? ` (Location: ${String(location).slice(0, 200)})` : ''}`);
      }
      return finish(status, body, status >= 200 && status < 300 ? null : `HTTP ${status}`);
    } catch (error) {
      return finish(null, null, describeError(error, signal, this.timeoutMs));
    }
  }

  /** Writes the attempt and what follows from it: success, the next retry, or `failed`; the endpoint's health. */
  /**
   * Outcomes finished in the same turn of the event loop are written together, in one transaction
   * (one commit for many deliveries); should that fail (a delivery whose endpoint was deleted
   * meanwhile), each is written on its own. Sorted by endpoint: every worker updates endpoint rows
   * in the same order (no deadlock between two workers' batches on PostgreSQL).
   */
  private record(row: Claimed, outcome: AttemptOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.outcomes.push({ row, outcome, resolve, reject });
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushing || this.flushScheduled) return;
    this.flushScheduled = true;
    // Outcomes of a few milliseconds share a commit (at most 100 of them, at once when 32 wait).
    const go = () => {
      this.flushScheduled = false;
      this.flush();
    };
    if (this.outcomes.length >= 32) setImmediate(go);
    else setTimeout(go, FLUSH_GATHER_MS);
  }

  private flush(): void {
    const batch = this.outcomes.splice(0, 100).sort((a, b) => (a.row.endpoint_id < b.row.endpoint_id ? -1 : a.row.endpoint_id > b.row.endpoint_id ? 1 : 0));
    if (batch.length === 0) return;
    const { store } = this.options;
    this.flushing = this.bookkeeping((trx) => this.writeBatch(trx, batch))
      .then(
        () => batch.forEach((item) => item.resolve()),
        async () => {
          for (const item of batch) await this.bookkeeping((trx) => this.write(trx, item.row, item.outcome)).then(item.resolve, item.reject);
        },
      )
      .finally(() => {
        this.flushing = null;
        if (this.outcomes.length > 0) this.scheduleFlush();
      });
  }

  /**
   * A transaction of the dispatcher's own bookkeeping (outcomes). On PostgreSQL it commits without
   * waiting for the WAL flush, as the claims do: an outcome lost in a crash of the database server
   * leaves the delivery pending under a lease that runs out, so it is attempted again with the
   * same event id (at least once, as promised); the event itself was written by the change's own
   * transaction, synchronously.
   */
  private bookkeeping<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    const { store } = this.options;
    return store.db.transaction().execute(async (trx) => {
      if (store.dialect === 'postgres') await sql`set local synchronous_commit = off`.execute(trx);
      return fn(trx);
    });
  }

  /**
   * The batch's outcomes in a few statements: every attempt in one insert, the successes (the
   * common case) in one update per number of attempts made, each other outcome on its own
   * (`write`). Statements, not deliveries, are what a commit costs on PostgreSQL (a round trip each).
   */
  private async writeBatch(trx: Transaction<Database>, batch: ReadonlyArray<{ row: Claimed; outcome: AttemptOutcome }>): Promise<void> {
    await trx
      .insertInto('webhook_attempts')
      .values(batch.map(({ row, outcome }) => ({ id: newId(), delivery_id: row.id, at: outcome.at, duration_ms: outcome.durationMs, response_status: outcome.responseStatus, response_body: outcome.responseBody, error: outcome.error })))
      .execute();
    const succeeded = new Map<number, string[]>();
    for (const { row, outcome } of batch) {
      if (!isSuccess(outcome)) continue;
      const attempts = Number(row.scheduled_attempts) + 1;
      succeeded.set(attempts, [...(succeeded.get(attempts) ?? []), row.id]);
    }
    const now = new Date().toISOString();
    const held = new Set<string>();
    for (const [attempts, ids] of succeeded) {
      // Only those whose lease this process still holds (as in `write`).
      const rows = await trx
        .updateTable('webhook_deliveries')
        .set({ status: 'succeeded', scheduled_attempts: attempts, next_attempt_at: null, lease_owner: null, lease_expires_at: null, updated_at: now })
        .where('id', 'in', ids)
        .where('lease_owner', '=', this.owner)
        .returning('id')
        .execute();
      for (const r of rows) held.add(r.id);
    }
    // Endpoint rows in the batch's order (by endpoint): the failures, and the failing streaks
    // known at the claim that a success ends (see `write`).
    for (const { row, outcome } of batch) {
      if (!isSuccess(outcome)) await this.write(trx, row, outcome, false);
      else if (held.has(row.id) && row.failing_since !== null) await trx.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', row.endpoint_id).where('failing_since', 'is not', null).execute();
    }
  }

  private async write(trx: Transaction<Database>, row: Claimed, outcome: AttemptOutcome, insertAttempt = true): Promise<void> {
    const ok = isSuccess(outcome);
    const now = new Date().toISOString();
    const attempts = Number(row.scheduled_attempts) + 1;
    const wait = ok || outcome.error?.startsWith('not sent') ? null : retryDelay(attempts, this.scale, this.random);
    // An attempt made is recorded, also when the lease was lost meanwhile (another worker then
    // decides what follows).
    if (insertAttempt) {
      await trx
        .insertInto('webhook_attempts')
        .values({ id: newId(), delivery_id: row.id, at: outcome.at, duration_ms: outcome.durationMs, response_status: outcome.responseStatus, response_body: outcome.responseBody, error: outcome.error })
        .execute();
    }
    const held = await trx
      .updateTable('webhook_deliveries')
      .set({
        status: ok ? 'succeeded' : wait === null ? 'failed' : 'pending',
        scheduled_attempts: attempts,
        next_attempt_at: wait === null ? null : new Date(Date.now() + wait).toISOString(),
        lease_owner: null,
        lease_expires_at: null,
        updated_at: now,
      })
      .where('id', '=', row.id)
      .where('lease_owner', '=', this.owner)
      .executeTakeFirst();
    if (Number(held.numUpdatedRows) === 0 || outcome.error?.startsWith('not sent')) return;
    if (ok) {
      // Known at the claim: a streak that began after it ends with the next success claimed later.
      if (row.failing_since !== null) await trx.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', row.endpoint_id).where('failing_since', 'is not', null).execute();
      return;
    }
    await trx.updateTable('webhook_endpoints').set({ failing_since: outcome.at }).where('id', '=', row.endpoint_id).where('failing_since', 'is', null).execute();
    // Failing since long enough: disabled, saying why.
    const limit = new Date(Date.parse(outcome.at) - DISABLE_AFTER_MS * this.scale).toISOString();
    const failing = await trx.selectFrom('webhook_endpoints').select('failing_since').where('id', '=', row.endpoint_id).where('enabled', '=', 1).where('failing_since', '<=', limit).executeTakeFirst();
    if (failing?.failing_since) {
      const last = outcome.error ?? `HTTP ${String(outcome.responseStatus)}`;
      await trx
        .updateTable('webhook_endpoints')
        .set({
          enabled: 0,
          disabled_reason: `Disabled automatically at ${now}: every delivery attempt since ${failing.failing_since} failed (5 days without a success). Last error: ${last}. Fix the receiver, then set enabled to true.`,
          updated_at: now,
        })
        .where('id', '=', row.endpoint_id)
        .execute();
      this.options.log.warn({ endpoint: row.endpoint_id, since: failing.failing_since }, 'webhook endpoint disabled after failing for 5 days');
    }
  }

  /** Removes events older than the retention period whose deliveries are all finished (their deliveries and attempts go with them). */
  async prune(): Promise<void> {
    const before = new Date(Date.now() - RETENTION_MS).toISOString();
    await this.options.store.db
      .deleteFrom('webhook_events')
      .where('created_at', '<', before)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'webhook_events.id').where('d.status', '=', 'pending'))))
      .execute();
  }
}

/** Any 2xx answer is a success. */
function isSuccess(outcome: AttemptOutcome): boolean {
  return outcome.responseStatus !== null && outcome.responseStatus >= 200 && outcome.responseStatus < 300;
}

/** Reads at most 64 KiB of a response (then stops reading: the connection is dropped), keeps 1 KiB as text. */
async function readLimited(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string | null> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let read = 0;
  for await (const chunk of body) {
    read += chunk.length;
    if (keptBytes < STORE_LIMIT_BYTES) {
      const part = chunk.subarray(0, STORE_LIMIT_BYTES - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (read >= READ_LIMIT_BYTES) {
      body.destroy();
      break;
    }
  }
  if (keptBytes === 0) return null;
  // Cut at 1 KiB, perhaps inside a character: the replacement character marks it.
  return Buffer.concat(kept).toString('utf8');
}

function describeError(error: unknown, signal: AbortSignal, timeoutMs: number): string {
  if (error instanceof UnsafeTargetError) return `refused: the URL ${error.message}`;
  const err = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err.code === 'EUNSAFE' || err.cause?.code === 'EUNSAFE') return `refused: the URL ${err.cause?.message ?? err.message ?? ''}`;
  if (signal.aborted) return `timed out after ${timeoutMs} ms`;
  const code = err.code ?? err.cause?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection closed by the receiver before it answered';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the host name does not resolve';
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return `timed out after ${timeoutMs} ms`;
    default:
      return `${code ? `${code}: ` : ''}${(err.message ?? 'request failed').slice(0, 300)}`;
  }
}
