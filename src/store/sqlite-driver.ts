import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  SelectQueryNode,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';

/**
 * How long one attempt may wait for SQLite's lock *synchronously* (`busy_timeout`): the driver is
 * synchronous, so this is time the whole event loop stands still, once per attempt of every
 * waiting request (twenty waiting writes polling ten times a second at 5 ms each would hold the
 * loop all of the time). None: all waiting is done between attempts, asynchronously.
 */
export const SQLITE_SYNC_BUSY_MS = 0;

/** The write lock stayed with another process (`formsign keys create`, a backup) for the whole wait. */
export class DatabaseBusy extends Error {
  readonly code = 'SQLITE_BUSY';
  constructor(waitedMs: number) {
    super(`the SQLite database stayed locked by another connection for ${waitedMs} ms`);
    this.name = 'DatabaseBusy';
  }
}

export interface SqliteDatabase {
  prepare(sql: string): SQLite.Statement;
  /** better-sqlite3's `inTransaction`: whether a transaction is open on the connection. */
  readonly inTransaction: boolean;
  close(): void;
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_RECOVERY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === 'SQLITE_LOCKED';
}

/** FIFO lock on the single connection (Kysely's SQLite driver has one of its own, not reachable). */
class Mutex {
  private queue: Array<() => void> = [];
  private held = false;

  async lock(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return;
    }
    await new Promise<void>((resolve) => this.queue.push(resolve));
  }

  unlock(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.held = false;
  }
}

/**
 * Kysely's SQLite driver, changed in two ways:
 *
 * - Transactions here all write, and take the write lock when they begin (`BEGIN IMMEDIATE`): a
 *   deferred transaction that reads and then wants to write fails at once with SQLITE_BUSY when
 *   another process wrote meanwhile.
 * - When another process holds the write lock, the wait happens off the event loop: an attempt
 *   does not wait (`SQLITE_SYNC_BUSY_MS`), the connection is handed to whoever else needs it
 *   (reads go on: WAL readers do not need the lock), and the attempt is repeated after a growing
 *   pause, for at most `maxWaitMs` in all; then `DatabaseBusy` (503 `unavailable`). Repeating is
 *   safe because only two things are ever repeated, and neither has done anything when it is
 *   refused: `BEGIN IMMEDIATE` (the transaction's work has not started) and a single statement
 *   outside any transaction (a refused statement wrote nothing).
 */
export class SqliteStoreDriver implements Driver {
  private readonly mutex = new Mutex();
  private readonly connection: SqliteConnection;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly maxWaitMs: number,
  ) {
    this.connection = new SqliteConnection(database, (attempt) => this.retry(attempt));
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.mutex.lock();
    return this.connection;
  }

  async beginTransaction(): Promise<void> {
    await this.retry(() => this.database.prepare('begin immediate').run());
  }

  async commitTransaction(): Promise<void> {
    this.database.prepare('commit').run();
  }

  async rollbackTransaction(): Promise<void> {
    // A failed statement may have ended the transaction already (SQLite rolls back on some errors).
    if (this.database.inTransaction) this.database.prepare('rollback').run();
  }

  async releaseConnection(): Promise<void> {
    this.mutex.unlock();
  }

  async destroy(): Promise<void> {
    this.database.close();
  }

  /**
   * Runs `attempt` (with the connection held) until it is not refused for a lock, giving the
   * connection up while it waits. Its caller holds the connection before and after.
   */
  private async retry<T>(attempt: () => T): Promise<T> {
    const started = Date.now();
    for (let round = 0; ; round++) {
      try {
        return attempt();
      } catch (error) {
        if (!isBusy(error)) throw error;
        const waited = Date.now() - started;
        if (waited >= this.maxWaitMs) throw new DatabaseBusy(waited);
        this.mutex.unlock();
        try {
          await new Promise((r) => setTimeout(r, Math.min(100, 5 * 2 ** round, this.maxWaitMs - waited)));
        } finally {
          await this.mutex.lock();
        }
      }
    }
  }
}

class SqliteConnection implements DatabaseConnection {
  constructor(
    private readonly database: SqliteDatabase,
    private readonly retry: <T>(attempt: () => T) => Promise<T>,
  ) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return Promise.resolve(this.run<R>(compiledQuery));
    } catch (error) {
      // Inside a transaction the lock is held since BEGIN IMMEDIATE; outside, a statement that
      // was refused for the lock did nothing and may be tried again.
      if (!isBusy(error) || this.database.inTransaction) return Promise.reject(error);
      return this.retry(() => this.run<R>(compiledQuery));
    }
  }

  private run<R>(compiledQuery: CompiledQuery): QueryResult<R> {
    const { sql, parameters } = compiledQuery;
    const statement = this.database.prepare(sql);
    if (statement.reader) return { rows: statement.all(parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return {
      numAffectedRows: changes !== undefined && changes !== null ? BigInt(changes) : undefined,
      insertId: lastInsertRowid !== undefined && lastInsertRowid !== null ? BigInt(lastInsertRowid) : undefined,
      rows: [],
    };
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const { sql, parameters, query } = compiledQuery;
    if (!SelectQueryNode.is(query)) throw new Error('the SQLite driver streams select queries only');
    for (const row of this.database.prepare(sql).iterate(parameters)) yield { rows: [row as R] };
  }
}
