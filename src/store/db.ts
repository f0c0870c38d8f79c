import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type Driver, type SqliteDialectConfig } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { SQLITE_SYNC_BUSY_MS, SqliteStoreDriver, type SqliteDatabase } from './sqlite-driver.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Store {
  db: Kysely<Database>;
  dialect: Dialect;
  /** PostgreSQL's pool behind `db` (null on SQLite), for what Kysely cannot say: the blob store's binary `COPY`. */
  pgPool: pg.Pool | null;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /** Lets a cache of key rows hear of changes any process makes (see `ChangeWatch`). */
  watchKeyChanges(invalidate: () => void): ChangeWatch;
  /** Tells this process's watchers that this process changed a key (other processes hear by themselves). */
  keysChanged(): void;
  close(): Promise<void>;
}

/**
 * How a process learns that another one changed API keys (a revocation by `formsign keys
 * revoke`, by another server): SQLite's `data_version`, which moves when another connection
 * commits to the file (read at most once per turn of the event loop, a few microseconds, no
 * I/O); on PostgreSQL, `LISTEN` on the channel `revokeKey` notifies, on a connection of its own.
 */
export interface ChangeWatch {
  /**
   * Called before remembered keys are trusted. Calls `invalidate` first when something changed
   * since the last call; answers `false` while changes cannot be heard (the PostgreSQL listener
   * is not connected): the database must then be asked.
   */
  current(): boolean;
  close(): Promise<void>;
}

/** The PostgreSQL channel on which key revocations are announced (payload: the key's id). */
export const KEY_CHANNEL = 'formsign_keys';

export interface StoreOptions {
  /** `postgres://…`, or `null` for SQLite at `sqlitePath`. */
  databaseUrl: string | null;
  sqlitePath: string;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /** How long a write waits (off the event loop) for SQLite's lock held by another process (default 5 s). */
  sqliteBusyWaitMs?: number;
}

export const DEFAULT_SQLITE_BUSY_WAIT_MS = 5000;

export function createStore(options: StoreOptions): Store {
  if (options.databaseUrl) return createPostgresStore(options.databaseUrl, options.poolSize ?? 10);
  return createSqliteStore(options.sqlitePath, options.sqliteBusyWaitMs ?? DEFAULT_SQLITE_BUSY_WAIT_MS);
}

function createSqliteStore(file: string, busyWaitMs: number): Store {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new SQLite(file);
  // No waiting for a lock on the event loop: a wait is done between attempts, asynchronously
  // (see SqliteStoreDriver).
  database.pragma(`busy_timeout = ${SQLITE_SYNC_BUSY_MS}`);
  database.pragma('journal_mode = WAL');
  database.pragma('foreign_keys = ON');
  const cached = withStatementCache(database);
  const db = new Kysely<Database>({ dialect: new StoreSqliteDialect({ database: cached }, new SqliteStoreDriver(cached, busyWaitMs)) });
  const dataVersion = database.prepare('pragma data_version').pluck();
  const local = new LocalWatchers();
  return {
    db,
    dialect: 'sqlite',
    async ping() {
      await sql`select 1`.execute(db);
    },
    watchKeyChanges(invalidate) {
      // Moves on every commit of another connection (any table): then everything remembered is
      // checked again. This connection's own commits do not move it: revokeKey says so (`local`).
      // Read once per turn of the event loop: every request handled in a turn arrived before the
      // turn began, so a change committed before it arrived is seen all the same, and a burst of
      // requests pays for one read.
      let seen = dataVersion.get();
      let checked = false;
      const unsubscribe = local.add(invalidate);
      return {
        current() {
          if (checked) return true;
          checked = true;
          setImmediate(() => (checked = false));
          const now = dataVersion.get();
          if (now !== seen) {
            seen = now;
            invalidate();
          }
          return true;
        },
        async close() {
          unsubscribe();
        },
      };
    },
    keysChanged: () => local.notify(),
    pgPool: null,
    async close() {
      await db.destroy();
    },
  };
}

/** Kysely's SQLite dialect (compiler, adapter, introspector) on the driver of this service. */
class StoreSqliteDialect extends SqliteDialect {
  constructor(
    settings: SqliteDialectConfig,
    private readonly driver: SqliteStoreDriver,
  ) {
    super(settings);
  }

  override createDriver(): Driver {
    return this.driver;
  }
}

/**
 * Kysely's SQLite driver prepares every query anew; preparing costs more than running a
 * single-row read. Queries built by the repositories come back as the same SQL text, so their
 * prepared statements are kept (a bounded set: it is emptied when it grows past its size, which
 * only queries with variable-length `in (…)` lists could cause). better-sqlite3 re-prepares a
 * cached statement by itself after a schema change.
 */
function withStatementCache(database: SQLite.Database, size = 500): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    prepare(text: string) {
      let statement = cache.get(text);
      if (!statement) {
        if (cache.size >= size) cache.clear();
        statement = database.prepare(text);
        cache.set(text, statement);
      }
      return statement;
    },
    get inTransaction() {
      return database.inTransaction;
    },
    close() {
      cache.clear();
      database.close();
    },
  };
}

function createPostgresStore(connectionString: string, max: number): Store {
  // TCP keep-alive on every connection: a database host that vanishes without closing (a network
  // partition, a machine powered off) while a query waits for its answer is noticed after about
  // 20 s (10 s of silence, then libuv's 10 probes 1 s apart), and the query fails instead of
  // waiting for ever. (While bytes sent are still unacknowledged, the kernel's retransmission
  // limit decides instead: about 15 minutes by default.)
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
  // An idle client that loses its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  // Nor one that is lent out: node-postgres emits `error` on a client whose connection ends, and
  // the pool listens only while the client is idle. Its queries fail by themselves (the caller
  // sees those), and the pool drops the client when it is released.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const local = new LocalWatchers();
  return {
    db,
    dialect: 'postgres',
    async ping() {
      await sql`select 1`.execute(db);
    },
    watchKeyChanges(invalidate) {
      const listener = listenForKeyChanges(connectionString, invalidate);
      const unsubscribe = local.add(invalidate);
      return {
        current: () => listener.current(),
        async close() {
          unsubscribe();
          await listener.close();
        },
      };
    },
    // The notification reaches this process's listener too, but only after the revocation's
    // answer: this process's own caches are told before.
    keysChanged: () => local.notify(),
    pgPool: pool,
    async close() {
      await db.destroy();
    },
  };
}

/** The key caches of this process, told directly of the changes this process makes. */
class LocalWatchers {
  private readonly watchers = new Set<() => void>();

  add(invalidate: () => void): () => void {
    const entry = () => invalidate();
    this.watchers.add(entry);
    return () => this.watchers.delete(entry);
  }

  notify(): void {
    for (const invalidate of this.watchers) invalidate();
  }
}

/**
 * `LISTEN` on its own connection. Until it listens, and again whenever the connection is lost
 * (until it listens again: every 1 s), remembered keys are not trusted, since a notification may
 * have been missed; each (re)connection starts with an invalidation.
 */
function listenForKeyChanges(connectionString: string, invalidate: () => void): ChangeWatch {
  let listening = false;
  let closed = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;
  const connect = async () => {
    retry = null;
    const next = new pg.Client({ connectionString, connectionTimeoutMillis: 5000 });
    client = next;
    const lost = () => {
      listening = false;
      next.removeAllListeners('notification');
      next.end().catch(() => {});
      if (!closed && client === next && !retry) retry = setTimeout(() => void connect(), 1000);
    };
    next.on('error', lost);
    next.on('end', lost);
    next.on('notification', () => invalidate());
    try {
      await next.connect();
      await next.query(`listen ${KEY_CHANNEL}`);
      if (closed) return void next.end().catch(() => {});
      invalidate();
      listening = true;
    } catch {
      lost();
    }
  };
  void connect();
  return {
    current: () => listening,
    async close() {
      closed = true;
      listening = false;
      if (retry) clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
