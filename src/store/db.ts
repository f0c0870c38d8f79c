import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  sql,
  type DatabaseConnection,
  type Driver,
  type SqliteDatabase,
  type SqliteDialectConfig,
} from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Store {
  db: Kysely<Database>;
  dialect: Dialect;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** `postgres://…`, or `null` for SQLite at `sqlitePath`. */
  databaseUrl: string | null;
  sqlitePath: string;
  /** PostgreSQL pool size. */
  poolSize?: number;
}

export function createStore(options: StoreOptions): Store {
  if (options.databaseUrl) return createPostgresStore(options.databaseUrl, options.poolSize ?? 10);
  return createSqliteStore(options.sqlitePath);
}

function createSqliteStore(file: string): Store {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(database) }) });
  return {
    db,
    dialect: 'sqlite',
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
    },
  };
}

/**
 * Transactions here all write, and take the write lock when they begin (`BEGIN IMMEDIATE`): a
 * deferred transaction that reads and then wants to write fails at once with SQLITE_BUSY, busy
 * timeout or not, when another process (`formsign keys create` beside the server) wrote meanwhile.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.settings);
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
    close() {
      cache.clear();
      database.close();
    },
  };
}

function createPostgresStore(connectionString: string, max: number): Store {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000 });
  // An idle client that loses its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
    },
  };
}

